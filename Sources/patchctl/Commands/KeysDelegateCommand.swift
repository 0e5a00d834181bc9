import Foundation
import HotpatchCLI
import PatchCore
import PatchRegistry
import PatchSigning

struct KeysDelegateCommand: Command {
    static let spec = CommandSpec("keys delegate", summary: "Delegate a channel's targets to a role with its own keys, or rotate the role's keys (--replace); the top-level targets key then signs only the delegation",
                                  options: [.value("--app", "NAME", "the app (default: hotpatch.json's, or the registry's only app)"),
                                            .value("--channel", "NAME", "the channel the role signs (not production): its paths CHANNEL/*/*/main.js and main.conditional.js").required,
                                            .value("--name", "ROLE", "the role's name, 1-32 characters of a-z, 0-9 and - (e.g. qa)").required,
                                            Option.value("--key", "FILE", "a public key of the role, a TUF key object {\"keytype\",\"scheme\",\"keyval\"} (default: a new Ed25519 key kept where the registry is, KEYS/APP/delegated.ROLE.KEYID.pem)").repeatable,
                                            .value("--threshold", "N", "how many of the role's keys must sign (default: the role's threshold with --replace, else 1)"),
                                            .flag("--replace", "rotate the keys of the role that signs the channel now: devices refuse what the replaced keys sign from their next sync"),
                                            SigningKeys.option,
                                            .flag("--json", "print JSON")] + Context.globalOptions + Remote.options)

    static func run(_ arguments: Arguments) throws(CLIError) {
        guard let channel = try arguments.channel("--channel") else { throw .usage("--channel is required") }
        let role = try arguments.required("--name")
        let threshold = try arguments.int("--threshold", in: 1...16)
        var keys: [TUFKey] = []
        for path in arguments.all("--key") {
            let bytes = try Output.readFile(path, what: "the role's public key", limit: 64 << 10)
            do { keys.append(try TUFKey(json: try JSONParser.parse(bytes), role: role)) } catch {
                throw .failed("\(path.pathSanitized) is not a TUF public key object: \(error)")
            }
        }
        if keys.isEmpty, threshold.map({ $0 > 1 }) == true {
            throw .usage("--threshold \(threshold ?? 1) needs that many --key files: a key the registry makes is one key")
        }
        let backend = try Backends.open(arguments)
        let app = try backend.app(arguments)
        var operation = DelegateOperation(channel: channel, role: role, keys: keys, threshold: threshold, replace: arguments.flag("--replace"))
        let signingKeys = try SigningKeys.read(arguments)
        if !keys.isEmpty, !signingKeys.isEmpty {
            // The role's private keys never leave this machine: the role's next metadata is
            // asked for (a dry run), signed here, and sent with the delegation, locally and
            // over --server alike.
            let prepared = try ReleaseCall.run(operation, app: app, backend: backend, dryRun: true)
            guard let unsigned = prepared["unsigned"] else { throw .failed("the answer names no unsigned role metadata") }
            do {
                let signed = try SignedTargets(signing: try TargetsBody(signed: unsigned), with: signingKeys)
                operation.signedRole = try JSONParser.parse(signed.bytes)
            } catch { throw .failed("cannot sign the role's metadata: \(error)") }
        }
        let out = try ReleaseCall.run(operation, app: app, backend: backend, arguments)
        if arguments.flag("--json") { Output.json(out); return }
        let keyIDs = out["keyids"]?.arrayValue?.compactMap(\.stringValue) ?? []
        let paths = out["paths"]?.arrayValue?.compactMap(\.stringValue) ?? []
        let signers = out["threshold"]?.intValue ?? 1
        if let replaced = out["replacedKeyIDs"]?.arrayValue?.compactMap(\.stringValue) {
            Output.line("rotated the keys of the role \(role) (\(channel) of \(app)): threshold \(signers) of \(keyIDs.count)")
            Output.line("no longer trusted: \(replaced.isEmpty ? "no key (the threshold changed)" : replaced.joined(separator: ", "))")
        } else {
            Output.line("delegated \(channel) of \(app) to the role \(role): paths \(paths.joined(separator: ", ")), threshold \(signers)")
        }
        Output.line("keyids: \(keyIDs.joined(separator: ", "))")
        if let file = out["keyFile"]?.stringValue { Output.line("the role's key: \(file) (private, mode 0600)") }
        if out["serverKey"]?.boolValue == true { Output.line("the role's key was made by \(backend.place) and is kept there") }
        Output.line("a publish to \(channel) is signed with the role's key (--key-file, or the copy kept with the registry); the top-level targets key is not needed for it")
    }
}

