import Foundation
import HotpatchCLI
import PatchCore
import PatchRegistry

/// `patchctl promote`: the script QA tested on one channel becomes the next patch of
/// another (Registry.promote), locally or over `--server`.
struct PromoteCommand: Command {
    static let spec = CommandSpec("promote", summary: "Publish a patch of one channel (same plaintext, same sha256) as the next patch of another",
                                  options: [.value("--app", "NAME", "the app (default: hotpatch.json's, or the registry's only app)"),
                                            .value("--app-version", "V", "the app version").required,
                                            .value("--from", "CHANNEL", "the channel the tested patch is in, e.g. staging").required,
                                            .value("--to", "CHANNEL", "the channel to publish it to, e.g. production").required,
                                            .value("--patch", "N", "the patch to promote (default: the newest active patch of --from)"),
                                            .value("--rollout", "PCT", "percentage of devices that get it, 25 or 25% (default 100)"),
                                            .value("--message", "TEXT", "release notes, signed with the new patch and shown by list and audit"),
                                            .flag("--dry-run", "say what would be promoted and change nothing"), SkipCheck.option,
                                            .flag("--json", "print JSON"), Notify.option, ExpectPatch.option, SigningKeys.option] + Context.globalOptions + Remote.options)

    static func run(_ arguments: Arguments) throws(CLIError) {
        let version = try arguments.appVersion()
        guard let from = try arguments.channel("--from") else { throw .usage("--from is required") }
        guard let to = try arguments.channel("--to") else { throw .usage("--to is required") }
        let number = try arguments.int("--patch", in: 1...Int(Int32.max))
        let rollout = try arguments.percent("--rollout") ?? 100
        let message = arguments.value("--message")
        let dryRun = arguments.flag("--dry-run")
        let backend = try Backends.open(arguments)
        let name = try backend.app(arguments)
        try Notify.check(arguments, backend: backend, app: name, version: version, channel: to)
        let operation = PromoteOperation(appVersion: version, from: from, to: to, patch: number, rollout: rollout, message: message,
                                         skipCheck: arguments.value("--skip-check"))
        var patch = try ReleaseCall.run(operation, app: name, backend: backend, arguments)
        ScriptCheckOutput.warn(patch)
        let push = try Notify.ifAsked(arguments, backend: backend, app: name, version: version, channel: to, reason: "promote")
        if let push, var object = patch.objectValue { object["push"] = push.json; patch = .object(object) }
        if arguments.flag("--json") { Output.json(patch); try Notify.requireReached(push); return }
        if let push { Output.line(Notify.line(push)) }
        let origin = patch["promotedFrom"]
        let summary = "\(name) \(version) patch \(origin?["patch"]?.intValue ?? 0) of \(from) as patch \(patch["patch"]?.intValue ?? 0) of \(to) (rollout \(patch["rollout"]?.intValue ?? 0)%)"
        Output.line(dryRun ? "dry run: would promote \(summary)" : "promoted \(summary)")
        Output.line("sha256 \(patch["sha256"]?.stringValue ?? "") (the same plaintext; signed as promotedFrom \(from) patch \(origin?["patch"]?.intValue ?? 0))")
        Output.line("target \(patch["targetPath"]?.stringValue ?? "") in targets version \(patch["targetsVersion"]?.intValue ?? 0)")
        if dryRun {
            Output.line("nothing was changed")
        } else if let served = try NowServed.servings(app: name, version: version, backend: backend).first(where: { $0.channel == to }) {
            Output.line(NowServed.line(served))
        }
        try Notify.requireReached(push)
    }
}
