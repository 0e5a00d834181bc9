import Foundation
import PatchCore

/// A staged rollout: the percentages still to come and how long each step waits at least.
public struct RolloutSchedule: Sendable, Equatable {
    public let key: PatchKey
    /// Increasing, each above the rollout in force, the last at most 100.
    public let steps: [Int]
    public let everySeconds: Int
    /// When the next step may be taken (server time).
    public let nextAt: String

    public var json: JSON {
        ["appVersion": .string(key.appVersion.rawValue), "channel": .string(key.channel.rawValue), "patch": .int(Int64(key.patch)),
         "steps": .array(steps.map { .int(Int64($0)) }), "everySeconds": .int(Int64(everySeconds)), "nextAt": .string(nextAt)]
    }
}

/// What one upkeep pass did to a schedule.
public enum ScheduleStep: Sendable, Equatable {
    case advanced(PatchKey, from: Int, to: Int)
    /// The patch was halted, revoked or tripped its guard: the schedule is dropped.
    case stopped(PatchKey)

    /// "2.3 production patch 1: 5 % → 25 %" for patchd's log.
    public var text: String {
        switch self {
        case .advanced(let key, let from, let to): return "\(key.appVersion) \(key.channel) patch \(key.patch): \(from) % → \(to) %"
        case .stopped(let key): return "\(key.appVersion) \(key.channel) patch \(key.patch): stopped (halted, revoked or its guard tripped)"
        }
    }
}

extension Registry {
    /// Who schedule steps are recorded as.
    public static let scheduleActor = Actor("patchd schedule")

    /// A schedule's own rules, checked before anything is written (and by `publish --advance
    /// --dry-run`): increasing percentages above 0, the last at most 100, the first above the
    /// rollout in force; one step per 1 minute to 30 days.
    public static func checkSchedule(steps: [Int], everySeconds: Int, above rollout: Int? = nil) throws(RegistryError) {
        guard !steps.isEmpty, zip(steps, steps.dropFirst()).allSatisfy({ $0 < $1 }), let last = steps.last, last <= 100, steps[0] > 0 else {
            throw .invalidInput("--advance must be increasing percentages above 0, the last at most 100, like 25,50,100")
        }
        guard (60...(30 * 86_400)).contains(everySeconds) else { throw .invalidInput("--every must be 1 minute to 30 days") }
        if let rollout, steps[0] <= rollout { throw .conflict("the first step (\(steps[0]) %) must be above the rollout in force (\(rollout) %)") }
    }

    /// Schedules patch `number` to advance through `steps` (e.g. [25, 50, 100]), at most one
    /// step per `everySeconds`, and only on evidence: when the channel's guard's minimum
    /// device count is reached and the 95 % Wilson upper bound of the rollback rate is under
    /// its threshold. A schedule therefore needs a guard on the patch's channel.
    @discardableResult
    public func setSchedule(app: AppName, appVersion: AppVersion, number: Int, steps: [Int], everySeconds: Int,
                            actor: Actor, now: Date = Date()) throws(RegistryError) -> RolloutSchedule {
        try Registry.checkSchedule(steps: steps, everySeconds: everySeconds)
        return try write { () throws -> RolloutSchedule in
            guard let patch = try patches(app: app, appVersion: appVersion, activeOnly: true).first(where: { $0.number == number }) else {
                throw RegistryError.notFound("\(app) \(appVersion) has no active patch \(number)")
            }
            try Registry.checkSchedule(steps: steps, everySeconds: everySeconds, above: patch.rollout)
            guard try guards(app: app).contains(where: { $0.channel == patch.channel }) else {
                throw RegistryError.conflict("a staged rollout advances on a guard's evidence: set one first with `patchctl apps guard \(app) --channel \(patch.channel) --max-rollback-rate 2% --min-devices 50`")
            }
            let schedule = RolloutSchedule(key: PatchKey(appVersion: appVersion, channel: patch.channel, patch: number), steps: steps,
                                           everySeconds: everySeconds, nextAt: TUFTime.format(now.addingTimeInterval(Double(everySeconds))))
            try db.run("""
                INSERT INTO rollout_schedules(app, app_version, number, steps, every_seconds, next_at) VALUES (?,?,?,?,?,?)
                ON CONFLICT(app, app_version, number) DO UPDATE SET steps = excluded.steps, every_seconds = excluded.every_seconds, next_at = excluded.next_at
                """, [.text(app.rawValue), .text(appVersion.rawValue), .int(Int64(number)), .text(steps.map(String.init).joined(separator: ",")),
                      .int(Int64(everySeconds)), .text(schedule.nextAt)])
            try AuditLog.append(db, app: app.rawValue, actor: actor, action: "rollout.schedule", details: schedule.json, at: now)
            return schedule
        }
    }

