import Foundation
import PatchCore

/// What a guard does to a patch whose rollback rate is too high.
public enum GuardAction: String, Sendable, CaseIterable {
    /// Rollout 0, re-signed: the patch stays listed and signed, no device that does not run it
    /// is offered it, the devices that run it keep it (`Selection.choose`; their own launch
    /// confirmation still rolls a crashing patch back), and it resumes only when someone sets
    /// its rollout again. Nothing is taken from any device, so evidence alone cannot pull a fix.
    case halt
    /// Unlisted, re-signed: every device drops it. Only when configured, and never the
    /// version's last live patch (`Registry.revokeLeavesNothing`).
    case revoke
}

/// A trip that did not do what its guard was configured to: a revoke that would have left
/// the version with no patch halted instead (`guard_trip_overrides`).
public struct GuardOverride: Sendable, Equatable {
    public let configured: GuardAction
    public let reason: String
}

/// `patchctl apps guard`: per app and channel, the rollback rate that stops a patch.
public struct PatchGuard: Sendable, Equatable {
    public let app: AppName
    public let channel: ChannelName
    /// The threshold on rolled-back ÷ installed, in parts per million (2 % = 20000).
    public let maxRollbackPPM: Int
    /// Installed devices needed before the guard decides anything.
    public let minDevices: Int
    public let action: GuardAction
    public let setAt: String
    public let setBy: String

    public var json: JSON {
        ["channel": .string(channel.rawValue), "maxRollbackRatePpm": .int(Int64(maxRollbackPPM)), "minDevices": .int(Int64(minDevices)),
         "action": .string(action.rawValue), "setAt": .string(setAt), "setBy": .string(setBy)]
    }
}

/// A patch a guard halted or revoked, with the figures it decided on.
public struct GuardTrip: Sendable, Equatable {
    public let key: PatchKey
    public let action: GuardAction
    public let at: String
    public let installed: Int
    public let rolledBack: Int
    public let lowerPPM: Int
    public let thresholdPPM: Int
    /// Set when `action` (what was done) is not what the guard was configured to do.
    public var override: GuardOverride? = nil

    public var json: JSON {
        var json: [String: JSON] = [
            "appVersion": .string(key.appVersion.rawValue), "channel": .string(key.channel.rawValue), "patch": .int(Int64(key.patch)),
            "action": .string(action.rawValue), "configured": .string((override?.configured ?? action).rawValue), "at": .string(at),
            "installed": .int(Int64(installed)), "rolledBack": .int(Int64(rolledBack)),
            "lowerBoundPpm": .int(Int64(lowerPPM)), "thresholdPpm": .int(Int64(thresholdPPM))]
        if let override { json["overrideReason"] = .string(override.reason) }
        return .object(json)
    }
}

extension Registry {
    /// Who a guard's changes are recorded as.
    public static let guardActor = Actor("patchd guard")

    /// Sets (or replaces) the guard of one channel of an app. Returns nil when the same guard
    /// is set already (nothing written, no audit event).
    @discardableResult
    public func setGuard(app: AppName, channel: ChannelName = .production, maxRollbackPPM: Int, minDevices: Int, action: GuardAction,
                         actor: Actor, now: Date = Date()) throws(RegistryError) -> PatchGuard? {
        guard (1...1_000_000).contains(maxRollbackPPM) else { throw .invalidInput("the maximum rollback rate must be above 0 % and at most 100 %") }
        guard (1...100_000_000).contains(minDevices) else { throw .invalidInput("the minimum device count must be 1 to 100000000") }
        return try write { () throws -> PatchGuard? in
            _ = try self.app(app, declaring: [channel])
            let old = try guards(app: app).first { $0.channel == channel }
            if let old, old.maxRollbackPPM == maxRollbackPPM, old.minDevices == minDevices, old.action == action { return nil }
            let time = TUFTime.format(now)
            try db.run("""
                INSERT INTO patch_guards(app, channel, max_rollback_ppm, min_devices, action, set_at, set_by) VALUES (?,?,?,?,?,?,?)
                ON CONFLICT(app, channel) DO UPDATE SET max_rollback_ppm = excluded.max_rollback_ppm, min_devices = excluded.min_devices,
                    action = excluded.action, set_at = excluded.set_at, set_by = excluded.set_by
                """, [.text(app.rawValue), .text(channel.rawValue), .int(Int64(maxRollbackPPM)), .int(Int64(minDevices)), .text(action.rawValue),
                      .text(time), .text(actor.name)])
            let set = PatchGuard(app: app, channel: channel, maxRollbackPPM: maxRollbackPPM, minDevices: minDevices, action: action, setAt: time, setBy: actor.name)
            var details = set.json.objectValue ?? [:]
            details["from"] = old?.json ?? .null
            try AuditLog.append(db, app: app.rawValue, actor: actor, action: "guard.set", details: .object(details), at: now)
            return set
        }
    }

