import Foundation
import PatchCore
import PatchRegistry

struct AppsListCommand: Command {
    static let spec = CommandSpec("apps list", summary: "List the apps of the registry, or with --server those the token may read",
                                  options: [.flag("--json", "print JSON (an array)")] + Context.globalOptions + Remote.options)

    static func run(_ arguments: Arguments) throws(CLIError) {
        let apps: [JSON]
        if let remote = try Remote.from(arguments) {
            apps = try remoteApps(remote)
        } else {
            let registry = try Context(arguments: arguments).openRegistry()
            do { apps = try registry.apps().map(\.json) } catch { throw error.cliError }
        }
        if arguments.flag("--json") { Output.json(.array(apps)); return }
        guard !apps.isEmpty else { Output.line("no apps"); return }
        Output.line(table(["APP", "ENCRYPTED", "CREATED", "BY"], apps.map { a in
            [a["app"]?.stringValue ?? "", a["encrypted"]?.boolValue == true ? "yes" : "no", a["createdAt"]?.stringValue ?? "", a["createdBy"]?.stringValue ?? ""]
        }))
    }

    /// `GET /v1/apps`: the apps the server's token may read.
    static func remoteApps(_ remote: Remote) throws(CLIError) -> [JSON] {
        guard let apps = try remote.json(.listApps).arrayValue else { throw .failed("the server's app listing is not a JSON array") }
        return apps
    }
}
