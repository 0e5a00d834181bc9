import Foundation
import HotpatchCLI
import PatchCore
import PatchRegistry

struct AppsListCommand: Command {
    static let spec = CommandSpec("apps list", summary: "List the apps of the registry, or with --server those the token may read",
                                  options: [.flag("--json", "print JSON (an array)")] + Context.globalOptions + Remote.options)

    static func run(_ arguments: Arguments) throws(CLIError) {
        let apps = try Backends.open(arguments).apps()
        if arguments.flag("--json") { Output.json(.array(apps)); return }
        guard !apps.isEmpty else { Output.line("no apps"); return }
        Output.line(table(["APP", "ENCRYPTED", "CREATED", "BY"], apps.map { a in
            [a["app"]?.stringValue ?? "", a["encrypted"]?.boolValue == true ? "yes" : "no", a["createdAt"]?.stringValue ?? "", a["createdBy"]?.stringValue ?? ""]
        }))
    }
}
