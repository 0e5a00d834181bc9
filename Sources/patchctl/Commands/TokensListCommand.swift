import Foundation
import PatchCore
import PatchRegistry

struct TokensListCommand: Command {
    static let spec = CommandSpec("tokens list", summary: "List API tokens: id, scope, role, name, created and revoked (never the secret)",
                                  options: [.value("--app", "NAME", "only tokens scoped to this app (not those for every app)"),
                                            .flag("--json", "print JSON (an array)")] + Context.globalOptions + Remote.options)

    static func run(_ arguments: Arguments) throws(CLIError) {
        let app = try arguments.optionalAppName()
        let tokens: [JSON]
        if let remote = try Remote.from(arguments) {
            // A token scoped to one app sees that app's tokens; one for every app sees all.
            guard let listed = try remote.json(.listTokens, query: app.map { ["app": $0.rawValue] } ?? [:]).arrayValue else {
                throw .failed("the server's token listing is not a JSON array")
            }
            tokens = listed
        } else {
            let registry = try Context(arguments: arguments).openRegistry()
            do { tokens = try registry.tokens(scope: app).map(\.json) } catch { throw error.cliError }
        }
        if arguments.flag("--json") { Output.json(.array(tokens)); return }
        guard !tokens.isEmpty else { Output.line("no tokens"); return }
        Output.line(table(["ID", "SCOPE", "ROLE", "NAME", "CREATED", "BY", "REVOKED"], tokens.map { t in
            [t["id"]?.stringValue ?? "", t["scope"]?.stringValue ?? "", t["role"]?.stringValue ?? "", t["name"]?.stringValue ?? "",
             t["createdAt"]?.stringValue ?? "", t["createdBy"]?.stringValue ?? "", t["revokedAt"]?.stringValue ?? "-"]
        }))
    }
}
