import Foundation
import HotpatchCLI
import PatchCore
import PatchRegistry

/// `patchctl rollback`: undoes the newest release of an app version and channel — its newest
/// patch that is not revoked, live, staged or halted alike, as CodePush's rollback does — and
/// says what devices get now; refused when nothing would be left. `--patch N` names the
/// release. `rollback --to N` instead publishes patch N's exact bytes again as the next patch
/// (signed `rolledBackTo`), as CodePush's `--targetRelease` and EAS's `update:rollback` do.
/// Which patch, and the refusal, are the server's rule (`Registry.rollBackRelease`).
struct RollbackCommand: Command {
    static let spec = CommandSpec("rollback", summary: "Undo the newest release of an app version (live, staged or halted: devices that run it go back), or publish patch N's bytes again with --to N",
                                  options: [.value("--app", "NAME", "the app (default: hotpatch.json's, or the registry's only app)"),
                                            .value("--app-version", "V", "the app version").required,
                                            .value("--channel", "NAME", "the channel whose release is rolled back (default: hotpatch.json's, else production)"),
                                            .value("--patch", "N", "the release to undo (default: the newest patch of the channel that is not revoked)"),
                                            .value("--to", "N", "instead: publish patch N's bytes again as the channel's next patch (signed rolledBackTo; N may be revoked)"),
                                            .value("--rollout", "PCT", "with --to: percentage of devices that get the new patch (default 100)"),
                                            .value("--message", "TEXT", "why (kept with the revoked patch); with --to, release notes of the new patch (default: patch N's)"),
                                            .flag("--dry-run", "say what would be rolled back and what devices would get then; change nothing"),
                                            SkipCheck.option,
                                            .flag("--json", "print JSON"), Notify.option,
                                            .value("--expect-patch", "N", "change nothing (exit 2) unless the release undone is patch N (with --to: unless the newest live patch is N; 0: none)"),
                                            SigningKeys.option] + Context.globalOptions + Remote.options)

    static func run(_ arguments: Arguments) throws(CLIError) {
        let version = try arguments.appVersion()
        let channel = try ChannelDefault.resolve(arguments)
        let operation = try ReleaseCall.make(RollbackOperation.self, [
            "appVersion": version.rawValue, "channel": channel.rawValue,
            "patch": try arguments.int("--patch", in: 1...Int(Int32.max)).map(String.init),
            "to": try arguments.int("--to", in: 1...Int(Int32.max)).map(String.init),
            "rollout": try arguments.percent("--rollout").map(String.init), "message": arguments.value("--message"),
            "skipCheck": arguments.value("--skip-check"),
        ])
        let backend = try Backends.open(arguments)
        let name = try backend.app(arguments)
        try Notify.check(arguments, backend: backend, app: name, version: version, channel: channel)
        let answer = try ReleaseCall.run(operation, app: name, backend: backend, arguments)
        if operation.to != nil { ScriptCheckOutput.warn(answer) }
        let dryRun = arguments.flag("--dry-run")
        let line: String
        if let target = operation.to {
            let number = answer["patch"]?.intValue ?? 0
            if dryRun {
                if arguments.flag("--json") { Output.json(["dryRun": true, "wouldPublish": answer]); return }
                Output.line("dry run: would publish \(name) \(version) patch \(target)'s bytes again as patch \(number) (\(channel)); nothing was changed")
                return
            }
            line = "rolled \(name) \(version) (\(channel)) back to patch \(target): its bytes published again as patch \(number) (signed rolledBackTo \(target))"
        } else {
            let number = answer["revoked"]?["patch"]?.intValue ?? 0
            let then = answer["now"]?["summary"]?.stringValue ?? ""
            if dryRun {
                if arguments.flag("--json") { Output.json(answer); return }
                Output.line("dry run: would revoke \(name) \(version) patch \(number) (\(channel)); nothing was changed")
                Output.line("then: \(then)")
                return
            }
            line = "revoked \(name) \(version) patch \(number) (\(channel))"
        }
        let now = try NowServed.serving(app: name, version: version, channel: channel, backend: backend)
        let push = try Notify.ifAsked(arguments, backend: backend, app: name, version: version, channel: channel, reason: "rollback")
        if arguments.flag("--json") {
            var json: [String: JSON] = [operation.to == nil ? "revoked" : "published": operation.to == nil ? answer["revoked"] ?? .null : answer,
                                        "now": now.json]
            if let push { json["push"] = push.json }
            Output.json(.object(json))
        } else {
            Output.line(line)
            if let push { Output.line(Notify.line(push)) }
            Output.line(NowServed.line(now))
        }
        try Notify.requireReached(push)
    }
}
