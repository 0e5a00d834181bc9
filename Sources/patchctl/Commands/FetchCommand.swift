import Foundation
import HotpatchCLI
import PatchClient
import PatchCore

/// Runs the client library once, as an app would: what a developer uses to try the client
/// and what tests drive.
struct FetchCommand: Command {
    static let spec = CommandSpec("fetch", summary: "Run the client library once: update, verify and decrypt the patch for one device into a cache",
                                  options: [.value("--server", "URL", "the patchd server").required,
                                            .value("--app", "NAME", "the app (default: hotpatch.json's)"),
                                            .value("--app-version", "V", "the app version of this device").required,
                                            .value("--device-id", "ID", "the device ID (picks the rollout bucket)").required,
                                            .value("--channel", "NAME", "the channel this device follows (default production)"),
                                            .value("--os-version", "V", "the OS version this device runs, for patches limited to an OS range"),
                                            .value("--root", "FILE", "the trusted root the app embeds (1.root.json)").required,
                                            .value("--key", "FILE", "content key file, for encrypted apps"),
                                            .value("--cache", "DIR", "the client's cache directory").required,
                                            .value("--min-interval", "SECONDS", "local minimum interval between checks (default 3600)"),
                                            .value("--timeout", "SECONDS", "per-request timeout (default 20)"),
                                            .flag("--force", "check even if the last check is younger than the interval"),
                                            .flag("--json", "print JSON")])

    static func run(_ arguments: Arguments) throws(CLIError) {
        let server = try Remote.url(try arguments.required("--server"))
        let app = try AppDefault.resolve(arguments)
        let version = try arguments.appVersion()
        let device = try arguments.required("--device-id")
        let root = try Output.readFile(try arguments.required("--root"), what: "trusted root", limit: 512_000)
        var configuration = ClientConfiguration(server: server, app: app, appVersion: version, deviceID: device, trustedRoot: Data(root),
                                                cacheDirectory: URL(fileURLWithPath: try arguments.required("--cache"), isDirectory: true))
        if let keyPath = arguments.value("--key") {
            do { configuration.contentKey = try ClientConfiguration.contentKey(hexFile: URL(fileURLWithPath: keyPath)) } catch {
                throw .failed(error.description)
            }
        }
        if let channel = try arguments.channel() { configuration.channel = channel }
        configuration.osVersion = arguments.value("--os-version")
        if let interval = try arguments.int("--min-interval", in: 0...(86_400 * 30)) { configuration.minimumInterval = TimeInterval(interval) }
        if let timeout = try arguments.int("--timeout", in: 1...600) { configuration.requestTimeout = TimeInterval(timeout) }

        let result = PatchClient(configuration: configuration).syncBlocking(force: arguments.flag("--force"))
        print(result, json: arguments.flag("--json"))
        if case .failed(let error) = result {
            if case .verification = error { throw .verificationFailed(error.description) }
            throw .failed(error.description)
        }
    }

    private static func print(_ outcome: SyncOutcome, json: Bool) {
        var fields: [String: JSON] = [:]
        let text: String
        switch outcome {
        case .updated(let patch):
            fields = ["outcome": "updated", "patch": .int(Int64(patch.number)), "path": .string(patch.path.path), "sha256": .string(patch.sha256)]
            text = "updated: patch \(patch.number) → \(patch.path.path) (sha256 \(patch.sha256))"
        case .unchanged(let patch?):
            fields = ["outcome": "unchanged", "patch": .int(Int64(patch.number)), "path": .string(patch.path.path), "sha256": .string(patch.sha256)]
            text = "unchanged: patch \(patch.number) at \(patch.path.path)"
        case .unchanged(nil):
            fields = ["outcome": "unchanged"]
            text = "unchanged: no patch for this device"
        case .removed:
            fields = ["outcome": "removed"]
            text = "removed: no active patch for this version any more; the cached script was deleted"
        case .throttled(let until):
            fields = ["outcome": "throttled", "until": .string(TUFTime.format(until))]
            text = "throttled: not checking before \(TUFTime.format(until))"
        case .failed(let error):
            fields = ["outcome": "failed", "error": .string(error.description)]
            text = "failed: \(error)"
        }
        if json { Output.json(.object(fields)) } else { Output.line(text) }
    }
}