struct KeysUndelegateCommand: Command {
    static let spec = CommandSpec("keys undelegate", summary: "End a channel's delegation: its targets return to top-level targets, signed by the targets key, and devices stop trusting the role's keys",
                                  options: [.value("--app", "NAME", "the app (default: hotpatch.json's, or the registry's only app)"),
                                            .value("--channel", "NAME", "the delegated channel").required,
                                            .flag("--json", "print JSON")] + Context.globalOptions + Remote.options)

    static func run(_ arguments: Arguments) throws(CLIError) {
        guard let channel = try arguments.channel("--channel") else { throw .usage("--channel is required") }
        let backend = try Backends.open(arguments)
        let app = try backend.app(arguments)
        let out = try ReleaseCall.run(UndelegateOperation(channel: channel), app: app, backend: backend, arguments)
        if arguments.flag("--json") { Output.json(out); return }
        Output.line("\(channel) of \(app) is no longer delegated to the role \(out["name"]?.stringValue ?? ""): its targets are signed by the top-level targets key again")
    }
}

struct KeysWithholdCommand: Command {
    static let spec = CommandSpec("keys withhold", summary: "Set up (or rotate) the app's withhold role: keys that can only take patches away, so a halt or revoke lands at once even when the targets keys are elsewhere (the two-person rule); the targets keys sign the setup",
                                  options: [.value("--app", "NAME", "the app (default: hotpatch.json's, or the registry's only app)"),
                                            Option.value("--key", "FILE", "a public key of the role, a TUF key object (an on-call engineer's; default: a new Ed25519 key kept where the registry is, which patchd's guards and every publisher's halt use)").repeatable,
                                            .value("--threshold", "N", "how many of the role's keys must sign a withhold (default 1)"),
                                            SigningKeys.option,
                                            .flag("--json", "print JSON")] + Context.globalOptions + Remote.options)

    static func run(_ arguments: Arguments) throws(CLIError) {
        let threshold = try arguments.int("--threshold", in: 1...16)
        var keys: [TUFKey] = []
        for path in arguments.all("--key") {
            let bytes = try Output.readFile(path, what: "the role's public key", limit: 64 << 10)
            do { keys.append(try TUFKey(json: try JSONParser.parse(bytes), role: Withholds.roleName)) } catch {
                throw .failed("\(path.pathSanitized) is not a TUF public key object: \(error)")
            }
        }
        if keys.isEmpty, threshold.map({ $0 > 1 }) == true {
            throw .usage("--threshold \(threshold ?? 1) needs that many --key files: a key the registry makes is one key")
        }
        let backend = try Backends.open(arguments)
        let app = try backend.app(arguments)
        let out = try ReleaseCall.run(WithholdRoleOperation(keys: keys, threshold: threshold), app: app, backend: backend, arguments)
        if arguments.flag("--json") { Output.json(out); return }
        let keyIDs = out["keyids"]?.arrayValue?.compactMap(\.stringValue) ?? []
        Output.line("\(app)'s withhold role: threshold \(out["threshold"]?.intValue ?? 1) of \(keyIDs.count) key\(keyIDs.count == 1 ? "" : "s")")
        Output.line("keyids: \(keyIDs.joined(separator: ", "))")
        if let file = out["keyFile"]?.stringValue { Output.line("the role's key: \(file) (private, mode 0600)") }
        if out["serverKey"]?.boolValue == true { Output.line("the role's key was made by \(backend.place) and is kept there") }
        Output.line("where the targets keys are not at hand, halt and revoke now sign withhold.json instead: devices stop installing (halt) or drop (revoke) the patch from their next sync; resume needs the targets keys")
    }
}
