import Foundation
import HotpatchCLI
import PatchCore
import PatchRegistry

struct ListCommand: Command {
    static let spec = CommandSpec("list", summary: "List patches (the audit listing of what is live): digests, size, rollout, the script check each passed, who and when",
                                  options: ListedApps.options + [
                                            .flag("--active", "only the patches served now (DELIVERY live: some device is offered it; not superseded, halted or revoked)"),
                                            .flag("--json", "print JSON")] + Context.globalOptions + Remote.options)

    static func run(_ arguments: Arguments) throws(CLIError) {
        let name = try ListedApps.named(arguments)
        let active = arguments.flag("--active")
        let backend = try Backends.open(arguments)
        var patches: [JSON] = []
        for app in try ListedApps.names(name, backend: backend) { patches += try backend.patches(app: app, activeOnly: active) }
        // "Active" is what a release engineer reads as "what devices run now": a superseded or
        // halted patch is not revoked but is offered to no device, so it is left out. Filtered
        // here on the delivery the listing itself gives, so a server from before `active=true`
        // meant "served now" (it sent every patch not revoked) answers the same.
        patches = NowServed.annotate(patches)
        if active { patches = patches.filter { $0["delivery"]?.stringValue == Delivery.live.rawValue } }
        patches = try DeviceFigures.annotate(patches, backend: backend)
        if arguments.flag("--json") { Output.json(.array(patches)); return }
        guard !patches.isEmpty else { Output.line(active ? "no patches served now" : "no patches"); return }
        Output.line(table(["APP", "VERSION", "CHANNEL", "PATCH", "ROLLOUT", "STATE", "DELIVERY", "CHECK"] + DeviceFigures.columns + ["SIZE", "SHA256", "MD5", "PUBLISHED", "BY"], patches.map { p in
            [p["app"]?.stringValue ?? "", p["appVersion"]?.stringValue ?? "", p["channel"]?.stringValue ?? "production",
             String(p["patch"]?.intValue ?? 0), "\(p["rollout"]?.intValue ?? 0)%",
             (p["state"]?.stringValue ?? "") + (p["encrypted"]?.boolValue == true ? "+enc" : ""), p["delivery"]?.stringValue ?? "",
             // A patch from before the script check has none.
             p["check"].flatMap(PatchCheckRecord.init(json:))?.label ?? "-"] + DeviceFigures.cells(p) + [String(p["length"]?.intValue ?? 0),
             p["sha256"]?.stringValue ?? "", p["md5"]?.stringValue ?? "", p["publishedAt"]?.stringValue ?? "", p["publishedBy"]?.stringValue ?? ""]
        }))
        ReleaseNotes.print(patches)
    }
}
