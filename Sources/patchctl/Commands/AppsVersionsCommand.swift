import Foundation
import HotpatchCLI
import PatchCore
import PatchRegistry

/// `patchctl apps versions`: the app versions devices checked for in the last 30 days (issue
/// 44), the most asked first: what `publish --app-version` should name, and what a range of it
/// expands against beside the versions with patches.
struct AppsVersionsCommand: Command {
    static let spec = CommandSpec("apps versions", summary: "List the app versions devices checked for in the last 30 days, the most asked first",
                                  options: [.value("--app", "NAME", "the app (default: hotpatch.json's, or the registry's only app)"),
                                            .flag("--json", "print JSON ({\"app\", \"days\", \"versions\": [{\"appVersion\", \"checks\", \"lastDay\"}]})")]
                                    + Context.globalOptions + Remote.options)

    static func run(_ arguments: Arguments) throws(CLIError) {
        let backend = try Backends.open(arguments)
        let name = try backend.app(arguments)
        let answer = try backend.askedVersions(app: name)
        if arguments.flag("--json") { Output.json(answer); return }
        let days = answer["days"]?.intValue ?? Int64(Registry.askedVersionsDays)
        let versions = answer["versions"]?.arrayValue ?? []
        guard !versions.isEmpty else {
            Output.line("no device of \(name) has checked for a version in the last \(days) days (patchd adds what it counted once a minute)")
            return
        }
        Output.line(table(["VERSION", "CHECKS", "LAST ASKED"], versions.map { v in
            [v["appVersion"]?.stringValue ?? "", String(v["checks"]?.intValue ?? 0), v["lastDay"]?.stringValue ?? ""]
        }))
        Output.line("checks over the last \(days) days, as patchd instances added them (once a minute each)")
    }
}
