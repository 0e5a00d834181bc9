import Foundation
import HotpatchCLI
import PatchCore
import PatchRegistry

struct ListCommand: Command {
    static let spec = CommandSpec("list", summary: "List patches (the audit listing of what is live): digests, size, rollout, who and when",
                                  options: [.value("--app", "NAME", "only this app (with --server: default every app the token may read)"),
                                            // "active" is the stored state (not revoked); a superseded or halted patch is active but reaches no device.
                                            .flag("--active", "only active patches (not revoked; includes superseded and halted ones, see DELIVERY)"),
                                            .flag("--json", "print JSON")] + Context.globalOptions + Remote.options)

    static func run(_ arguments: Arguments) throws(CLIError) {
        let name = try arguments.optionalAppName()
        let active = arguments.flag("--active")
        let backend = try Backends.open(arguments)
        var patches: [JSON] = []
        for app in try backend.apps(name) { patches += try backend.patches(app: app, activeOnly: active) }
        patches = try DeviceFigures.annotate(NowServed.annotate(patches), backend: backend)
        if arguments.flag("--json") { Output.json(.array(patches)); return }
        guard !patches.isEmpty else { Output.line(active ? "no active patches" : "no patches"); return }
        Output.line(table(["APP", "VERSION", "CHANNEL", "PATCH", "ROLLOUT", "STATE", "DELIVERY"] + DeviceFigures.columns + ["SIZE", "SHA256", "MD5", "PUBLISHED", "BY"], patches.map { p in
            [p["app"]?.stringValue ?? "", p["appVersion"]?.stringValue ?? "", p["channel"]?.stringValue ?? "production",
             String(p["patch"]?.intValue ?? 0), "\(p["rollout"]?.intValue ?? 0)%",
             (p["state"]?.stringValue ?? "") + (p["encrypted"]?.boolValue == true ? "+enc" : ""), p["delivery"]?.stringValue ?? ""] + DeviceFigures.cells(p) + [String(p["length"]?.intValue ?? 0),
             p["sha256"]?.stringValue ?? "", p["md5"]?.stringValue ?? "", p["publishedAt"]?.stringValue ?? "", p["publishedBy"]?.stringValue ?? ""]
        }))
        ReleaseNotes.print(patches)
    }
}
