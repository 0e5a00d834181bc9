import Foundation
import HotpatchCLI
import PatchCore
import PatchPush
import PatchRegistry

// Each of these commands acts on the local registry, or with --server on a patchd over its
// HTTP API. Both paths produce the same JSON, and one printer renders it, so the output
// cannot differ between them.

struct PublishCommand: Command {
    static let spec = CommandSpec("publish", summary: "Publish a bundle as the next patch of an app version, or of each version a list or range names (hash, encrypt, sign, audit)",
                                  positionals: ["[FILE]"],
                                  options: [.value("--app", "NAME", "the app (default: hotpatch.json's, or the registry's only app)"),
                                            .value("--app-version", "V", "the app version the patch is for, as devices send it, e.g. 2.3; or a list (2.3,2.3.1) or range ('>=2.3 <2.4', 2.3.*) of versions the registry knows, one patch each").required,
                                            .value("--channel", "NAME", "the channel devices follow to get it (default: hotpatch.json's, else production)"),
                                            .value("--rollout", "PCT", "percentage of devices that get it, 25 or 25% (default 100)"),
                                            .value("--message", "TEXT", "release notes, signed with the patch and shown by list and audit"),
                                            .flag("--allow-same", "publish even if the bytes are identical to a live patch of the version and channel"),
                                            .flag("--new-channel", "declare --channel with this publish (a channel not declared is refused, with a did-you-mean)"),
                                            .flag("--strict-version", "refuse (exit 2) a version no device checked for in the last 30 days, instead of warning"),
                                            SkipCheck.option,
                                            .flag("--dry-run", "say what would be published (and to which versions) and change nothing"), ReleaseCall.yes,
                                            .flag("--json", "print JSON"), Notify.option, ExpectPatch.option, SigningKeys.option] + DeliveryOptions.options + StagedRollout.options + Context.globalOptions + Remote.options)

    static func run(_ arguments: Arguments) throws(CLIError) {
        let selector = try arguments.versionSelector()
        guard let version = selector.single else { return try runSeveral(arguments, selector) }
        let staged = try StagedRollout.plan(arguments)
        let rollout = try arguments.percent("--rollout") ?? 100
        let channel = try ChannelDefault.resolve(arguments)
        let message = arguments.value("--message")
        let allowSame = arguments.flag("--allow-same")
        let dryRun = arguments.flag("--dry-run")
        let conditions = try DeliveryOptions.conditions(arguments)
        let backend = try Backends.open(arguments)
        let name = try backend.app(arguments)
        try Notify.check(arguments, backend: backend, app: name, version: version, channel: channel)
        let bundle = try Output.readFile(try bundlePath(arguments, app: name, version: version), what: "bundle", limit: Registry.maxBundleSize)
        if staged != nil { try StagedRollout.checkGuard(app: name, channel: channel, backend: backend) }
        let operation = PublishOperation(appVersion: version, channel: channel, rollout: rollout, message: message, conditions: conditions,
                                         allowSame: allowSame, newChannel: arguments.flag("--new-channel"), strictVersion: arguments.flag("--strict-version"),
                                         skipCheck: arguments.value("--skip-check"), bundle: bundle)
        var patch = try ReleaseCall.run(operation, app: name, backend: backend, arguments)
        warn(patch)
        var schedule: JSON?
        if let staged, dryRun {
            // What would be scheduled, checked by the registry's own rules; nothing is stored.
            do { try Registry.checkSchedule(steps: staged.steps, everySeconds: staged.everySeconds, above: rollout) } catch { throw error.cliError }
            schedule = ["steps": .array(staged.steps.map { .int(Int64($0)) }), "everySeconds": .int(Int64(staged.everySeconds))]
            if var object = patch.objectValue { object["schedule"] = schedule; patch = .object(object) }
        } else if let staged {
            schedule = try StagedRollout.apply(staged, app: name, version: version, patch: Int(patch["patch"]?.intValue ?? 0), backend: backend)
            if var object = patch.objectValue { object["schedule"] = schedule; patch = .object(object) }
        }
        let push = try Notify.ifAsked(arguments, backend: backend, app: name, version: version, channel: channel, reason: "publish")
        if let push, var object = patch.objectValue { object["push"] = push.json; patch = .object(object) }
        if arguments.flag("--json") { Output.json(patch); try Notify.requireReached(push); return }
        let summary = "\(name) \(version) patch \(patch["patch"]?.intValue ?? 0) to \(patch["channel"]?.stringValue ?? "production") (rollout \(patch["rollout"]?.intValue ?? 0)%\(patch["encrypted"]?.boolValue == true ? ", encrypted" : ""))"
        Output.line(dryRun ? "dry run: would publish \(summary)" : "published \(summary)")
        Output.line("sha256 \(patch["sha256"]?.stringValue ?? "")")
        Output.line("md5    \(patch["md5"]?.stringValue ?? "")")
        Output.line("target \(patch["targetPath"]?.stringValue ?? "") in targets version \(patch["targetsVersion"]?.intValue ?? 0)")
        if let conditions { Output.line("only for \(conditions.summary) (signed delivery conditions)") }
        if let schedule { Output.line(StagedRollout.line(schedule)) }
        if let push { Output.line(Notify.line(push)) }
        if dryRun { Output.line("nothing was changed") }
        try Notify.requireReached(push)
    }

