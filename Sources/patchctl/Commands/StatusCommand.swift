import Foundation
import PatchCore
import PatchRegistry

/// `patchctl status`: per app and app version, what devices get now (the rollout split, from
/// the rule server and client apply) and each role's metadata version and expiry.
struct StatusCommand: Command {
    static let spec = CommandSpec("status", summary: "Show what devices get now per app version (the rollout split) and each role's metadata version and expiry",
                                  options: [.value("--app", "NAME", "only this app (default: every app of the registry)"),
                                            .flag("--json", "print JSON")] + Context.globalOptions)

    static func run(_ arguments: Arguments) throws(CLIError) {
        let name = try arguments.optionalAppName()
        // Local only: it reads the registry's own records (no server route gives the split yet).
        let registry = try Context(arguments: arguments).openRegistry()
        let apps: [AppStatus]
        do { apps = try registry.status(app: name) } catch { throw error.cliError }
        if arguments.flag("--json") { Output.json(["apps": .array(apps.map(\.json))]); return }
        guard !apps.isEmpty else { Output.line("no apps"); return }
        let now = Date()
        for (index, app) in apps.enumerated() {
            if index > 0 { Output.line() }
            Output.line("app \(app.app)")
            Output.line(table(["ROLE", "VERSION", "EXPIRES", ""], app.metadata.map { role in
                [role.role.rawValue, String(role.version), role.expires, Self.remaining(until: role.expires, now: now)]
            }))
            if app.versions.isEmpty { Output.line("no patches"); continue }
            Output.line(table(["VERSION", "DEVICES GET NOW"], app.versions.map { [$0.appVersion.rawValue, $0.summary] }))
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
