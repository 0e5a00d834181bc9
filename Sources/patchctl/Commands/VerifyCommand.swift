import Foundation
import HotpatchCLI
import PatchCheck
import HTTPClientKit
import PatchCore

struct VerifyCommand: Command {
    static let spec = CommandSpec("verify", summary: "Verify a repository from a trusted root: root chain, signatures, expiry, every active patch",
                                  options: [.value("--repo", "DIR", "an exported repository (patchctl export): its DIR, or the directory holding metadata/ and targets/"),
                                            .value("--server", "URL", "a running patchd (with --app), read as a device reads it: same size caps, no redirects"),
                                            .value("--root", "FILE", "the trusted root, e.g. the 1.root.json an app embeds").required,
                                            .value("--app", "NAME", "the app (required with --server and with --key; default: hotpatch.json's)"),
                                            .value("--key", "FILE", "content key file: also decrypt and check plaintext digests"),
                                            .flag("--check", "also run the script check (as publish does) on every verified patch, here; an error fails the verification"),
                                            .value("--manifest", "FILE", "with --check: the native manifest to check the patches of its appVersion against"),
                                            .flag("--json", "print JSON")])

    static func run(_ arguments: Arguments) throws(CLIError) {
        let repo = arguments.value("--repo")
        let server = arguments.value("--server")
        guard (repo == nil) != (server == nil) else { throw .usage("give exactly one of --repo DIR or --server URL") }
        let rootBytes = try Output.readFile(try arguments.required("--root"), what: "trusted root", limit: 512_000)
        let projectApp = try ProjectFile.current.get()?.app
        let app = try arguments.optionalAppName() ?? projectApp
        var contentKey: [UInt8]?
        if let keyPath = arguments.value("--key") {
            guard app != nil else { throw .usage("--key needs --app (the app name is part of the encryption's associated data)") }
            do { contentKey = try BundleCipher.parseKeyFile(try Output.readFile(keyPath, what: "content key", limit: 4096)) } catch let error as CryptoError {
                throw .failed("\(keyPath): \(error)")
            } catch let error as CLIError { throw error } catch { throw .failed("\(error)") }
        }
        let source: any RepositoryFetcher
        if let server {
            guard let app else { throw .usage("--server needs --app") }
            // The device's HTTP fetcher: its caps, no redirects, an idle timeout per request.
            source = HTTPRepository(server: try Remote.url(server), app: app, requestTimeout: 30, transferTimeout: 120)
        } else {
            source = DirectorySource(directory: try ExportedRepository.appRoot(repo!, app: app))
        }
        // patchctl runs on the main thread, never one of Swift concurrency's: it may block.
        let key = contentKey
        let checking = arguments.flag("--check")
        let manifest = try ScriptCheckOption.manifest(arguments, checking: checking)
        let outcome = blockingWait { () async -> Result<VerificationReport, VerificationError> in
            do throws(VerificationError) {
                return .success(try await RepositoryVerifier.verify(fetcher: source, trustedRoot: rootBytes, app: app?.rawValue, contentKey: key,
                                                                    keepScripts: checking))
            } catch { return .failure(error) }
        }
        let report: VerificationReport
        do { report = try outcome.get() } catch {
            if arguments.flag("--json") { Output.json(["ok": false, "error": .string(error.description)]) }
            if case .rejected = error, let server, let app, appIsUnknown(app, at: try Remote.url(server)) {
                throw .failed("unknown app \"\(app)\" at \(server.debugSanitized): it serves no 1.root.json for it")
            }
            switch error {
            case .rejected: throw .verificationFailed(error.description)
            case .couldNotRun: throw .failed(error.description)
            }
        }
        let checks = checking ? try ScriptCheckOption.check(report, manifest: manifest) : nil
        VerifyOutput.print(report, checks: checks, json: arguments.flag("--json"))
        if !report.ok {
            throw .verificationFailed("verification failed: \(report.targets.filter { !$0.ok }.count) of \(report.targets.count) patches do not verify")
        }
        if let checks {
            let failed = checks.filter { $0.report?.outcome == .failed }.count, unchecked = checks.filter { $0.report == nil }.count
            if failed > 0 { throw .verificationFailed("the script check found errors in \(failed) of \(checks.count) patches") }
            if unchecked > 0 { throw .failed("\(unchecked) encrypted patch(es) could not be checked: give --key") }
        }
    }

    /// An app the server does not have is a mistake in the command, not a repository that
    /// fails to verify: patchd serves `1.root.json` for every app it has, and answers 404
    /// `not_found` "unknown app" for one it has not. (A server that says so falsely still
    /// fails the check, with exit 2 instead of 1.)
    private static func appIsUnknown(_ app: AppName, at server: URL) -> Bool {
        guard let response = try? Remote(base: server, token: nil).send(.getMetadata, ["app": app.rawValue, "file": "1.root.json"], timeout: 10),
            response.status == 404, let body = try? JSONParser.parse(response.body) else { return false }
        return body["error"]?["code"]?.stringValue == "not_found" && body["error"]?["message"]?.stringValue?.hasPrefix("unknown app") == true
    }
}

