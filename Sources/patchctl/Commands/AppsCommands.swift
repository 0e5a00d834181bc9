import Foundation
import Locking
import HotpatchCLI
import PatchCore
import PatchSigning
import PatchRegistry

struct AppsCreateCommand: Command {
    static let spec = CommandSpec("apps create", summary: "Create an app: signing keys for every role, 1.root.json, empty targets",
                                  positionals: ["NAME"],
                                  options: [.flag("--encrypt", "encrypt bundles with AES-256-GCM (writes KEYS/NAME/content.key)"),
                                            .flag("--jspatch-rsa", "also serve JSPatch Loader packages: keeps an RSA key in KEYS/NAME/jspatch-rsa.pem (not with --encrypt)"),
                                            JSPatchKeyArgument.importOption,
                                            RootKeyArgument.option,
                                            .value("--targets-key", "FILE", "a release engineer's public key (`patchctl keys generate`'s OUT.pub.json); repeat for each: production then needs --targets-threshold of them (`keys set`)").repeatable,
                                            .value("--targets-threshold", "N", "with --targets-key: how many of those keys must sign each production change (default 2 with two or more keys)"),
                                            SigningKeys.option,
                                            .flag("--json", "print JSON")] + Context.globalOptions)

    static func run(_ arguments: Arguments) throws(CLIError) {
        let releaseKeys = try KeysSetCommand.publicKeys(arguments.all("--targets-key"))
        if releaseKeys.isEmpty, arguments.value("--targets-threshold") != nil { throw .usage("--targets-threshold needs --targets-key (one per release engineer)") }
        let threshold = try arguments.int("--targets-threshold", in: 1...64) ?? min(2, releaseKeys.count)
        let signingKeys = try SigningKeys.read(arguments)
        let name: AppName
        do { name = try AppName(arguments.positionals[0]) } catch { throw .usage(error.message) }
        let encrypted = arguments.flag("--encrypt")
        let jspatch = arguments.flag("--jspatch-rsa")
        if arguments.value("--import") != nil, !jspatch { throw .usage("--import needs --jspatch-rsa") }
        if jspatch, encrypted { throw .usage("--jspatch-rsa cannot be combined with --encrypt: JSPatch Loader cannot decrypt") }
        var jspatchKey: RSAPrivateKey?
        if jspatch { jspatchKey = try JSPatchKeyArgument.key(arguments) }
        let rootKey = try RootKeyArgument.key(arguments)
        let context = try Context(arguments: arguments)
        if let repository = GitWorkTree.tracking(context.keysDirectory) {
            Output.error("warning: the key directory \(context.keysDirectory.standardizedFileURL.path) is inside the git work tree \(repository.path) and not ignored: the root key written there would be committed with the app. Keep the registry and keys outside the repository, e.g. `--data ~/hotpatch/data --keys ~/hotpatch/keys`, then name them once in the repository with `patchctl init --app \(name) --data ~/hotpatch/data --keys ~/hotpatch/keys`")
        }
        let registry = try context.openRegistry(create: true)
        do { try registry.createApp(name, encrypted: encrypted, jspatchKey: jspatchKey, rootKey: rootKey, actor: context.actor) } catch { throw error.cliError }
        // The release keys replace the targets key just made once a threshold of their holders
        // has signed (pending until then; with enough --key-file keys, at once).
        var releaseRule: CLIError?
        if !releaseKeys.isEmpty {
            do {
                try Registry.signing(with: signingKeys) { () throws(RegistryError) in
                    _ = try registry.setTargetsKeys(app: name, keys: releaseKeys, threshold: threshold, actor: context.actor)
                }
            } catch { releaseRule = error.cliError }
        }
        var pendingRule: (line: String, json: JSON)?
        if let releaseRule {
            guard case .pending(let line, let json) = releaseRule else { throw releaseRule }
            pendingRule = (line, json)
        }
        let rootPath = context.keysDirectory.appendingPathComponent(name.rawValue).path
        var jspatchInfo: JSPatchKeyInfo?
        if jspatch { do { jspatchInfo = try registry.jspatchKey(app: name) } catch { throw error.cliError } }
        if arguments.flag("--json") {
            var out: [String: JSON] = ["app": .string(name.rawValue), "encrypted": .bool(encrypted), "keys": .string(rootPath)]
            if let jspatchInfo { out["jspatchRSA"] = ["bits": .int(Int64(jspatchInfo.bits)), "publicKeySha256": .string(jspatchInfo.publicKeySHA256)] }
            if let rootKey { out["rootKey"] = ["keyid": .string(rootKey.tufKey.keyID), "scheme": .string(rootKey.tufKey.scheme)] }
            if let pendingRule { out["pending"] = pendingRule.json }
            Output.json(.object(out))
            return
        }
        Output.line("created app \(name)\(encrypted ? " (encrypted)" : "")")
        Output.line("keys:         \(rootPath)/ (private, mode 0600: keep the root key offline)")
        if let rootKey { Output.line("root key:     imported \(rootKey.tufKey.scheme) key, keyid \(rootKey.tufKey.keyID)") }
        if encrypted { Output.line("content key:  \(registry.keys.contentKeyURL(app: name).path) (ship it inside the app)") }
        Output.line("trusted root: patchctl apps root \(name) > \(name).root.json  (embed in the app)")
        if let jspatchInfo { JSPatchKeyArgument.report(jspatchInfo, keyFile: registry.keys.jspatchKeyURL(app: name), json: false) }
        if let pendingRule { Output.line(pendingRule.line) } else if !releaseKeys.isEmpty {
            Output.line("production needs \(threshold) of \(releaseKeys.count) release keys (the targets key made here was removed)")
        }
    }
}

