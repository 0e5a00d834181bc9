import Foundation
import PatchCore
import PatchRegistry

struct ExportCommand: Command {
    static let spec = CommandSpec("export", summary: "Write an app as a static TUF repository (DIR/metadata, DIR/targets) for any web server or CDN",
                                  options: [.value("--app", "NAME", "the app"),
                                            .value("--out", "DIR", "output directory"),
                                            .flag("--json", "print JSON")] + Context.globalOptions)

    static func run(_ arguments: Arguments) throws(CLIError) {
        let name = try arguments.appName()
        let out = URL(fileURLWithPath: try arguments.required("--out"), isDirectory: true)
        let registry = try Context(arguments: arguments).openRegistry()
        let summary: ExportSummary
        do { summary = try registry.export(app: name, to: out) } catch { throw error.cliError }
        if arguments.flag("--json") {
            Output.json(["app": .string(name.rawValue), "out": .string(out.path), "metadataFiles": .int(Int64(summary.metadataFiles)),
                         "targetFiles": .int(Int64(summary.targetFiles)), "rootVersion": .int(summary.rootVersion),
                         "timestampVersion": .int(summary.timestampVersion)])
            return
        }
        Output.line("exported \(name) to \(out.path): \(summary.metadataFiles) metadata files, \(summary.targetFiles) target files")
        Output.line("metadata base URL: <your host>/metadata/   targets base URL: <your host>/targets/")
    }
}
