import HotpatchCLI
import PatchCore
import PatchRegistry

/// `publish --advance 25,50,100 --every 1h`: a staged rollout patchd advances on the
/// channel guard's evidence (Registry.setSchedule), set right after the publish, locally or
/// over `PUT …/patches/{patch}/schedule`.
enum StagedRollout {
    static let options: [Option] = [
        .value("--advance", "PCTS", "then raise the rollout through these percentages, e.g. 25,50,100, one step per --every, only while the channel's guard sees enough devices and a rollback rate whose 95 % upper bound is under its threshold"),
        .value("--every", "DURATION", "at least this long between two steps of --advance (s, m, h or d; at least 1m)"),
    ]

    struct Plan {
        let steps: [Int]
        let everySeconds: Int
    }

    static func plan(_ arguments: Arguments) throws(CLIError) -> Plan? {
        let advance = arguments.value("--advance"), every = arguments.value("--every")
        guard advance != nil || every != nil else { return nil }
        guard let advance, let every else { throw .usage("--advance and --every go together") }
        let steps = advance.split(separator: ",", omittingEmptySubsequences: false).map { Arguments.wholePercent($0) }
        guard !steps.isEmpty, steps.allSatisfy({ $0 != nil }) else { throw .usage("--advance must be percentages like 25,50,100 or 25%,50%,100%, got \(advance.debugSanitized)") }
        let seconds = try DurationArgument.parse(every, option: "--every", max: 30 * 86_400)
        return Plan(steps: steps.compactMap { $0 }, everySeconds: Int(seconds))
    }

    /// Refused before anything is published: a schedule advances on a guard's evidence.
    static func checkGuard(app: AppName, channel: ChannelName, backend: any Backend) throws(CLIError) {
        let guards = try backend.stats(app: app)["guards"]?.arrayValue ?? []
        guard guards.contains(where: { $0["channel"]?.stringValue == channel.rawValue }) else {
            throw .failed("--advance needs a guard on \(channel), whose evidence it advances on: set one first with `patchctl apps guard \(app) --channel \(channel) --max-rollback-rate 2% --min-devices 50`")
        }
    }

    static func apply(_ plan: Plan, app: AppName, version: AppVersion, patch: Int, backend: any Backend) throws(CLIError) -> JSON {
        try ReleaseCall.run(ScheduleOperation(appVersion: version, patch: patch, steps: plan.steps, everySeconds: plan.everySeconds), app: app, backend: backend)
    }

    /// "then 25 %, 50 %, 100 %, at most one step every 3600 s, from 2026-12-01T11:00:00Z, while its guard's evidence allows"
    static func line(_ schedule: JSON) -> String {
        let steps = (schedule["steps"]?.arrayValue ?? []).map { "\($0.intValue ?? 0) %" }.joined(separator: ", ")
        let from = schedule["nextAt"]?.stringValue.map { "from \($0)" } ?? "the first one --every after the publish"
        return "then \(steps), at most one step every \(schedule["everySeconds"]?.intValue ?? 0) s, \(from), while its guard's evidence allows"
    }
}
