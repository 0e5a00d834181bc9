import Foundation
import HotpatchCLI
import PatchCore
import PatchRegistry
import PatchSigning

// The two-person rule: changes waiting for signatures, and the commands that list, sign
// and withdraw them. Each works on the local registry or, with --server, on a patchd, where
// the signature is made on this machine and only it is sent.

/// How a pending change reads in one line and in a listing.
enum PendingText {
    static func line(_ pending: JSON) -> String {
        let id = pending["id"]?.intValue ?? 0
        let app = pending["app"]?.stringValue ?? "?"
        let missing = pending["missing"]?.intValue ?? 0
        let summary = pending["summary"]?.stringValue ?? ""
        return "pending: change \(id) of \(app) (\(summary)) has \(pending["signedBy"]?.arrayValue?.count ?? 0) of \(pending["threshold"]?.intValue ?? 0) signatures of the \(pending["role"]?.stringValue ?? "targets") keys; nothing is served until \(missing) more of its key holders approve\(missing == 1 ? "s" : "") it: `patchctl approve --app \(app) \(id) --key-file THEIR-KEY.pem`"
    }

    /// What a signature on the change would vouch for: every target its metadata lists, read
    /// from the `signed` the signers sign (not from a summary the server wrote).
    static func targets(_ pending: JSON) -> [String] {
        guard let targets = pending["signed"]?["targets"]?.objectValue else { return [] }
        return targets.keys.sorted().map { path in
            let entry = targets[path]
            let custom = entry?["custom"]
            let rollout = custom?["rollout"]?.intValue.map { " rollout \($0)%" } ?? ""
            return "  \(path) sha256 \(entry?["hashes"]?["sha256"]?.stringValue ?? "?")\(rollout)"
        }
    }
}

struct PendingCommand: Command {
    static let spec = CommandSpec("pending", summary: "List changes waiting for signatures (the two-person rule), with the targets each would sign",
                                  options: [.value("--app", "NAME", "the app (default: hotpatch.json's, or the registry's only app)"),
                                            .flag("--all", "also list approved, rejected and superseded changes"),
                                            .flag("--json", "print JSON")] + Context.globalOptions + Remote.options)

    static func run(_ arguments: Arguments) throws(CLIError) {
        let backend = try Backends.open(arguments)
        let name = try backend.app(arguments)
        let changes = try backend.pending(app: name, all: arguments.flag("--all"))
        if arguments.flag("--json") { Output.json(.array(changes)); return }
        guard !changes.isEmpty else { Output.line("no changes of \(name) wait for signatures"); return }
        for change in changes {
            let state = change["state"]?.stringValue ?? "pending"
            Output.line("change \(change["id"]?.intValue ?? 0) [\(state)] \(change["summary"]?.stringValue ?? "") by \(change["proposedBy"]?.stringValue ?? "?") at \(change["proposedAt"]?.stringValue ?? "?")")
            Output.line("  \(change["role"]?.stringValue ?? "targets") version \(change["signed"]?["version"]?.intValue ?? 0): \(change["signedBy"]?.arrayValue?.count ?? 0) of \(change["threshold"]?.intValue ?? 0) signatures (\((change["signedBy"]?.arrayValue ?? []).compactMap(\.stringValue).map { String($0.prefix(12)) + "…" }.joined(separator: ", ")))")
            if let sha = change["bundleSha256"]?.stringValue { Output.line("  bundle sha256 \(sha)") }
            if state == "pending" { for target in PendingText.targets(change) { Output.line(target) } }
        }
    }
}

struct ApproveCommand: Command {
    static let spec = CommandSpec("approve", summary: "Sign a pending change with your key; it lands once enough key holders have signed",
                                  positionals: ["ID"],
                                  options: [.value("--app", "NAME", "the app (default: hotpatch.json's, or the registry's only app)"),
                                            SigningKeys.option, .flag("--json", "print JSON")] + Context.globalOptions + Remote.options)

    static func run(_ arguments: Arguments) throws(CLIError) {
        guard let id = Int64(arguments.positionals[0]), id > 0 else { throw .usage("ID is a change number from `patchctl pending`, got \(arguments.positionals[0].debugSanitized)") }
        let backend = try Backends.open(arguments)
        let name = try backend.app(arguments)
        let answer = try backend.approve(app: name, id: id)
        guard answer["result"] != nil else { throw .pending(PendingText.line(answer), json: answer) }
        if arguments.flag("--json") { Output.json(answer); return }
        Output.line("approved change \(id) of \(name) (\(answer["summary"]?.stringValue ?? "")): signed by \(answer["signedBy"]?.arrayValue?.count ?? 0) of its keys, it has landed")
        if let targets = answer["result"]?["targetsVersion"]?.intValue { Output.line("targets version \(targets) is served") }
    }
}

struct RejectCommand: Command {
    static let spec = CommandSpec("reject", summary: "Withdraw a pending change: it will never land",
                                  positionals: ["ID"],
                                  options: [.value("--app", "NAME", "the app (default: hotpatch.json's, or the registry's only app)"),
                                            .value("--message", "TEXT", "why (one line, kept in the audit log)"),
                                            .flag("--json", "print JSON")] + Context.globalOptions + Remote.options)

