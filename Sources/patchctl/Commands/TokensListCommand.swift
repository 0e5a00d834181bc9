import Foundation
import HotpatchCLI
import PatchCore
import PatchRegistry

struct TokensListCommand: Command {
    static let spec = CommandSpec("tokens list", summary: "List API tokens: id, scope, role, name, created and revoked (never the secret)",
                                  options: [.value("--app", "NAME", "only tokens scoped to this app (not those for every app)"),
                                            .flag("--json", "print JSON (an array)")] + Context.globalOptions + Remote.options)

    static func run(_ arguments: Arguments) throws(CLIError) {
        let app = try arguments.optionalAppName()
        // A token scoped to one app sees that app's tokens; one for every app sees all.
        let tokens = try Backends.open(arguments).tokens(app: app)
        if arguments.flag("--json") { Output.json(.array(tokens)); return }
        guard !tokens.isEmpty else { Output.line("no tokens"); return }
        Output.line(table(["ID", "SCOPE", "ROLE", "NAME", "CREATED", "BY", "REVOKED"], tokens.map { t in
            [t["id"]?.stringValue ?? "", t["scope"]?.stringValue ?? "", t["role"]?.stringValue ?? "", t["name"]?.stringValue ?? "",
             t["createdAt"]?.stringValue ?? "", t["createdBy"]?.stringValue ?? "", t["revokedAt"]?.stringValue ?? "-"]
        }))
    }
}
