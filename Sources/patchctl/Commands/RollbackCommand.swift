import Foundation
import PatchCore
import PatchRegistry

/// `patchctl rollback`: revokes the newest patch some devices of an app version are served,
/// so they fall back to what the rule picks next, and says what that is.
struct RollbackCommand: Command {
    static let spec = CommandSpec("rollback", summary: "Revoke the newest live patch of an app version and show what devices get now",
                                  options: [.value("--app", "NAME", "the app (default: hotpatch.json's, or the registry's only app)"),
                                            .value("--app-version", "V", "the app version").required,
                                            .value("--channel", "NAME", "the channel whose newest live patch is rolled back (default: hotpatch.json's, else production)"),
                                            .flag("--dry-run", "say what would be revoked and what devices would get then; change nothing"),
                                            .flag("--json", "print JSON"), Notify.option] + Context.globalOptions + Remote.options)

    static func run(_ arguments: Arguments) throws(CLIError) {
        let version = try arguments.appVersion()
        let channel = try ChannelDefault.resolve(arguments)
        let remote = try Remote.from(arguments)
        try Notify.check(arguments, remote: remote)
        let context = try Context(arguments: arguments)
        let registry = remote == nil ? try context.openRegistry() : nil
        let name = try AppDefault.resolve(arguments, registry: registry)
        // An unknown app is "unknown app", not "nothing to roll back".
        if let registry { do { _ = try registry.app(name) } catch { throw error.cliError } }
        try Notify.check(arguments, registry: registry, app: name)
        let before = try NowServed.serving(app: name, version: version, channel: channel, remote: remote, registry: registry)
        guard let number = before.newestLive else {
            throw .failed("\(name) \(version) has no live patch on \(channel) to roll back (devices get: \(before.summary))")
        }
        let dryRun = arguments.flag("--dry-run")
        if dryRun {
            // What the split would be without the patch: the same rule over the same patches.
            let entries = try NowServed.entries(app: name, version: version, remote: remote, registry: registry)
                .map { $0.number == number ? $0.revoked : $0 }
            let after = VersionServing(app: name, appVersion: version, channel: channel, entries: entries)
            if arguments.flag("--json") { Output.json(["dryRun": true, "wouldRevoke": .int(Int64(number)), "now": before.json, "then": after.json]); return }
            Output.line("dry run: would revoke \(name) \(version) patch \(number); nothing was changed")
            Output.line(NowServed.line(before))
            Output.line("then: \(after.summary)")
            return
        }
        let revoked: JSON
        if let registry {
            do { revoked = try registry.revoke(app: name, appVersion: version, number: number, actor: context.actor).first?.json ?? .null } catch { throw error.cliError }
        } else if let remote {
            revoked = try remote.json("POST", "/v1/apps/\(name)/versions/\(version)/patches/\(number)/revoke").arrayValue?.first ?? .null
        } else {
            throw .failed("no registry and no server")
        }
        let after = try NowServed.serving(app: name, version: version, channel: channel, remote: remote, registry: registry)
        let push = try Notify.ifAsked(arguments, registry: registry, app: name, version: version, channel: channel, reason: "rollback", actor: context.actor)
        if arguments.flag("--json") {
            var json: [String: JSON] = ["revoked": revoked, "now": after.json]
            if let push { json["push"] = push.json }
            Output.json(.object(json))
            try Notify.requireReached(push)
            return
        }
        Output.line("revoked \(name) \(version) patch \(number)")
        if let push { Output.line(Notify.line(push)) }
        Output.line(NowServed.line(after))
        try Notify.requireReached(push)
    }
}