    static func run(_ arguments: Arguments) throws(CLIError) {
        guard let id = Int64(arguments.positionals[0]), id > 0 else { throw .usage("ID is a change number from `patchctl pending`, got \(arguments.positionals[0].debugSanitized)") }
        let backend = try Backends.open(arguments)
        let name = try backend.app(arguments)
        let answer = try backend.reject(app: name, id: id, reason: arguments.value("--message"))
        if arguments.flag("--json") { Output.json(answer); return }
        Output.line("rejected change \(id) of \(name) (\(answer["summary"]?.stringValue ?? "")): it will not land")
    }
}

/// `keys generate`: a key pair for one person (a release engineer's targets key, a QA role
/// key), made on their machine: the private key never leaves it.
struct KeysGenerateCommand: Command {
    static let spec = CommandSpec("keys generate", summary: "Make an Ed25519 key pair: OUT (private, 0600) and OUT.pub.json (the TUF public key to hand over)",
                                  options: [.value("--out", "FILE", "where the private key is written (PKCS#8 PEM, mode 0600; refused if it exists)").required,
                                            .flag("--json", "print JSON")])

    static func run(_ arguments: Arguments) throws(CLIError) {
        let out = URL(fileURLWithPath: try arguments.required("--out"))
        let pub = URL(fileURLWithPath: out.path + ".pub.json")
        for url in [out, pub] where FileManager.default.fileExists(atPath: url.path) { throw .failed("\(url.path.pathSanitized) exists; nothing was written") }
        let key: SigningKey
        let pem: [UInt8]
        do {
            key = try SigningKey.generateEd25519()
            pem = try key.pemRepresentation()
        } catch { throw .failed("cannot make a key: \(error)") }
        do {
            try DurableFile.create(out, with: pem, mode: 0o600)
            try DurableFile.create(pub, with: key.tufKey.json.canonicalBytes + [0x0A], mode: 0o644)
        } catch { throw .failed(error.message) }
        if arguments.flag("--json") {
            Output.json(["keyid": .string(key.tufKey.keyID), "privateKey": .string(out.path), "publicKey": .string(pub.path)])
            return
        }
        Output.line("keyid \(key.tufKey.keyID)")
        Output.line("private key: \(out.path) (mode 0600: keep it on this machine, use it with --key-file)")
        Output.line("public key:  \(pub.path) (give it to whoever runs `patchctl keys set` or `keys delegate`)")
    }
}

/// `keys set --role targets`: the release keys that sign production, and how many must.
struct KeysSetCommand: Command {
    static let spec = CommandSpec("keys set", summary: "Make top-level targets (production) need THRESHOLD of these release keys: the two-person rule, enforced by devices",
                                  options: [.value("--app", "NAME", "the app (default: hotpatch.json's, or the registry's only app)"),
                                            .value("--role", "ROLE", "targets (the one role whose keys are people's)").required,
                                            .value("--key", "FILE", "a release engineer's public key (`patchctl keys generate`'s OUT.pub.json); repeat for each").required.repeatable,
                                            .value("--threshold", "N", "how many of the keys must sign each change (default 2 with two or more keys)"),
                                            SigningKeys.option, .flag("--dry-run", "say what would change and change nothing"),
                                            .flag("--json", "print JSON")] + Context.globalOptions)

    static func run(_ arguments: Arguments) throws(CLIError) {
        guard arguments.value("--role") == "targets" else { throw .usage("--role takes targets: root, snapshot and timestamp keys are rotated with `patchctl keys rotate`") }
        let keys = try publicKeys(arguments.all("--key"))
        let threshold = try arguments.int("--threshold", in: 1...64) ?? min(2, keys.count)
        let backend = try Backends.open(arguments)
        guard let registry = backend.registry, let actor = backend.actor else { throw .usage("keys set signs a new root: it runs where the root key is, not with --server") }
        let name = try backend.app(arguments)
        let dryRun = arguments.flag("--dry-run")
        let signingKeys = try SigningKeys.read(arguments)
        let result: TargetsKeys
        do {
            result = try Registry.signing(with: signingKeys) { () throws(RegistryError) in
                try registry.setTargetsKeys(app: name, keys: keys, threshold: threshold, dryRun: dryRun, actor: actor)
            }
        } catch { throw error.cliError }
        if arguments.flag("--json") { Output.json(result.json); return }
        Output.line("\(dryRun ? "dry run: would make" : "made") targets of \(name) need \(threshold) of \(keys.count) keys; root is version \(result.rootVersion)")
    }

    static func publicKeys(_ paths: [String]) throws(CLIError) -> [TUFKey] {
        var keys: [TUFKey] = []
        for path in paths {
            let bytes = try Output.readFile(path, what: "the public key", limit: 64 << 10)
            do { keys.append(try TUFKey(json: try JSONParser.parse(bytes), role: "targets")) } catch {
                throw .failed("\(path.pathSanitized) is not a TUF public key object: \(error)")
            }
        }
        return keys
    }
}