    /// Removes the guard of one channel; false when it had none.
    @discardableResult
    public func removeGuard(app: AppName, channel: ChannelName = .production, actor: Actor, now: Date = Date()) throws(RegistryError) -> Bool {
        try write { () throws -> Bool in
            _ = try self.app(app, declaring: [channel])
            guard let old = try guards(app: app).first(where: { $0.channel == channel }) else { return false }
            try db.run("DELETE FROM patch_guards WHERE app = ? AND channel = ?", [.text(app.rawValue), .text(channel.rawValue)])
            try AuditLog.append(db, app: app.rawValue, actor: actor, action: "guard.remove", details: ["from": old.json], at: now)
            return true
        }
    }

    public func guards(app: AppName) throws(RegistryError) -> [PatchGuard] {
        let rows = try read { () throws(StorageError) in
            try db.query("SELECT channel, max_rollback_ppm, min_devices, action, set_at, set_by FROM patch_guards WHERE app = ? ORDER BY channel",
                         [.text(app.rawValue)]) { s -> PatchGuard? in
                guard let channel = try? ChannelName(s.text(0)), let action = GuardAction(rawValue: s.text(3)) else { return nil }
                return PatchGuard(app: app, channel: channel, maxRollbackPPM: Int(s.int(1)), minDevices: Int(s.int(2)), action: action,
                                  setAt: s.text(4), setBy: s.text(5))
            }
        }
        return try Registry.intact(rows, what: "patch_guards")
    }

    public func guardTrips(app: AppName) throws(RegistryError) -> [GuardTrip] {
        let rows = try read { () throws(StorageError) in
            try db.query("""
                SELECT t.app_version, t.channel, t.number, t.action, t.at, t.installed, t.rolled_back, t.lower_ppm, t.threshold_ppm,
                    o.configured, o.reason FROM guard_trips t
                LEFT JOIN guard_trip_overrides o ON o.app = t.app AND o.app_version = t.app_version AND o.number = t.number
                WHERE t.app = ? ORDER BY t.at, t.app_version, t.number
                """, [.text(app.rawValue)]) { s -> GuardTrip? in
                guard let version = try? AppVersion(s.text(0)), let channel = try? ChannelName(s.text(1)), let action = GuardAction(rawValue: s.text(3)) else { return nil }
                var override: GuardOverride?
                if let raw = s.optionalText(9) {
                    guard let configured = GuardAction(rawValue: raw), let reason = s.optionalText(10) else { return nil }
                    override = GuardOverride(configured: configured, reason: reason)
                }
                return GuardTrip(key: PatchKey(appVersion: version, channel: channel, patch: Int(s.int(2))), action: action, at: s.text(4),
                                 installed: Int(s.int(5)), rolledBack: Int(s.int(6)), lowerPPM: Int(s.int(7)), thresholdPPM: Int(s.int(8)),
                                 override: override)
            }
        }
        return try Registry.intact(rows, what: "guard_trips")
    }

