import Foundation
import PatchCore

/// A patch's rollout percentage: set (`rollout`), stopped (`halt`: 0 %, devices that installed
/// it keep it) and started again (`resume`: back to where the halt found it). One write path
/// for all three, so a halt by hand, by a guard or by a schedule is recorded the same way.
extension Registry {
    /// Changes the rollout percentage of an active patch and re-signs targets. Setting the
    /// percentage it already has changes nothing: no new metadata, no audit event
    /// (`changed` is false), so a retried or scripted command does not bump versions.
    @discardableResult
    public func setRollout(app name: AppName, appVersion: AppVersion, number: Int, percent: Int, expectLive: Int? = nil, dryRun: Bool = false,
                           actor: Actor, now: Date = Date()) throws(RegistryError) -> RolloutChange {
        guard (0...100).contains(percent) else { throw .invalidInput("rollout must be a percentage from 0 to 100, got \(percent)") }
        let change = ReleaseChange(RolloutOperation(appVersion: appVersion, patch: number, percent: percent))
        return try changeRollout(app: name, appVersion: appVersion, number: number, expectLive: expectLive, dryRun: dryRun, actor: actor, now: now,
                                 change: change, action: "patch.rollout") { _ throws(RegistryError) in percent }
    }

    /// `patchctl halt`: the patch is offered to no more devices (rollout 0 %); devices that
    /// installed it keep it until a newer patch or a revoke reaches them. Audited as
    /// `patch.halt` with the percentage it had, which `resume` goes back to. Halting a halted
    /// patch changes nothing (`changed` false).
    @discardableResult
    public func halt(app name: AppName, appVersion: AppVersion, number: Int, message: String? = nil, expectLive: Int? = nil, dryRun: Bool = false,
                     actor: Actor, now: Date = Date()) throws(RegistryError) -> RolloutChange {
        let message = try Registry.releaseNotes(message)
        let change = ReleaseChange(HaltOperation(appVersion: appVersion, patch: number, message: message))
        return try changeRollout(app: name, appVersion: appVersion, number: number, expectLive: expectLive, dryRun: dryRun, actor: actor, now: now,
                                 change: change, action: "patch.halt", message: message, withhold: .halt) { _ throws(RegistryError) in 0 }
    }

    /// `patchctl resume`: a halted patch offered again, at `percent` or, without it, at the
    /// percentage its last halt found (the audit log's `patch.halt`, or a `patch.rollout` to
    /// 0 % by hand or by a guard). A patch that is not halted is refused, as is one published
    /// at 0 % with no percentage given: there is nothing to go back to.
    @discardableResult
    public func resume(app name: AppName, appVersion: AppVersion, number: Int, percent: Int? = nil, expectLive: Int? = nil, dryRun: Bool = false,
                       actor: Actor, now: Date = Date()) throws(RegistryError) -> RolloutChange {
        if let percent, !(1...100).contains(percent) { throw .invalidCall("resume rolls out to 1 to 100 %, got \(percent) (0 % is a halt)") }
        let change = ReleaseChange(ResumeOperation(appVersion: appVersion, patch: number, percent: percent))
        return try changeRollout(app: name, appVersion: appVersion, number: number, expectLive: expectLive, dryRun: dryRun, actor: actor, now: now,
                                 change: change, action: "patch.resume", withhold: .lift) { patch throws(RegistryError) in
            guard patch.rollout == 0 else {
                throw .conflict("\(name) \(appVersion) patch \(number) is not halted: it rolls out to \(patch.rollout) % (use `patchctl rollout` to change that)")
            }
            if let percent { return percent }
            guard let before = try rolloutBeforeHalt(app: name, appVersion: appVersion, number: number) else {
                throw .invalidCall("\(name) \(appVersion) patch \(number) was published at 0 % and never rolled out: say how far with rollout (--rollout PCT)")
            }
            return before
        }
    }

    /// The percentage the newest halt of a patch found: the `from` of its newest audit event
    /// that set it to 0 %.
    private func rolloutBeforeHalt(app: AppName, appVersion: AppVersion, number: Int) throws(RegistryError) -> Int? {
        let rows = try read { () throws(StorageError) in
            try db.query("SELECT details FROM audit WHERE app = ? AND action IN ('patch.halt', 'patch.rollout') ORDER BY seq DESC",
                         [.text(app.rawValue)]) { $0.text(0) }
        }
        for raw in rows {
            guard let details = try? JSONParser.parse(raw), details["appVersion"]?.stringValue == appVersion.rawValue,
                  details["patch"]?.intValue == Int64(number), details["to"]?.intValue == 0, let from = details["from"]?.intValue, from > 0 else { continue }
            return Int(from)
        }
        return nil
    }