    /// A due step that waits for evidence, told once per step (a pass every minute would
    /// otherwise tell it every minute), inside the pass's write.
    private func noteScheduleHold(app: AppName, _ figures: [String: JSON], now: Date) throws {
        let mark = "hold:\(figures["appVersion"]?.stringValue ?? ""):\(figures["patch"]?.intValue ?? 0):\(figures["step"]?.intValue ?? 0)"
        _ = try WebhookOutbox.enqueueOnce(db, try WebhookEvent.make(type: "rollout.schedule.hold", app: app.rawValue, at: now,
                                                                    actor: Registry.scheduleActor.name, details: figures), mark: mark)
    }

    public func schedules(app: AppName) throws(RegistryError) -> [RolloutSchedule] {
        let rows = try read { () throws(StorageError) in
            try db.query("""
                SELECT s.app_version, COALESCE(r.channel, 'production'), s.number, s.steps, s.every_seconds, s.next_at FROM rollout_schedules s
                LEFT JOIN patch_releases r ON r.app = s.app AND r.app_version = s.app_version AND r.number = s.number
                WHERE s.app = ? ORDER BY s.app_version, s.number
                """, [.text(app.rawValue)]) { s -> RolloutSchedule? in
                guard let version = try? AppVersion(s.text(0)), let channel = try? ChannelName(s.text(1)) else { return nil }
                let steps = s.text(3).split(separator: ",").compactMap { Int($0) }
                return RolloutSchedule(key: PatchKey(appVersion: version, channel: channel, patch: Int(s.int(2))), steps: steps,
                                       everySeconds: Int(s.int(4)), nextAt: s.text(5))
            }
        }
        return try Registry.intact(rows, what: "rollout_schedules")
    }