struct AppsRootCommand: Command {
    static let spec = CommandSpec("apps root", summary: "Print an app's initial trusted root (1.root.json), the file an app embeds",
                                  positionals: ["NAME"],
                                  options: [.flag("--json", "accepted for consistency: the root is JSON already, printed byte for byte either way")] + Context.globalOptions)

    static func run(_ arguments: Arguments) throws(CLIError) {
        let name: AppName
        do { name = try AppName(arguments.positionals[0]) } catch { throw .usage(error.message) }
        let registry = try Context(arguments: arguments).openRegistry()
        let bytes: [UInt8]
        do { bytes = try registry.initialRoot(app: name) } catch { throw error.cliError }
        Output.printedJSON.withLock { $0 = true }
        FileHandle.standardOutput.write(Data(bytes + [0x0A]))
    }
}

struct KeysRotateCommand: Command {
    static let spec = CommandSpec("keys rotate", summary: "Replace one role's key; writes root N+1 signed by the old and new root keys",
                                  options: [.value("--app", "NAME", "the app (default: hotpatch.json's, or the registry's only app)"),
                                            .value("--role", "ROLE", "root, targets, snapshot or timestamp").required,
                                            .flag("--json", "print JSON")] + Context.globalOptions)

    static func run(_ arguments: Arguments) throws(CLIError) {
        let roleName = try arguments.required("--role")
        guard let role = Role(rawValue: roleName) else { throw .usage("--role must be root, targets, snapshot or timestamp, got \(roleName.debugSanitized)") }
        let context = try Context(arguments: arguments)
        let registry = try context.openRegistry()
        let name = try LocalBackend(registry: registry, actor: context.actor, place: context.place).app(arguments)
        let rotation: KeyRotation
        do { rotation = try registry.rotateKey(app: name, role: role, actor: context.actor) } catch { throw error.cliError }
        if arguments.flag("--json") {
            Output.json(["app": .string(name.rawValue), "role": .string(role.rawValue), "newKeyID": .string(rotation.newKeyID),
                         "oldKeyIDs": .array(rotation.oldKeyIDs.map { .string($0) }), "rootVersion": .int(rotation.rootVersion)])
            return
        }
        Output.line("rotated the \(role.rawValue) key of \(name): new keyid \(rotation.newKeyID)")
        Output.line("root is now version \(rotation.rootVersion) (signed by the old and the new root keys; devices follow the chain)")
        if !rotation.oldKeyIDs.isEmpty {
            Output.line("the replaced key file was deleted")
        }
    }
}

/// `--root-key PEM` of `apps create`: an imported root key, the kind a hardware token holds.
enum RootKeyArgument {
    static let option = Option.value("--root-key", "PEM", "use this unencrypted ECDSA P-256 (PKCS#8 or SEC1 \"EC PRIVATE KEY\") or Ed25519 private key as the root key instead of a new Ed25519 key; root metadata is then signed with it (ecdsa-sha2-nistp256). A copy is kept in KEYS/NAME/ like every key")

    static func key(_ arguments: Arguments) throws(CLIError) -> SigningKey? {
        guard let path = arguments.value("--root-key") else { return nil }
        let pem = try Output.readFile(path, what: "the root key", limit: 64 << 10)
        do { return try SigningKey(pem: pem) } catch { throw .failed("\(path.pathSanitized): \(error)") }
    }
}
