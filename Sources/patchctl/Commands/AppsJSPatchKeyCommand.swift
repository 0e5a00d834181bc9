import Foundation
import HotpatchCLI
import PatchCore
import PatchRegistry

struct AppsJSPatchKeyCommand: Command {
    static let spec = CommandSpec("apps jspatch-key", summary: "Print an app's JSPatch public key (PEM SubjectPublicKeyInfo), what JPLoader.h embeds",
                                  positionals: ["NAME"],
                                  options: [.flag("--objc", "print it as the Objective-C string literal JPLoader.h assigns to publicKey"),
                                            .flag("--json", "print JSON: app, bits, publicKeyPem, publicKeySha256")] + Context.globalOptions)

    static func run(_ arguments: Arguments) throws(CLIError) {
        let name: AppName
        do { name = try AppName(arguments.positionals[0]) } catch { throw .usage(error.message) }
        let registry = try Context(arguments: arguments).openRegistry()
        let info: JSPatchKeyInfo?
        do { info = try registry.jspatchKey(app: name) } catch { throw error.cliError }
        guard let info else { throw .failed("app \"\(name)\" has no JSPatch key; give it one with `patchctl apps jspatch \(name)`") }
        if arguments.flag("--json") {
            Output.json(["app": .string(name.rawValue), "bits": .int(Int64(info.bits)), "publicKeyPem": .string(info.publicKeyPEM),
                         "publicKeySha256": .string(info.publicKeySHA256)])
        } else if arguments.flag("--objc") {
            let lines = info.publicKeyPEM.split(separator: "\n", omittingEmptySubsequences: true)
            Output.line("@\"" + lines.joined(separator: "\\n") + "\"")
        } else {
            Output.line(info.publicKeyPEM.hasSuffix("\n") ? String(info.publicKeyPEM.dropLast()) : info.publicKeyPEM)
        }
    }
}