    /// What a halt or a resume does with the withhold role (docs/PROTOCOL.md, "Withhold").
    private enum WithholdStep {
        /// Where the targets keys are not at hand and the withhold keys are: withhold instead.
        case halt
        /// A withheld patch: take it off the list (which needs the targets keys).
        case lift
    }

    /// The one write of a rollout change: `percent` reads the patch as it is inside the
    /// transaction and says the new percentage.
    private func changeRollout(app name: AppName, appVersion: AppVersion, number: Int, expectLive: Int?, dryRun: Bool, actor: Actor, now: Date,
                               change: ReleaseChange, action: String, message: String? = nil, withhold: WithholdStep? = nil,
                               percent: (PatchRecord) throws(RegistryError) -> Int) throws(RegistryError) -> RolloutChange {
        try proposing(change, app: name, dryRun: dryRun, actor: actor, now: now) { () throws(RegistryError) in try write(dryRun: dryRun) { () throws -> RolloutChange in
            _ = try app(name)
            guard let patch = try patches(app: name, appVersion: appVersion, activeOnly: false).first(where: { $0.number == number }) else {
                throw RegistryError.notFound("\(name) \(appVersion) has no patch \(number)")
            }
            guard patch.state == .active else { throw RegistryError.conflict("\(name) \(appVersion) patch \(number) is revoked; publish a new patch instead") }
            try requireLive(expectLive, app: name, appVersion: appVersion, channel: patch.channel)
            if withhold == .lift, try liftWithhold(patch, app: name, actor: actor, now: now) {
                return RolloutChange(patch: patch, changed: true, from: patch.rollout)
            }
            if withhold == .halt, let role = try withholdsInstead(app: name, channel: patch.channel) {
                // The targets keys are elsewhere (the two-person rule) and the withhold keys are
                // here: stopping the patch does not wait for a second person.
                let written = try withholdRows([patch], role: role, rollBack: false, reason: message, app: name, actor: actor, now: now)
                var result = RolloutChange(patch: patch, changed: !written.isEmpty, from: patch.rollout)
                result.withheld = try withheldPatches(app: name).first { $0.path == patch.targetPath }
                return result
            }
            let percent = try percent(patch)
            // A person's rollout ends the patch's staged rollout (else its next step would undo
            // what they set). The schedule's own steps and a guard's halt come through here as
            // patchd's actors: a halt leaves the schedule for the next pass to stop and say so.
            var stopped: RolloutSchedule?
            if ![Registry.scheduleActor.name, Registry.guardActor.name].contains(actor.name),
               let schedule = try schedules(app: name).first(where: { $0.key.appVersion == appVersion && $0.key.patch == number }) {
                try db.run("DELETE FROM rollout_schedules WHERE app = ? AND app_version = ? AND number = ?",
                           [.text(name.rawValue), .text(appVersion.rawValue), .int(Int64(number))])
                var details = schedule.json.objectValue ?? [:]
                details["reason"] = .string(action == "patch.halt" ? "halted" : "manual rollout to \(percent) %")
                try AuditLog.append(db, app: name.rawValue, actor: actor, action: "rollout.schedule.stop", details: .object(details), at: now)
                stopped = schedule
            }
            guard patch.rollout != percent else {
                return RolloutChange(patch: patch, changed: stopped != nil, from: patch.rollout, stoppedSchedule: stopped)
            }
            try db.run("UPDATE patches SET rollout = ? WHERE app = ? AND app_version = ? AND number = ?",
                       [.int(Int64(percent)), .text(name.rawValue), .text(appVersion.rawValue), .int(Int64(number))])
            try resign(app: name, from: .targets, now: now, channel: patch.channel)
            var details: [String: JSON] = [
                "appVersion": .string(appVersion.rawValue), "patch": .int(Int64(number)),
                "from": .int(Int64(patch.rollout)), "to": .int(Int64(percent)),
            ]
            if let message { details["message"] = .string(message) }
            try AuditLog.append(db, app: name.rawValue, actor: actor, action: action, details: .object(details), at: now)
            guard let updated = try patches(app: name, appVersion: appVersion, activeOnly: false).first(where: { $0.number == number }) else {
                throw RegistryError.internalError("\(name) \(appVersion) patch \(number) vanished inside its own transaction")
            }
            return RolloutChange(patch: updated, changed: true, from: patch.rollout, stoppedSchedule: stopped)
        } }
    }
}