    /// Applies the app's guards to `patches` (the ones a report batch moved): a patch whose
    /// installed devices reach the guard's minimum and whose 95 % Wilson lower bound on
    /// rolled-back ÷ installed exceeds the threshold is halted or revoked, once, with an audit
    /// event carrying the figures. Only the lower bound trips a guard, so chance alone (a few
    /// unlucky devices) rarely does; reports can only ever stop a patch, never advance one.
    /// The decision is read first without the write lock, so a batch that trips nothing (the
    /// usual case) costs a few indexed reads; a trip re-reads everything inside its transaction.
    public func enforceGuards(app: AppName, patches: Set<PatchKey>, rules evidence: ReportRules = ReportRules(), now: Date = Date()) throws(RegistryError) -> [GuardTrip] {
        guard !patches.isEmpty else { return [] }
        let byChannel = Dictionary(try guards(app: app).map { ($0.channel, $0) }) { a, _ in a }
        var candidates: [PatchKey] = []
        for key in patches.sorted() {
            if let rule = byChannel[key.channel], try tripFigures(app: app, key: key, rule: rule, evidence: evidence) != nil { candidates.append(key) }
        }
        guard !candidates.isEmpty else { return [] }
        var waiting: [(key: PatchKey, why: String)] = []
        let trips = try write { () throws -> [GuardTrip] in
            var trips: [GuardTrip] = []
            let rules = Dictionary(try guards(app: app).map { ($0.channel, $0) }) { a, _ in a }
            for key in candidates {
                guard let rule = rules[key.channel], let (trip, blocks, quorum) = try tripFigures(app: app, key: key, rule: rule, evidence: evidence, now: now) else { continue }
                let why = "rollback rate lower bound \(WilsonInterval.percentText(ppm: trip.lowerPPM)) > \(WilsonInterval.percentText(ppm: trip.thresholdPPM)) (\(trip.rolledBack) of \(trip.installed) installed devices rolled back, from \(blocks) blocks; quorum \(quorum))"
                // A guard only halts (issue 43): its evidence is device reports, which anyone
                // who downloaded the bundle can send, so it may stop new installs but never take
                // the patch from the devices that run it. A guard set to revoke halts and says
                // which command takes the patch away, for a person to run on the trip's figures.
                var done = trip
                if rule.action == .revoke {
                    let reason = try revokeLeavesNothing(app: app, key: key)
                        ?? "a guard acts on anonymous evidence, so it only halts: to take the patch from the devices that run it, `patchctl rollback --app \(app) --app-version \(key.appVersion) --channel \(key.channel) --patch \(key.patch)`"
                    done = GuardTrip(key: key, action: .halt, at: trip.at, installed: trip.installed, rolledBack: trip.rolledBack,
                                     lowerPPM: trip.lowerPPM, thresholdPPM: trip.thresholdPPM,
                                     override: GuardOverride(configured: .revoke, reason: reason))
                }
                // Keys patchd does not hold (the two-person rule): the halt waits for their
                // holders, proposed below, outside this transaction; no trip until it lands.
                // Keys patchd does not hold (the two-person rule): the withhold role's, when
                // patchd holds them, stop the patch at once — as a halt only: evidence never makes
                // devices drop a patch they run. Without them the halt waits, below.
                if let withhold = try withholdsInstead(app: app, channel: key.channel) {
                    guard let patch = try self.patches(app: app, appVersion: key.appVersion, activeOnly: true).first(where: { $0.number == key.patch }) else { continue }
                    _ = try withholdRows([patch], role: withhold, rollBack: false, reason: "guard: " + why, app: app, actor: Registry.guardActor, now: now)
                } else if try holdsSigningKeys(app: app, channel: key.channel) {
                    try halt(app: app, appVersion: key.appVersion, number: key.patch, message: "guard: " + why, actor: Registry.guardActor, now: now)
                } else {
                    waiting.append((key, why))
                    continue
                }
                try db.run("""
                    INSERT INTO guard_trips(app, app_version, number, channel, action, at, installed, rolled_back, lower_ppm, threshold_ppm)
                    VALUES (?,?,?,?,?,?,?,?,?,?)
                    """, [.text(app.rawValue), .text(key.appVersion.rawValue), .int(Int64(key.patch)), .text(key.channel.rawValue),
                          .text(done.action.rawValue), .text(trip.at), .int(Int64(trip.installed)), .int(Int64(trip.rolledBack)),
                          .int(Int64(trip.lowerPPM)), .int(Int64(trip.thresholdPPM))])
                if let override = done.override {
                    try db.run("INSERT INTO guard_trip_overrides(app, app_version, number, configured, reason) VALUES (?,?,?,?,?)",
                               [.text(app.rawValue), .text(key.appVersion.rawValue), .int(Int64(key.patch)), .text(override.configured.rawValue),
                                .text(override.reason)])
                }
                var details = done.json.objectValue ?? [:]
                details["minDevices"] = .int(Int64(rule.minDevices))
                details["rolledBackBlocks"] = .int(Int64(blocks))
                details["blockQuorum"] = .int(Int64(quorum))
                details["reason"] = .string(done.override.map { "\(why); \($0.reason)" } ?? why)
                try AuditLog.append(db, app: app.rawValue, actor: Registry.guardActor, action: "guard.\(done.action.rawValue)", details: .object(details), at: now)
                trips.append(done)
            }
            return trips
        }
        for (key, why) in waiting {
            do {
                try halt(app: app, appVersion: key.appVersion, number: key.patch, message: "guard: " + why, actor: Registry.guardActor, now: now)
            } catch .pending {
                // Stored once (a later pass finds the same change waiting).
            }
        }
        return trips
    }