    /// A publish to each version a list or range names: one change (one targets version, one
    /// audit event), the expansion said before anything else. It needs FILE (the default bundle
    /// path is one version's) and takes no staged rollout (a schedule advances one patch).
    static func runSeveral(_ arguments: Arguments, _ selector: VersionSelector) throws(CLIError) {
        guard try StagedRollout.plan(arguments) == nil else {
            throw .usage("--advance stages one version's patch; publish to one version to stage it (\(selector) names several)")
        }
        guard let file = arguments.positional(0) else {
            throw .usage("give FILE: --app-version \(selector) names several versions, and the default bundle path is one version's")
        }
        let rollout = try arguments.percent("--rollout") ?? 100
        let channel = try ChannelDefault.resolve(arguments)
        let dryRun = arguments.flag("--dry-run")
        let conditions = try DeliveryOptions.conditions(arguments)
        let backend = try Backends.open(arguments)
        let name = try backend.app(arguments)
        try Notify.check(arguments, backend: backend, app: name, version: nil, channel: channel)
        let bundle = try Output.readFile(file, what: "bundle", limit: Registry.maxBundleSize)
        let operation = PublishOperation(versions: selector, channel: channel, rollout: rollout, message: arguments.value("--message"), conditions: conditions,
                                         allowSame: arguments.flag("--allow-same"), newChannel: arguments.flag("--new-channel"),
                                         strictVersion: arguments.flag("--strict-version"), skipCheck: arguments.value("--skip-check"), bundle: bundle)
        var answer = try ReleaseCall.run(operation, app: name, backend: backend, arguments)
        warn(answer)
        let patches = answer["patches"]?.arrayValue ?? []
        // One round per version: each wakes only the devices that run it.
        var pushes: [PushSummary] = []
        for patch in patches {
            guard let raw = patch["appVersion"]?.stringValue, let version = try? AppVersion(raw) else { continue }
            if let push = try Notify.ifAsked(arguments, backend: backend, app: name, version: version, channel: channel, reason: "publish") { pushes.append(push) }
        }
        if !pushes.isEmpty, var object = answer.objectValue { object["push"] = .array(pushes.map(\.json)); answer = .object(object) }
        if arguments.flag("--json") {
            Output.json(answer)
            for push in pushes { try Notify.requireReached(push) }
            return
        }
        let versions = patches.compactMap { $0["appVersion"]?.stringValue }
        Output.line("\(dryRun ? "dry run: would publish" : "published") to \(versions.count) version\(versions.count == 1 ? "" : "s") of \(name) (\(selector)) in one change: \(versions.joined(separator: ", "))")
        for patch in patches {
            Output.line("  \(patch["appVersion"]?.stringValue ?? "") patch \(patch["patch"]?.intValue ?? 0) to \(patch["channel"]?.stringValue ?? "production") (rollout \(patch["rollout"]?.intValue ?? 0)%\(patch["encrypted"]?.boolValue == true ? ", encrypted" : "")): target \(patch["targetPath"]?.stringValue ?? "")")
        }
        Output.line("sha256 \(answer["sha256"]?.stringValue ?? "")")
        Output.line("md5    \(answer["md5"]?.stringValue ?? "")")
        Output.line("targets version \(answer["targetsVersion"]?.intValue ?? 0)")
        if let conditions { Output.line("only for \(conditions.summary) (signed delivery conditions)") }
        for push in pushes { Output.line(Notify.line(push)) }
        if dryRun { Output.line("nothing was changed") }
        for push in pushes { try Notify.requireReached(push) }
    }

    /// A publish to a version no device asks for, while they ask for others: said on stderr
    /// (stdout stays the answer, `--json`'s included).
    static func warn(_ answer: JSON) {
        if let warning = answer["versionWarning"]?.stringValue { Output.error("warning: \(warning) (--strict-version refuses such a publish)") }
        ScriptCheckOutput.warn(answer)
    }

    /// FILE, or `{patchesDirectory}/{app}/{appVersion}/main.js` (the project file's, relative to
    /// its directory; without one, `patches/` of the current directory).
    static func bundlePath(_ arguments: Arguments, app: AppName, version: AppVersion) throws(CLIError) -> String {
        if let file = arguments.positional(0) { return file }
        let project = try ProjectFile.current.get()
        let path = project?.defaultBundle(appVersion: version).path
            ?? URL(fileURLWithPath: "patches/\(app)/\(version)/main.js").standardizedFileURL.path
        guard FileManager.default.fileExists(atPath: path) else {
            let layout = project.map { "\($0.patchesDirectory)/{app}/{appVersion}/main.js from \($0.location.path)" } ?? "patches/{app}/{appVersion}/main.js"
            throw .failed("no FILE given, and the default bundle \(path) does not exist (the default is \(layout))")
        }
        return path
    }
}

