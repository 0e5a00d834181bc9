import Foundation
import HotpatchCLI
import PatchCore
import PatchRegistry

struct ExportCommand: Command {
    static let spec = CommandSpec("export", summary: "Write an app as a static TUF repository laid out as patchd serves it (DIR/v1/apps/APP/metadata, …/targets), or its JSPatch packages, for any web server or CDN",
                                  options: [.value("--app", "NAME", "the app (default: hotpatch.json's, or the registry's only app)"),
                                            .value("--out", "DIR", "output directory; files of an earlier export that no longer belong (revoked patches) are deleted"),
                                            .value("--format", "FORMAT", "tuf (default), or jspatch: DIR/{appVersion}/v{N}.zip and DIR/{appVersion}/latest for JSPatch Loader apps"),
                                            .value("--layout", "LAYOUT", "tuf only: server (default: DIR/v1/apps/APP/…, so the URL serving DIR is the client's server URL) or flat (DIR/metadata, DIR/targets)"),
                                            .value("--expires", "DURATION", "tuf only: sign metadata that lasts at least this long, e.g. 30d or 12h (at most 90d; default: the 1-day timestamp)"),
                                            .value("--root", "FILE", "with --server: the trusted root the mirror is verified from before anything is written (default: the server's own 1.root.json)"),
                                            .flag("--json", "print JSON")] + Context.globalOptions + Remote.options)

    static func run(_ arguments: Arguments) throws(CLIError) {
        let out = URL(fileURLWithPath: try arguments.required("--out"), isDirectory: true)
        let format = arguments.value("--format") ?? "tuf"
        guard ["tuf", "jspatch"].contains(format) else { throw .usage("--format must be tuf or jspatch, got \(format.debugSanitized)") }
        let layoutName = arguments.value("--layout") ?? "server"
        guard let layout = ExportLayout(rawValue: layoutName) else { throw .usage("--layout must be server or flat, got \(layoutName.debugSanitized)") }
        let lifetime = try arguments.value("--expires").map { text throws(CLIError) in try DurationArgument.parse(text, option: "--expires", max: Registry.maxExportLifetime) }
        if format == "jspatch", arguments.value("--layout") != nil || lifetime != nil { throw .usage("--layout and --expires go with --format tuf") }
        let trustedRoot = try arguments.value("--root").map { path throws(CLIError) in try Output.readFile(path, what: "trusted root", limit: 512_000) }
        let backend = try Backends.open(arguments)
        let name = try backend.app(arguments)
        if let lifetime, let registry = backend.registry, let server = registry.servingPatchd() {
            // --expires re-signs the registry's own snapshot and timestamp, not a copy for the
            // export: the patchd serving it would hand devices metadata they accept for that
            // long, so a server taken over could replay today's state for weeks.
            let days = lifetime >= 86_400 ? "\(Int(lifetime / 86_400)) days" : "\(Int(lifetime / 3600)) hours"
            throw .failed("refused: --expires re-signs this registry's own timestamp and snapshot to last \(days), and \(server) serves it: "
                          + "devices would accept that metadata from it for \(days) instead of a day. Nothing was changed. Export without --expires "
                          + "(patchd keeps the served timestamp fresh; re-export before the exported one expires)")
        }
        if format == "jspatch" {
            guard let registry = backend.registry else {
                throw .usage("--format jspatch exports from the registry (its packages are signed with the app's JSPatch key there); over --server, export --format tuf")
            }
            return try exportJSPatch(name, to: out, registry, arguments)
        }
        let summary = try backend.export(app: name, to: out, layout: layout, lifetime: lifetime, trustedRoot: trustedRoot)
        var flatToo: ExportSummary?
        // An export made in the flat layout (before the server layout was the default) is
        // kept current and pruned too: left alone, it would go on offering revoked bundles.
        if layout == .server, let registry = backend.registry {
            do {
                if try registry.holdsExport(app: name, in: out, layout: .flat) { flatToo = try registry.export(app: name, to: out, layout: .flat) }
            } catch { throw error.cliError }
        }
        let expires = TUFTime.format(summary.timestampExpires)
        if arguments.flag("--json") {
            Output.json(["app": .string(name.rawValue), "out": .string(out.path), "layout": .string(layout.rawValue), "appRoot": .string(summary.appRoot.path),
                         "metadataFiles": .int(Int64(summary.metadataFiles)), "targetFiles": .int(Int64(summary.targetFiles)),
                         "removedFiles": .int(Int64(summary.removedFiles)), "rootVersion": .int(summary.rootVersion),
                         "timestampVersion": .int(summary.timestampVersion), "timestampExpires": .string(expires),
                         "flatExportUpdated": .bool(flatToo != nil)])
            return
        }
        Output.line("exported \(name) to \(summary.appRoot.path): \(summary.metadataFiles) metadata files, \(summary.targetFiles) target files, \(summary.removedFiles) stale files removed")
        switch layout {
        case .server:
            Output.line("server URL: the URL that serves \(out.path) (ClientConfiguration.server, patchctl fetch/verify --server);")
            let root = "{server}" + DeviceRoutes.repositoryRoot(app: name.rawValue)
            Output.line("            devices read \(root)/metadata/ and \(root)/targets/")
        case .flat:
            Output.line("metadata base URL: <your host>/<path to \(out.lastPathComponent)>/metadata/   targets base URL: …/targets/")
        }
        if let flatToo {
            Output.line("also updated the flat-layout export of \(name) in \(out.path)/metadata and /targets (\(flatToo.removedFiles) stale files removed); delete them once nothing reads that layout")
        }
        Output.line("timestamp expires \(expires): re-export and upload before then, or devices refuse the repository as frozen")
    }

    private static func exportJSPatch(_ name: AppName, to out: URL, _ registry: Registry, _ arguments: Arguments) throws(CLIError) {
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

/// `30d`, `12h`, `90m`, `3600s`: a lifetime on the command line.
enum DurationArgument {
    static func parse(_ text: String, option: String, max: TimeInterval) throws(CLIError) -> TimeInterval {
        let units: [Character: TimeInterval] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        guard let unit = text.last.flatMap({ units[$0] }), let count = Int(String(text.dropLast())), count > 0 else {
            throw .usage("\(option) must be a number and a unit (s, m, h or d), e.g. 30d; got \(text.debugSanitized)")
        }
        let seconds = TimeInterval(count) * unit
        guard seconds <= max else { throw .usage("\(option) may be at most \(Int(max / 86_400))d, got \(text.debugSanitized)") }
        return seconds
    }
}
