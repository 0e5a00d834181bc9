import Foundation
import HotpatchCLI
import PatchCore
import PatchSigning
import PatchPush
import PatchRegistry

struct AppsAPNsCommand: Command {
    static let spec = CommandSpec("apps apns", summary: "Show, set or test the APNs key that wakes an app's devices when a patch changes (token-based auth, a .p8 key)",
                                  positionals: ["NAME"],
                                  options: [.value("--team-id", "T", "the Apple developer team ID (10 characters); with --key-id, --key and --topic, sets the key"),
                                            .value("--key-id", "K", "the key ID of the .p8 key (10 characters)"),
                                            .value("--key", "FILE", "the AuthKey_K.p8 Apple issued; copied into the key directory, mode 0600"),
                                            .value("--topic", "BUNDLE_ID", "the app's bundle ID"),
                                            .value("--test", "TOKEN", "send one background push to this device token and print APNs' answer (exit 2 unless 200)"),
                                            .flag("--sandbox", "with --test: the token is a development build's (APNs' sandbox)"),
                                            .flag("--json", "print JSON (without options: app, teamId, keyId, topic, setAt, setBy, keyFile, keyFilePresent)")]
                                      + Context.globalOptions)

    static let setting = ["--team-id", "--key-id", "--key", "--topic"]

    static func run(_ arguments: Arguments) throws(CLIError) {
        let name: AppName
        do { name = try AppName(arguments.positionals[0]) } catch { throw .usage(error.message) }
        let given = setting.filter { arguments.value($0) != nil }
        if !given.isEmpty, given.count < setting.count {
            throw .usage("setting the APNs key needs all of \(setting.joined(separator: ", ")); missing \(setting.filter { !given.contains($0) }.joined(separator: ", "))")
        }
        if arguments.flag("--sandbox"), arguments.value("--test") == nil { throw .usage("--sandbox goes with --test TOKEN") }
        if !given.isEmpty, arguments.value("--test") != nil { throw .usage("--test sends with the key already set: set the key first, then test") }
        let context = try Context(arguments: arguments)
        let registry = try context.openRegistry()
        if let token = arguments.value("--test") {
            try test(registry: registry, app: name, token: token, environment: arguments.flag("--sandbox") ? .sandbox : .production, json: arguments.flag("--json"))
        } else if given.isEmpty {
            try show(registry: registry, app: name, json: arguments.flag("--json"))
        } else {
            try set(registry: registry, app: name, arguments: arguments, actor: context.actor)
        }
    }

    static func set(registry: Registry, app name: AppName, arguments: Arguments, actor: Actor) throws(CLIError) {
        let pem = try Output.readFile(arguments.value("--key") ?? "", what: "APNs key", limit: 16 * 1024)
        let config: APNsConfig
        do {
            config = try registry.setAPNs(app: name, teamID: arguments.value("--team-id") ?? "", keyID: arguments.value("--key-id") ?? "",
                                          topic: arguments.value("--topic") ?? "", keyPEM: pem, actor: actor)
        } catch { throw error.cliError }
        if arguments.flag("--json") { Output.json(config.json); return }
        Output.line("\(name): APNs key \(config.keyID) of team \(config.teamID) for \(config.topic)")
        Output.line("key kept at \(registry.keys.apnsKeyURL(app: name, keyID: config.keyID).path) (mode 0600); the file given can be removed")
    }

    /// The record and whether its key file is there: never a byte of the key.
    static func show(registry: Registry, app name: AppName, json: Bool) throws(CLIError) {
        let config: APNsConfig?
        do { config = try registry.apnsConfig(app: name) } catch { throw error.cliError }
        guard let config else {
            throw .failed("app \"\(name)\" has no APNs key: set one with `patchctl apps apns \(name) --team-id T --key-id K --key AuthKey.p8 --topic BUNDLE_ID`")
        }
        let file = registry.keys.apnsKeyURL(app: name, keyID: config.keyID).path
        let present = FileManager.default.fileExists(atPath: file)
        if json {
            var object = config.json.objectValue ?? [:]
            object["keyFile"] = .string(file)
            object["keyFilePresent"] = .bool(present)
            Output.json(.object(object))
            return
        }
        Output.line("\(name): APNs key \(config.keyID) of team \(config.teamID) for \(config.topic)")
        Output.line("set by \(config.setBy) at \(config.setAt)")
        Output.line("key file \(file): \(present ? "present" : "MISSING (pushes fail until the key is set again)")")
    }

    /// One push, no retry: what APNs says about this key, topic and token together.
    static func test(registry: Registry, app name: AppName, token raw: String, environment: PushEnvironment, json: Bool) throws(CLIError) {
        let token: String
        do { token = try Registry.pushToken(raw) } catch { throw .usage(error.description) }
        let answer: APNsAnswer
        do throws(PushError) {
            let endpoint = try APNsEndpoint.current()
            let identity: (config: APNsConfig, key: ECDSAPrivateKey)
            let timestamp: Int64
            do {
                identity = try registry.apnsKey(app: name)
                timestamp = try registry.latestMetadata(app: name, role: .timestamp).version
            } catch { throw PushError.store(error) }
            let sender = PushSender(endpoint: endpoint, token: APNsToken(config: identity.config, key: identity.key), topic: identity.config.topic)
            let announcement = PushAnnouncement(app: name, appVersion: nil, channel: nil, timestampVersion: timestamp, expiration: Date().addingTimeInterval(3600))
            answer = try sender.probe(announcement, token: token, environment: environment)
        } catch { throw .failed("push test: \(error.description)") }
        let host = (try? APNsEndpoint.current().url(for: environment).absoluteString) ?? ""
        if json {
            Output.json(["status": .int(Int64(answer.status)), "reason": answer.reason.map(JSON.string) ?? .null,
                         "apnsId": answer.apnsID.map(JSON.string) ?? .null, "environment": .string(environment.rawValue),
                         "error": answer.unanswered.map(JSON.string) ?? .null])
        } else if answer.status == 0 {
            Output.line("no answer from \(host): \(answer.unanswered ?? "unknown error")")
        } else {
            Output.line("APNs (\(environment.rawValue), \(host)): status \(answer.status)\(answer.reason.map { ", reason \($0)" } ?? ""), apns-id \(answer.apnsID ?? "none")")
        }
        guard answer.status == 200 else {
            throw .failed("push test: not delivered (\(answer.failure))" + (APNsAnswer.hint(answer.failure).map { ": \($0)" } ?? ""))
        }
    }
}
