import Foundation
import PatchCore
import PatchRegistry

struct AppsAPNsCommand: Command {
    static let spec = CommandSpec("apps apns", summary: "Set the APNs key that wakes an app's devices when a patch changes (token-based auth, a .p8 key)",
                                  positionals: ["NAME"],
                                  options: [.value("--team-id", "T", "the Apple developer team ID (10 characters)").required,
                                            .value("--key-id", "K", "the key ID of the .p8 key (10 characters)").required,
                                            .value("--key", "FILE", "the AuthKey_K.p8 Apple issued; copied into the key directory, mode 0600").required,
                                            .value("--topic", "BUNDLE_ID", "the app's bundle ID").required,
                                            .flag("--json", "print JSON: app, teamId, keyId, topic, setAt, setBy")] + Context.globalOptions)

    static func run(_ arguments: Arguments) throws(CLIError) {
        let name: AppName
        do { name = try AppName(arguments.positionals[0]) } catch { throw .usage(error.message) }
        let context = try Context(arguments: arguments)
        let registry = try context.openRegistry()
        let pem = try Output.readFile(arguments.value("--key") ?? "", what: "APNs key", limit: 16 * 1024)
        let config: APNsConfig
        do {
            config = try registry.setAPNs(app: name, teamID: arguments.value("--team-id") ?? "", keyID: arguments.value("--key-id") ?? "",
                                          topic: arguments.value("--topic") ?? "", keyPEM: pem, actor: context.actor)
        } catch { throw error.cliError }
        if arguments.flag("--json") { Output.json(config.json); return }
        Output.line("\(name): APNs key \(config.keyID) of team \(config.teamID) for \(config.topic)")
        Output.line("key kept at \(registry.keys.apnsKeyURL(app: name, keyID: config.keyID).path) (mode 0600); the file given can be removed")
    }
}
