import Foundation
import HotpatchCLI
import PatchCore
import PatchRegistry

/// `patchctl rollback`: revokes the newest patch some devices of an app version are served,
/// so they fall back to what the rule picks next, and says what that is; refused when nothing
/// would be left. `rollback --to N` instead publishes patch N's exact bytes again as the next
/// patch (signed `rolledBackTo`), as CodePush's `rollback --targetRelease` and EAS's
/// `update:rollback` republish an earlier release.
struct RollbackCommand: Command {
    static let spec = CommandSpec("rollback", summary: "Revoke the newest live patch of an app version (or publish patch N's bytes again with --to N) and show what devices get now",
                                  options: [.value("--app", "NAME", "the app (default: hotpatch.json's, or the registry's only app)"),
                                            .value("--app-version", "V", "the app version").required,
                                            .value("--channel", "NAME", "the channel whose newest live patch is rolled back (default: hotpatch.json's, else production)"),
                                            .value("--to", "N", "publish patch N's bytes again as the channel's next patch (signed rolledBackTo; N may be revoked) instead of revoking"),
                                            .value("--message", "TEXT", "with --to: release notes of the new patch (default: patch N's)"),
                                            .flag("--dry-run", "say what would be revoked and what devices would get then; change nothing"),
                                            .flag("--json", "print JSON"), Notify.option, ExpectPatch.option, SigningKeys.option] + Context.globalOptions + Remote.options)

    static func run(_ arguments: Arguments) throws(CLIError) {
        let version = try arguments.appVersion()
        let channel = try ChannelDefault.resolve(arguments)
        let backend = try Backends.open(arguments)
        let name = try backend.app(arguments)
        // An unknown app is "unknown app", not "nothing to roll back".
        try backend.requireApp(name)
        try Notify.check(arguments, backend: backend, app: name, version: version, channel: channel)
        if let target = try arguments.int("--to", in: 1...Int(Int32.max)) {
            return try rollBack(to: target, arguments, app: name, version: version, channel: channel, backend: backend)
        }
        if arguments.value("--message") != nil { throw .usage("--message goes with --to (a plain rollback revokes; revoke --message says why)") }
        let before = try NowServed.serving(app: name, version: version, channel: channel, backend: backend)
        guard let number = before.newestLive else {
            throw .failed("\(name) \(version) has no live patch on \(channel) to roll back (devices get: \(before.summary))")
        }
        let dryRun = arguments.flag("--dry-run")
        let expected = try ExpectPatch.value(arguments)
        // What the split would be without the patch: the same rule over the same patches.
        let entries = try backend.servingEntries(app: name, version: version)
            .map { $0.number == number ? $0.revoked : $0 }
        let after = VersionServing(app: name, appVersion: version, channel: channel, entries: entries)
        // A rollback goes back to something: one that would leave every device of the channel
        // without a patch (a retried CI job rolling back twice) is refused; taking the last
        // patch away is a revoke, said as one.
        guard after.shares.contains(where: { $0.patch != nil }) || !after.conditional.isEmpty else {
            throw .failed("rolling back \(name) \(version) patch \(number) would leave \(channel) with no patch (devices get: \(after.summary)); nothing was changed. To go back to an earlier patch: `patchctl rollback --app \(name) --app-version \(version) --channel \(channel) --to N`; to take it away anyway: `patchctl revoke --app \(name) --app-version \(version) --patch \(number)`")
        }
        if dryRun {
            if arguments.flag("--json") { Output.json(["dryRun": true, "wouldRevoke": .int(Int64(number)), "now": before.json, "then": after.json]); return }
            Output.line("dry run: would revoke \(name) \(version) patch \(number); nothing was changed")
            Output.line(NowServed.line(before))
            Output.line("then: \(after.summary)")
            return
        }
        let revoked = try backend.revoke(app: name, version: version, patch: number, channel: channel, message: nil, expect: expected,
                                         dryRun: false).first ?? .null
        try finish(arguments, app: name, version: version, channel: channel, backend: backend,
                   result: ("revoked", revoked), line: "revoked \(name) \(version) patch \(number) (\(channel))")
    }

    /// What both ways end with: the push if asked, then the change and what devices get now
    /// (`{key: result, "now": …, "push": …}` with --json).
    private static func finish(_ arguments: Arguments, app name: AppName, version: AppVersion, channel: ChannelName, backend: any Backend,
                               result: (key: String, value: JSON), line: String) throws(CLIError) {
        let now = try NowServed.serving(app: name, version: version, channel: channel, backend: backend)
        let push = try Notify.ifAsked(arguments, backend: backend, app: name, version: version, channel: channel, reason: "rollback")
        if arguments.flag("--json") {
            var json: [String: JSON] = [result.key: result.value, "now": now.json]
            if let push { json["push"] = push.json }
            Output.json(.object(json))
        } else {
            Output.line(line)
            if let push { Output.line(Notify.line(push)) }
            Output.line(NowServed.line(now))
        }
        try Notify.requireReached(push)
    }

    /// `--to N`: the registry republishes patch N's bytes (Registry.rollBack), locally or over
    /// the server's rollback route, and the command says what devices get then.
    private static func rollBack(to target: Int, _ arguments: Arguments, app name: AppName, version: AppVersion, channel: ChannelName,
                                 backend: any Backend) throws(CLIError) {
        let dryRun = arguments.flag("--dry-run"), message = arguments.value("--message")
        let expected = try ExpectPatch.value(arguments)
        let published = try backend.rollBack(app: name, version: version, channel: channel, to: target, message: message, expect: expected,
                                             dryRun: dryRun)
        let number = published["patch"]?.intValue ?? 0
        if dryRun {
            if arguments.flag("--json") { Output.json(["dryRun": true, "wouldPublish": published]); return }
            Output.line("dry run: would publish \(name) \(version) patch \(target)'s bytes again as patch \(number) (\(channel)); nothing was changed")
            return
        }
        try finish(arguments, app: name, version: version, channel: channel, backend: backend,
                   result: ("published", published),
                   line: "rolled \(name) \(version) (\(channel)) back to patch \(target): its bytes published again as patch \(number) (signed rolledBackTo \(target))")
    }
}
