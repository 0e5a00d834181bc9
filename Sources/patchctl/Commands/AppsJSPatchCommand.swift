import Foundation
import HotpatchCLI
import PatchCore
import PatchSigning
import PatchRegistry

struct AppsJSPatchCommand: Command {
    static let spec = CommandSpec("apps jspatch", summary: "Give an existing plaintext app an RSA key for JSPatch Loader packages (served under /jspatch/NAME)",
                                  positionals: ["NAME"],
                                  options: [JSPatchKeyArgument.importOption, .flag("--json", "print JSON")] + Context.globalOptions)

    static func run(_ arguments: Arguments) throws(CLIError) {
        let name: AppName
        do { name = try AppName(arguments.positionals[0]) } catch { throw .usage(error.message) }
        let key = try JSPatchKeyArgument.key(arguments)
        let context = try Context(arguments: arguments)
        let registry = try context.openRegistry()
        let info: JSPatchKeyInfo
        do { info = try registry.enableJSPatch(app: name, key: key, actor: context.actor) } catch { throw error.cliError }
        JSPatchKeyArgument.report(info, keyFile: registry.keys.jspatchKeyURL(app: name), json: arguments.flag("--json"))
    }
}

/// `--import PEM` of `apps create --jspatch-rsa` and `apps jspatch`, and what both print.
enum JSPatchKeyArgument {
    static let importOption = Option.value("--import", "PEM", "use this unencrypted PKCS#1 or PKCS#8 RSA private key (1024 to 4096 bits, e.g. the one your JPLoader.h public key belongs to) instead of a new 2048-bit key")

    /// The imported key, or a new 2048-bit one.
    static func key(_ arguments: Arguments) throws(CLIError) -> RSAPrivateKey {
        do {
            guard let path = arguments.value("--import") else { return try RSAPrivateKey.generate(bits: 2048) }
            let pem = try Output.readFile(path, what: "the key", limit: 64 << 10)
            do { return try RSAPrivateKey(pem: pem) } catch { throw CLIError.failed("\(path.pathSanitized): \(error)") }
        } catch let error as CLIError {
            throw error
        } catch {
            throw .failed("\(error)")
        }
    }

    static func report(_ info: JSPatchKeyInfo, keyFile: URL, json: Bool) {
        if json {
            Output.json(["app": .string(info.app.rawValue), "bits": .int(Int64(info.bits)), "publicKeySha256": .string(info.publicKeySHA256),
                         "keyFile": .string(keyFile.path)])
            return
        }
        Output.line("JSPatch key:  \(keyFile.path) (\(info.bits)-bit RSA, private, mode 0600)")
        Output.line("public key:   patchctl apps jspatch-key \(info.app) > jspatch-public.pem  (embed in JPLoader.h; sha256 \(info.publicKeySHA256.prefix(16))…)")
        Output.line("rootUrl:      <patchd URL>/jspatch/\(info.app)  (or a `patchctl export --format jspatch` directory)")
    }
}