/// Shared by every way of verifying (a directory now, a server later).
enum VerifyOutput {
    static func print(_ report: VerificationReport, checks: [ScriptCheckOption.Checked]? = nil, json: Bool) {
        if json {
            let object: [String: JSON] = [
                "ok": .bool(report.ok), "rootVersion": .int(report.rootVersion), "timestampVersion": .int(report.timestampVersion),
                "snapshotVersion": .int(report.snapshotVersion), "targetsVersion": .int(report.targetsVersion),
                "timestampExpires": .string(TUFTime.format(report.timestampExpires)),
                "targets": .array(report.targets.map { t in
                    var entry: [String: JSON] = ["path": .string(t.path), "length": .int(Int64(t.length)), "ok": .bool(t.ok),
                                                 "encrypted": .bool(t.encrypted), "plaintextChecked": .bool(t.plaintextChecked)]
                    if let patch = t.patch { entry["patch"] = .int(Int64(patch)) }
                    if let rollout = t.rollout { entry["rollout"] = .int(Int64(rollout)) }
                    if let problem = t.problem { entry["problem"] = .string(problem) }
                    if t.role != Role.targets.rawValue { entry["role"] = .string(t.role) }
                    if let checked = checks?.first(where: { $0.path == t.path }) { entry["check"] = checked.report?.json ?? .null }
                    return .object(entry)
                }),
            ]
            Output.json(.object(object))
            return
        }
        Output.line("root v\(report.rootVersion), timestamp v\(report.timestampVersion) (expires \(TUFTime.format(report.timestampExpires))), snapshot v\(report.snapshotVersion), targets v\(report.targetsVersion)")
        for t in report.targets {
            let note = t.encrypted && !t.plaintextChecked ? " (encrypted; plaintext not checked without --key)" : ""
            let role = t.role == Role.targets.rawValue ? "" : " (delegated role \(t.role.debugSanitized))"
            Output.line(t.ok ? "ok    \(t.path) \(t.length) bytes, rollout \(t.rollout ?? 0)%\(role)\(note)" : "FAIL  \(t.path)\(role): \(t.problem!)")
        }
        Output.line(report.ok ? "verified \(report.targets.count) active patch(es)" : "verification FAILED")
        for checked in checks ?? [] {
            guard let result = checked.report else { Output.line("check \(checked.path): not checked (encrypted; give --key)"); continue }
            Output.line("check \(checked.path): \(result.summary)\(result.nativeChecked ? " (against the manifest)" : "")")
            for line in result.findings.filter({ $0.severity != .note }).map(\.line) { Output.line("  \(line)") }
        }
    }
}

/// Finds the app's repository in what `--repo` names: a directory holding `metadata/` (the
/// flat layout, or an app's directory of the server layout), or an export's DIR holding
/// `v1/apps/{app}/` (with `--app`, or the only app there).
enum ExportedRepository {
    static func appRoot(_ path: String, app: AppName?) throws(CLIError) -> URL {
        let manager = FileManager.default
        var isDirectory: ObjCBool = false
        guard manager.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw .failed("could not verify: \(path.pathSanitized) is not a directory")
        }
        let directory = URL(fileURLWithPath: path, isDirectory: true)
        if manager.fileExists(atPath: directory.appendingPathComponent("metadata").path) { return directory }
        let apps = directory.appendingPathComponent("v1/apps", isDirectory: true)
        guard let names = try? manager.contentsOfDirectory(atPath: apps.path), !names.isEmpty else { return directory }
        if let app {
            guard names.contains(app.rawValue) else {
                throw .failed("unknown app \"\(app)\": \(path.pathSanitized) holds exports of \(names.sorted().joined(separator: ", "))")
            }
            return apps.appendingPathComponent(app.rawValue, isDirectory: true)
        }
        guard names.count == 1 else {
            throw .usage("\(path.pathSanitized) holds exports of several apps (\(names.sorted().joined(separator: ", "))); give --app")
        }
        return apps.appendingPathComponent(names[0], isDirectory: true)
    }
}

/// `verify --check [--manifest FILE]`: the script check run here on what was verified.
enum ScriptCheckOption {
    struct Checked {
        let path: String
        /// Nil: an encrypted patch verified without its content key.
        let report: CheckReport?
    }

    static func manifest(_ arguments: Arguments, checking: Bool) throws(CLIError) -> NativeManifest? {
        guard let path = arguments.value("--manifest") else { return nil }
        guard checking else { throw .usage("--manifest goes with --check") }
        let bytes = try Output.readFile(path, what: "manifest", limit: NativeManifest.maxBytes)
        let manifest: NativeManifest
        do { manifest = try NativeManifest(bytes: bytes) } catch { throw .failed("\(path.pathSanitized): \(error)") }
        guard manifest.appVersion != nil else { throw .usage("\(path.pathSanitized) names no appVersion: verify --check applies a manifest to the patches of its version") }
        return manifest
    }

    static func check(_ report: VerificationReport, manifest: NativeManifest?) throws(CLIError) -> [Checked] {
        let checker = ScriptChecker()
        var checked: [Checked] = []
        for target in report.targets where target.ok {
            guard let script = target.script else { checked.append(Checked(path: target.path, report: nil)); continue }
            let applies = manifest.flatMap { $0.appVersion == target.appVersion ? $0 : nil }
            do { checked.append(Checked(path: target.path, report: try checker.check(script, manifest: applies))) } catch { throw .failed(error.description) }
        }
        return checked
    }
}
