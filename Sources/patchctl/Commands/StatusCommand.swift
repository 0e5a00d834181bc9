import Foundation
import PatchCore
import PatchRegistry

/// `patchctl status`: per app and app version, what devices get now (the rollout split, from
/// the rule server and client apply) and each role's metadata version and expiry, from the
/// local registry or with --server from `GET /v1/apps/{app}/status`.
struct StatusCommand: Command {
    static let spec = CommandSpec("status", summary: "Show what devices get now per app version (the rollout split) and each role's metadata version and expiry",
                                  options: [.value("--app", "NAME", "only this app (default: every app of the registry)"),
                                            .flag("--json", "print JSON")] + Context.globalOptions + Remote.options)

    static func run(_ arguments: Arguments) throws(CLIError) {
        let name = try arguments.optionalAppName()
        // Both paths give AppStatus.json, one object per app; one printer renders it.
        var apps: [JSON] = []
        if let remote = try Remote.from(arguments) {
            // Without --app: hotpatch.json's app, else every app the token may read (GET /v1/apps).
            let projectApp = try ProjectFile.current.get()?.app
            var names = [(name ?? projectApp)?.rawValue].compactMap { $0 }
            if names.isEmpty { names = try AppsListCommand.remoteApps(remote).compactMap { $0["app"]?.stringValue } }
            for app in names { apps.append(try remote.json("GET", "/v1/apps/\(app)/status")) }
        } else {
            let registry = try Context(arguments: arguments).openRegistry()
            do { apps = try registry.status(app: name).map(\.json) } catch { throw error.cliError }
        }
        if arguments.flag("--json") { Output.json(["apps": .array(apps)]); return }
        guard !apps.isEmpty else { Output.line("no apps"); return }
        let now = Date()
        for (index, app) in apps.enumerated() {
            if index > 0 { Output.line() }
            Output.line("app \(app["app"]?.stringValue ?? "")")
            let metadata = app["metadata"]?.objectValue ?? [:]
            Output.line(table(["ROLE", "VERSION", "EXPIRES", ""], Role.allCases.compactMap { role in
                metadata[role.rawValue].map { m in
                    let expires = m["expires"]?.stringValue ?? ""
                    return [role.rawValue, String(m["version"]?.intValue ?? 0), expires, Self.remaining(until: expires, now: now)]
                }
            }))
            let versions = app["versions"]?.arrayValue ?? []
            if versions.isEmpty { Output.line("no patches"); continue }
            Output.line(table(["VERSION", "DEVICES GET NOW"], versions.map { v in
                // A server from before conditions sends no summary: the split alone.
                [v["appVersion"]?.stringValue ?? "", v["summary"]?.stringValue ?? (v["served"]?.arrayValue ?? []).map { share in
                    Rollout.Share(patch: share["patch"]?.intValue.map(Int.init), basisPoints: Int(share["basisPoints"]?.intValue ?? 0)).text
                }.joined(separator: ", ")]
            }))
        }
    }

    /// "in 29 days", "in 23 h", "EXPIRED".
    static func remaining(until expires: String, now: Date) -> String {
        guard let date = TUFTime.parse(expires) else { return "" }
        let seconds = date.timeIntervalSince(now)
        if seconds <= 0 { return "EXPIRED" }
        return seconds >= 2 * 86_400 ? "in \(Int(seconds / 86_400)) days" : "in \(Int(seconds / 3600)) h"
    }
}