    /// Takes the schedule steps that are due: a patch whose installed devices reach its
    /// guard's minimum and whose rollback rate's 95 % Wilson **upper** bound is under the
    /// threshold, installed from at least `evidence.minBlocks` blocks, advances one step (re-signed, audited as `patch.rollout` by `patchd
    /// schedule`); one without that evidence waits (the next pass looks again); one that was
    /// halted, revoked or tripped its guard loses its schedule. Reports can hold a step back
    /// but never bring one forward: no step is taken before its time, none beyond the
    /// percentages someone scheduled.
    public func advanceSchedules(app: AppName, rules evidence: ReportRules = ReportRules(), now: Date = Date()) throws(RegistryError) -> [ScheduleStep] {
        let due = try schedules(app: app).filter { (TUFTime.parse($0.nextAt) ?? .distantFuture) <= now }
        guard !due.isEmpty else { return [] }
        var waiting: [(key: PatchKey, percent: Int)] = []
        let steps = try write { () throws -> [ScheduleStep] in
            let rules = Dictionary(try guards(app: app).map { ($0.channel, $0) }) { a, _ in a }
            let tripped = Set(try guardTrips(app: app).map(\.key))
            var done: [ScheduleStep] = []
            for schedule in due {
                let key = schedule.key
                let values: [SQLValue] = [.text(app.rawValue), .text(key.appVersion.rawValue), .int(Int64(key.patch))]
                let patch = try patches(app: app, appVersion: key.appVersion, activeOnly: false).first { $0.number == key.patch }
                guard let patch, patch.state == .active, patch.rollout > 0, !tripped.contains(key), let next = schedule.steps.first else {
                    try db.run("DELETE FROM rollout_schedules WHERE app = ? AND app_version = ? AND number = ?", values)
                    try AuditLog.append(db, app: app.rawValue, actor: Registry.scheduleActor, action: "rollout.schedule.stop", details: schedule.json, at: now)
                    done.append(.stopped(key))
                    continue
                }
                var evidenceFigures: [String: JSON] = ["appVersion": .string(key.appVersion.rawValue), "channel": .string(key.channel.rawValue),
                                                       "patch": .int(Int64(key.patch)), "step": .int(Int64(next)), "from": .int(Int64(patch.rollout))]
                guard let rule = rules[key.channel] else {  // guard removed: wait until one is set again
                    evidenceFigures["why"] = .string("no guard on \(key.channel): a staged rollout steps only on a guard's evidence")
                    try noteScheduleHold(app: app, evidenceFigures, now: now)
                    continue
                }
                let figures = try reportFigures(app: app).first { $0.key.appVersion == key.appVersion && $0.key.channel == key.channel && $0.key.patch == key.patch }
                let installed = figures?.count(.installed) ?? 0
                let rolledBack = figures?.count(.rolledBack) ?? 0
                let rate = WilsonInterval(successes: rolledBack, trials: installed)
                let blocks = try reportBlocks(app: app, key: key, event: .installed)
                // The figures that decided, in the webhook event of the step or the hold.
                evidenceFigures.merge(["installed": .int(Int64(installed)), "rolledBack": .int(Int64(rolledBack)),
                                       "upperPpm": .int(Int64((rate.upper * 1_000_000).rounded(.up))), "thresholdPpm": .int(Int64(rule.maxRollbackPPM)),
                                       "minDevices": .int(Int64(rule.minDevices)), "installedBlocks": .int(Int64(blocks)),
                                       "minBlocks": .int(Int64(evidence.minBlocks))]) { $1 }
                guard installed >= rule.minDevices, rate.upper * 1_000_000 < Double(rule.maxRollbackPPM), blocks >= evidence.minBlocks else {
                    evidenceFigures["why"] = .string(installed < rule.minDevices ? "\(installed) of the \(rule.minDevices) installed devices needed"
                        : blocks < evidence.minBlocks ? "installs from \(blocks) of the \(evidence.minBlocks) address blocks needed"
                        : "rollback rate upper bound \(WilsonInterval.percentText(ppm: Int((rate.upper * 1_000_000).rounded(.up)))) is not under \(WilsonInterval.percentText(ppm: rule.maxRollbackPPM))")
                    try noteScheduleHold(app: app, evidenceFigures, now: now)
                    continue
                }
                // Keys patchd does not hold (the two-person rule): the step is proposed below and
                // waits for their holders; once it has landed (the rollout is there) it is taken.
                if patch.rollout < next {
                    guard try holdsSigningKeys(app: app, channel: key.channel) else {
                        waiting.append((key, next))
                        continue
                    }
                    try setRollout(app: app, appVersion: key.appVersion, number: key.patch, percent: next, actor: Registry.scheduleActor, now: now)
                }
                evidenceFigures["to"] = .int(Int64(next))
                try WebhookOutbox.enqueue(db, try WebhookEvent.make(type: "rollout.schedule.step", app: app.rawValue, at: now,
                                                                    actor: Registry.scheduleActor.name, details: evidenceFigures))
                let rest = Array(schedule.steps.dropFirst())
                if rest.isEmpty {
                    try db.run("DELETE FROM rollout_schedules WHERE app = ? AND app_version = ? AND number = ?", values)
                } else {
                    try db.run("UPDATE rollout_schedules SET steps = ?, next_at = ? WHERE app = ? AND app_version = ? AND number = ?",
                               [.text(rest.map(String.init).joined(separator: ",")), .text(TUFTime.format(now.addingTimeInterval(Double(schedule.everySeconds))))] + values)
                }
                done.append(.advanced(key, from: patch.rollout, to: next))
            }
            return done
        }
        for (key, percent) in waiting {
            do {
                try setRollout(app: app, appVersion: key.appVersion, number: key.patch, percent: percent, actor: Registry.scheduleActor, now: now)
            } catch .pending {
                // Stored once (a later pass finds the same change waiting).
            }
        }
        return steps
    }
}