    /// Applies the app's guards to every active patch of a guarded channel: what the upkeep
    /// loop runs, so a guard set on a patch whose figures are already past it acts without
    /// waiting for the next report. Bounded by the active patches of guarded channels.
    public func enforceGuards(app: AppName, rules evidence: ReportRules = ReportRules(), now: Date = Date()) throws(RegistryError) -> [GuardTrip] {
        let channels = Set(try guards(app: app).map(\.channel))
        guard !channels.isEmpty else { return [] }
        let keys = try patches(app: app, appVersion: nil, activeOnly: true).filter { channels.contains($0.channel) }
            .map { PatchKey(appVersion: $0.appVersion, channel: $0.channel, patch: $0.number) }
        return try enforceGuards(app: app, patches: Set(keys), rules: evidence, now: now)
    }

    /// Why revoking `key` would leave its version and channel with no patch for the fleet, or
    /// nil when it would not: what the split gives devices without it (a conditional patch
    /// reaches only the devices it admits, so it is no fleet's fallback).
    func revokeLeavesNothing(app: AppName, key: PatchKey) throws(RegistryError) -> String? {
        let after = Registry.serving(try patches(app: app, appVersion: key.appVersion, activeOnly: false), withoutPatches: [key.patch],
                                     app: app, appVersion: key.appVersion, channel: key.channel)
        return after.servesFleet ? nil : "revoke would leave \(key.appVersion) \(key.channel) with no patch"
    }

    /// The figures of a trip, or nil when the guard must not act on this patch now: tripped
    /// before, revoked, already at rollout 0 (for halt), too few installs, rollbacks from
    /// fewer blocks than `evidence.rollbackQuorum`, or a lower bound at or under the threshold.
    private func tripFigures(app: AppName, key: PatchKey, rule: PatchGuard, evidence: ReportRules,
                             now: Date = Date()) throws(RegistryError) -> (trip: GuardTrip, blocks: Int, quorum: Int)? {
        let values: [SQLValue] = [.text(app.rawValue), .text(key.appVersion.rawValue), .int(Int64(key.patch))]
        let state = try read { () throws(StorageError) in
            try db.query("""
                SELECT p.state, p.rollout, (SELECT COUNT(*) FROM guard_trips t WHERE t.app = p.app AND t.app_version = p.app_version AND t.number = p.number)
                FROM patches p WHERE p.app = ? AND p.app_version = ? AND p.number = ?
                """, values) { s in (s.text(0), Int(s.int(1)), s.int(2)) }.first
        }
        guard let (stored, rollout, tripped) = state, stored == PatchState.active.rawValue, tripped == 0 else { return nil }
        if rule.action == .halt, rollout == 0 { return nil }
        let counts = try read { () throws(StorageError) in
            try db.query("""
                SELECT event, devices FROM report_counts WHERE app = ? AND app_version = ? AND channel = ? AND patch = ? AND reason = ''
                AND event IN ('installed', 'rolledBack')
                """, [values[0], values[1], .text(key.channel.rawValue), values[2]]) { ($0.text(0), Int($0.int(1))) }
        }
        let installed = counts.first { $0.0 == ReportEventType.installed.rawValue }?.1 ?? 0
        let rolledBack = counts.first { $0.0 == ReportEventType.rolledBack.rawValue }?.1 ?? 0
        guard installed >= rule.minDevices else { return nil }
        let interval = WilsonInterval(successes: rolledBack, trials: installed)
        guard interval.lower * 1_000_000 > Double(rule.maxRollbackPPM) else { return nil }
        let quorum = evidence.rollbackQuorum(installBlocks: try reportBlocks(app: app, key: key, event: .installed))
        let blocks = try reportBlocks(app: app, key: key, event: .rolledBack)
        guard blocks >= quorum else { return nil }
        let trip = GuardTrip(key: key, action: rule.action, at: TUFTime.format(now), installed: installed, rolledBack: interval.successes,
                         lowerPPM: WilsonInterval.ppm(interval.lower), thresholdPPM: rule.maxRollbackPPM)
        return (trip, blocks, quorum)
    }
}

extension Registry {
    /// The distinct blocks (/16 · /32) the devices counted for `event` of a patch reported
    /// from: what a guard's trip and a schedule's step need `ReportRules.minBlocks` of.
    func reportBlocks(app: AppName, key: PatchKey, event: ReportEventType) throws(RegistryError) -> Int {
        let n = try read { () throws(StorageError) in
            try db.query("""
                SELECT count(*) FROM report_blocks WHERE app = ? AND app_version = ? AND channel = ? AND patch = ? AND event = ?
                """, [.text(app.rawValue), .text(key.appVersion.rawValue), .text(key.channel.rawValue), .int(Int64(key.patch)),
                      .text(event.rawValue)]) { $0.int(0) }.first ?? 0
        }
        return Int(n)
    }
}