struct RevokeCommand: Command {
    static let spec = CommandSpec("revoke", summary: "Revoke a patch (--patch N), or every active patch of an app version in a channel (--all): devices that run it drop it",
                                  options: [.value("--app", "NAME", "the app (default: hotpatch.json's, or the registry's only app)"),
                                            .value("--app-version", "V", "the app version").required,
                                            .value("--patch", "N", "the patch to revoke"),
                                            .flag("--all", "instead of --patch: every active patch of the version in the channel"),
                                            .value("--channel", "NAME", "with --all, the channel whose patches are revoked (default: hotpatch.json's, else production); with --patch, checked against the patch's"),
                                            .value("--message", "TEXT", "why (one line): kept with the patch, shown by list and audit"),
                                            .flag("--dry-run", "say what would be revoked and change nothing"), ReleaseCall.yes,
                                            .flag("--json", "print JSON"), Notify.option, ExpectPatch.option, SigningKeys.option] + Context.globalOptions + Remote.options)

    static func run(_ arguments: Arguments) throws(CLIError) {
        let version = try arguments.appVersion()
        let number = try arguments.int("--patch", in: 1...Int(Int32.max))
        // One channel: the one named, else (with --all) the project's; a patch named by number
        // is in one channel already, which an explicit --channel must match.
        let channel = number == nil ? try ChannelDefault.resolve(arguments) : try arguments.channel("--channel")
        let operation = try ReleaseCall.make(RevokeOperation.self, [
            "appVersion": version.rawValue, "patch": number.map(String.init), "channel": channel?.rawValue,
            "all": arguments.flag("--all") ? "true" : nil, "message": arguments.value("--message"),
        ])
        let dryRun = arguments.flag("--dry-run")
        let backend = try Backends.open(arguments)
        let name = try backend.app(arguments)
        try Notify.check(arguments, backend: backend, app: name, version: version, channel: channel)
        let revoked = try ReleaseCall.run(operation, app: name, backend: backend, arguments).arrayValue ?? []
        // The channel the revoked patches were in (one: a revoke never spans channels).
        let revokedChannel = try (revoked.first?["channel"]?.stringValue).map { raw throws(CLIError) in
            do { return try ChannelName(raw) } catch { throw CLIError.failed("the server named an invalid channel: \(error)") }
        } ?? channel ?? .production
        let push = try Notify.ifAsked(arguments, backend: backend, app: name, version: version, channel: revokedChannel, reason: "revoke")
        if arguments.flag("--json") {
            Output.json(.array(revoked))
            // The answer is the array of revoked patches; the push figures go beside it.
            if let push { Output.error(Notify.line(push)) }
            try Notify.requireReached(push)
            return
        }
        if let push { Output.line(Notify.line(push)) }
        for patch in revoked {
            if patch["withheld"] != nil {
                Output.line("withheld \(name) \(version) patch \(patch["patch"]?.intValue ?? 0) (\(revokedChannel)) to roll back: devices drop it from their next sync, signed with the withhold key (no second person needed); it stays listed until the release keys revoke it")
                continue
            }
            Output.line("\(dryRun ? "dry run: would revoke" : "revoked") \(name) \(version) patch \(patch["patch"]?.intValue ?? 0) (\(revokedChannel))")
        }
        if dryRun { Output.line("nothing was changed") } else { try NowServed.print(app: name, version: version, backend: backend) }
        try Notify.requireReached(push)
    }
}

struct RolloutCommand: Command {
    static let spec = CommandSpec("rollout", summary: "Change the rollout percentage of an active patch",
                                  options: [.value("--app", "NAME", "the app (default: hotpatch.json's, or the registry's only app)"),
                                            .value("--app-version", "V", "the app version").required,
                                            .value("--patch", "N", "the patch number").required,
                                            // --rollout, as publish names it; --percent is the older spelling.
                                            .value("--rollout", "PCT", "new rollout percentage, 0-100 (25 or 25%)").required.alias("--percent"),
                                            .flag("--dry-run", "say what would change and change nothing"),
                                            .flag("--json", "print JSON"), ExpectPatch.option, SigningKeys.option] + Context.globalOptions + Remote.options)

    static func run(_ arguments: Arguments) throws(CLIError) {
        let version = try arguments.appVersion()
        guard let number = try arguments.int("--patch", in: 1...Int(Int32.max)) else { throw .usage("--patch is required") }
        guard let percent = try arguments.percent("--rollout") else { throw .usage("--rollout is required") }
        let dryRun = arguments.flag("--dry-run")
        if percent == 0 { Output.error("a rollout to 0 % is a halt: `patchctl halt` says so in the audit log, and `patchctl resume` goes back") }
        let backend = try Backends.open(arguments)
        let name = try backend.app(arguments)
        let patch = try ReleaseCall.run(RolloutOperation(appVersion: version, patch: number, percent: percent), app: name, backend: backend, arguments)
        try RolloutOutput.print(patch, app: name, version: version, number: number, dryRun: dryRun, backend: backend, arguments)
    }
}
