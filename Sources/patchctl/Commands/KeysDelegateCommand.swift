import Foundation
import HotpatchCLI
import PatchCore
import PatchRegistry
import PatchSigning

struct KeysDelegateCommand: Command {
    static let spec = CommandSpec("keys delegate", summary: "Delegate a channel's targets to a role with its own key; the top-level targets key then signs only the delegation",
                                  options: [.value("--app", "NAME", "the app (default: hotpatch.json's, or the registry's only app)"),
                                            .value("--channel", "NAME", "the channel the role signs (not production): its paths CHANNEL/*/*/main.js and main.conditional.js").required,
                                            .value("--name", "ROLE", "the role's name, 1-32 characters of a-z, 0-9 and - (e.g. qa)").required,
                                            .value("--key", "FILE", "the role's public key, a TUF key object {\"keytype\",\"scheme\",\"keyval\"} (default: a new Ed25519 key the registry keeps in KEYS/APP/delegated.ROLE.KEYID.pem)"),
                                            .value("--threshold", "N", "how many of the role's keys must sign (default 1)"),
                                            SigningKeys.option,
                                            .flag("--json", "print JSON")] + Context.globalOptions)

    static func run(_ arguments: Arguments) throws(CLIError) {
        guard let channel = try arguments.channel("--channel") else { throw .usage("--channel is required") }
        let role = try arguments.required("--name")
        let threshold = try arguments.int("--threshold", in: 1...1_000) ?? 1
        var given = try SigningKeys.read(arguments)
        let context = try Context(arguments: arguments)
        let registry = try context.openRegistry()
        let name = try LocalBackend(registry: registry, actor: context.actor, place: context.place).app(arguments)
        var publicKeys: [TUFKey] = []
        var generated: URL?
        if let path = arguments.value("--key") {
            let bytes = try Output.readFile(path, what: "the role's public key", limit: 64 << 10)
            do { publicKeys = [try TUFKey(json: try JSONParser.parse(bytes), role: role)] } catch {
                throw .failed("\(path.pathSanitized) is not a TUF public key object: \(error)")
            }
        } else {
            do {
                let key = try SigningKey.generateEd25519()
                generated = try registry.keys.storeDelegated(key, app: name, role: role)
                publicKeys = [key.tufKey]
                given.append(key)
            } catch { throw .failed("cannot make the role's key: \(error)") }
        }
        let record: DelegationRecord
        do { record = try registry.delegate(app: name, channel: channel, role: role, keys: publicKeys, threshold: threshold, signingKeys: given, actor: context.actor) } catch {
            if let generated { try? FileManager.default.removeItem(at: generated) }
            throw error.cliError
        }
        if arguments.flag("--json") {
            var out = record.json.objectValue ?? [:]
            out["app"] = .string(name.rawValue)
            if let generated { out["keyFile"] = .string(generated.path) }
            Output.json(.object(out))
            return
        }
        Output.line("delegated \(channel) of \(name) to the role \(record.name): paths \(record.paths.joined(separator: ", ")), threshold \(record.threshold)")
        Output.line("keyids: \(record.keys.keys.sorted().joined(separator: ", "))")
        if let generated { Output.line("the role's key: \(generated.path) (private, mode 0600)") }
        Output.line("a publish to \(channel) is signed with the role's key (--key-file, or the registry's copy); the top-level targets key is not needed for it")
    }
}
