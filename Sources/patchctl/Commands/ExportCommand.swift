import Foundation
import PatchCore
import PatchRegistry

struct ExportCommand: Command {
    static let spec = CommandSpec("export", summary: "Write an app as a static TUF repository (DIR/metadata, DIR/targets), or its JSPatch packages, for any web server or CDN",
                                  options: [.value("--app", "NAME", "the app"),
                                            .value("--out", "DIR", "output directory"),
                                            .value("--format", "FORMAT", "tuf (default), or jspatch: DIR/{appVersion}/v{N}.zip and DIR/{appVersion}/latest for JSPatch Loader apps"),
                                            .flag("--json", "print JSON")] + Context.globalOptions)

    static func run(_ arguments: Arguments) throws(CLIError) {
        let name = try arguments.appName()
        let out = URL(fileURLWithPath: try arguments.required("--out"), isDirectory: true)
        switch arguments.value("--format") ?? "tuf" {
        case "tuf": break
        case "jspatch": return try exportJSPatch(name, to: out, arguments)
        case let other: throw .usage("--format must be tuf or jspatch, got \(other.debugSanitized)")
        }
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

    private static func exportJSPatch(_ name: AppName, to out: URL, _ arguments: Arguments) throws(CLIError) {
        let registry = try Context(arguments: arguments).openRegistry()
        let summary: JSPatchExportSummary
        do { summary = try registry.exportJSPatch(app: name, to: out) } catch { throw error.cliError }
        if arguments.flag("--json") {
            Output.json(["app": .string(name.rawValue), "out": .string(out.path), "format": "jspatch", "packages": .int(Int64(summary.packages)),
                         "latestFiles": .int(Int64(summary.latestFiles)), "removed": .int(Int64(summary.removed))])
            return
        }
        Output.line("exported \(name) to \(out.path): JSPatch packages \(summary.packages), latest files \(summary.latestFiles), removed \(summary.removed)")
        Output.line("rootUrl for JPLoader.h: <your host>/<path to \(out.lastPathComponent)>   (packages at {rootUrl}/{appVersion}/v{N}.zip)")
    }
}
