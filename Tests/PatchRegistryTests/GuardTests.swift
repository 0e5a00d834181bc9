import Foundation
import PatchCore
import Testing
@testable import PatchRegistry
import HotpatchTestSupport

/// `devices` devices install patch `patch` of 2.3; the first `rolledBack` of them roll it back.
@discardableResult
func feed(_ t: TempRegistry, _ app: AppName, patch: Int = 1, devices: Range<Int>, rolledBack: Int, confirmed: Bool = false) throws -> Set<PatchKey> {
    var touched: Set<PatchKey> = []
    for i in devices {
        var events = [try event("i\(patch)", .installed, patch: patch)]
        if i - devices.lowerBound < rolledBack { events.append(try event("r\(patch)", .rolledBack, patch: patch)) }
        if confirmed { events.append(try event("c\(patch)", .confirmed, patch: patch)) }
        touched.formUnion(try t.registry.report(app: app, deviceID: "device-\(i)", events: events).touched)
    }
    return touched
}

@Suite("Guards: halt or revoke on the Wilson lower bound of the rollback rate")
struct GuardTests {
    let v23: AppVersion

    init() throws { v23 = try AppVersion("2.3") }

    @Test("10 of 60 installed devices rolled back (lower bound 9.3 % > 2 %): halted at rollout 0, re-signed, audited with the figures")
    func halts() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        try t.publish(app, "2.3", "one()", rollout: 50)
        try t.registry.setGuard(app: app, maxRollbackPPM: 20_000, minDevices: 50, action: .halt, actor: t.actor)
        let targetsBefore = try t.registry.latestMetadata(app: app, role: .targets).version
        let touched = try feed(t, app, devices: 0..<60, rolledBack: 10)
        let trips = try t.registry.enforceGuards(app: app, patches: touched)
        #expect(trips.count == 1)
        let trip = try #require(trips.first)
        #expect(trip.installed == 60 && trip.rolledBack == 10 && trip.lowerPPM == 93_132 && trip.thresholdPPM == 20_000)
        #expect(try t.registry.serving(app: app, appVersion: v23).delivery[1] == .halted)
        #expect(try t.registry.latestMetadata(app: app, role: .targets).version == targetsBefore + 1)
        let audit = try #require(try t.registry.auditEvents(app: app).last)
        #expect(audit.action == "guard.halt" && audit.actor == "patchd guard")
        #expect(audit.details["installed"]?.intValue == 60 && audit.details["rolledBack"]?.intValue == 10)
        #expect(audit.details["lowerBoundPpm"]?.intValue == 93_132 && audit.details["thresholdPpm"]?.intValue == 20_000)
        #expect(try t.registry.guardTrips(app: app) == trips)
        // Evaluated again (the next batch): nothing more happens.
        #expect(try t.registry.enforceGuards(app: app, patches: touched).isEmpty)
    }

    @Test("under the minimum device count, or an observed rate above the threshold whose lower bound is not, nothing happens")
    func waits() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        try t.publish(app, "2.3", "one()")
        try t.registry.setGuard(app: app, maxRollbackPPM: 20_000, minDevices: 50, action: .halt, actor: t.actor)
        // 10 of 40: a high rate, but fewer than 50 installs.
        var touched = try feed(t, app, devices: 0..<40, rolledBack: 10)
        #expect(try t.registry.enforceGuards(app: app, patches: touched).isEmpty)
        // 10 more devices without rollbacks: 10 of 50 trips (lower bound 11.2 %).
        touched = try feed(t, app, devices: 40..<50, rolledBack: 0)
        #expect(try t.registry.enforceGuards(app: app, patches: touched).count == 1)

        let u = try TempRegistry()
        let other = try u.app("demo")
        try u.publish(other, "2.3", "one()")
        try u.registry.setGuard(app: other, maxRollbackPPM: 20_000, minDevices: 50, action: .halt, actor: u.actor)
        // 2 of 50 = 4 % observed, lower bound 1.1 %: not enough evidence.
        let some = try feed(u, other, devices: 0..<50, rolledBack: 2)
        #expect(try u.registry.enforceGuards(app: other, patches: some).isEmpty)
        #expect(try u.registry.serving(app: other, appVersion: v23).delivery[1] == .live)
    }

    @Test("a patch halted by a guard and resumed by hand stays resumed; a guard on another channel does not act")
    func resumedByHand() throws {
        let t = try TempRegistry()
        let app = try t.app("demo", channels: ["beta"])
        try t.publish(app, "2.3", "one()")
        try t.registry.setGuard(app: app, channel: try ChannelName("beta"), maxRollbackPPM: 20_000, minDevices: 50, action: .halt, actor: t.actor)
        let touched = try feed(t, app, devices: 0..<60, rolledBack: 30)
        #expect(try t.registry.enforceGuards(app: app, patches: touched).isEmpty, "the guard is beta's; the patch is production's")
        try t.registry.setGuard(app: app, maxRollbackPPM: 20_000, minDevices: 50, action: .halt, actor: t.actor)
        #expect(try t.registry.enforceGuards(app: app, patches: touched).count == 1)
        try t.registry.setRollout(app: app, appVersion: v23, number: 1, percent: 100, actor: t.actor)
        let more = try feed(t, app, devices: 60..<100, rolledBack: 40)
        #expect(try t.registry.enforceGuards(app: app, patches: more).isEmpty)
        #expect(try t.registry.serving(app: app, appVersion: v23).delivery[1] == .live)
    }

    @Test("action revoke halts too (issue 43: reports are anonymous evidence) and names the rollback a person runs to take the patch away")
    func revokes() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        try t.publish(app, "2.3", "one()")
        try t.publish(app, "2.3", "two()")
        try t.registry.setGuard(app: app, maxRollbackPPM: 20_000, minDevices: 50, action: .revoke, actor: t.actor)
        let touched = try feed(t, app, patch: 2, devices: 0..<60, rolledBack: 10)
        let trip = try #require(try t.registry.enforceGuards(app: app, patches: touched).first)
        // Issue 43: the evidence is anonymous, so the guard halts and names the person's command.
        #expect(trip.action == .halt && trip.json["configured"]?.stringValue == "revoke")
        #expect(trip.override?.reason.hasPrefix("a guard acts on anonymous evidence, so it only halts") == true)
        #expect(trip.override?.reason.hasSuffix("`patchctl rollback --app demo --app-version 2.3 --channel production --patch 2`") == true)
        let patch = try #require(try t.registry.patches(app: app, appVersion: v23, activeOnly: false).first { $0.number == 2 })
        #expect(patch.state == .active && patch.rollout == 0, "halted: kept by the devices that run it")
        #expect(try t.registry.auditEvents(app: app).map(\.action).suffix(2) == ["patch.halt", "guard.halt"])
        #expect(try t.registry.serving(app: app, appVersion: v23).delivery[2] == .halted)
    }

    @Test("action revoke never revokes a version's only live patch: it halts instead, and the trip, audit event and trips list say so")
    func revokeOfTheOnlyLivePatchHalts() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        try t.publish(app, "2.3", "one()")
        try t.publish(app, "2.3", "paused()", rollout: 0)       // at rollout 0: nothing to fall back to
        try t.publish(app, "2.4", "other()")                    // another version: not a fallback for 2.3
        try t.registry.setGuard(app: app, maxRollbackPPM: 20_000, minDevices: 50, action: .revoke, actor: t.actor)
        let touched = try feed(t, app, devices: 0..<60, rolledBack: 10)
        let trips = try t.registry.enforceGuards(app: app, patches: touched)
        let trip = try #require(trips.first)
        #expect(trip.action == .halt)
        #expect(trip.override == GuardOverride(configured: .revoke, reason: "revoke would leave 2.3 production with no patch"))
        let patch = try #require(try t.registry.patches(app: app, appVersion: v23, activeOnly: false).first { $0.number == 1 })
        #expect(patch.state == .active && patch.rollout == 0)
        let listed = try t.targets(app).targets.compactMap { PatchTargetInfo(path: $0.key, file: $0.value) }.filter { $0.appVersion == "2.3" }
        #expect(listed.map(\.patch).sorted() == [1, 2], "halted, not revoked: still listed, so devices that run it keep it")
        let audit = try #require(try t.registry.auditEvents(app: app).last)
        #expect(audit.action == "guard.halt")
        #expect(audit.details["configured"]?.stringValue == "revoke")
        #expect(audit.details["reason"]?.stringValue?.hasSuffix("; revoke would leave 2.3 production with no patch") == true)
        #expect(try t.registry.guardTrips(app: app) == trips, "the override is stored with the trip")
        #expect(try t.registry.enforceGuards(app: app, patches: touched).isEmpty, "once")
    }

    @Test("forged reports cannot advance: confirmations from any number of devices leave a halted patch at 0 and a 5 % patch at 5 %")
    func forgedCannotAdvance() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        try t.publish(app, "2.3", "one()", rollout: 0)
        try t.publish(app, "2.3", "two()", rollout: 5)
        try t.registry.setGuard(app: app, maxRollbackPPM: 20_000, minDevices: 50, action: .halt, actor: t.actor)
        let before = try t.snapshot()
        var touched = try feed(t, app, patch: 1, devices: 0..<200, rolledBack: 0, confirmed: true)
        touched.formUnion(try feed(t, app, patch: 2, devices: 0..<200, rolledBack: 0, confirmed: true))
        #expect(try t.registry.enforceGuards(app: app, patches: touched).isEmpty)
        #expect(try t.snapshot() == before, "no rollout, metadata or audit event moved")
    }

    @Test("the block quorum grows with the installs: the review's forgery (100 IDs, 20 from each of five /16s) halts nothing once 40 genuine devices in 40 blocks installed the fix; from 10 blocks it does, and the audit shows blocks and quorum")
    func quorumGrowsWithInstalls() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        try t.publish(app, "2.3", "one()")
        try t.publish(app, "2.3", "two()", rollout: 50)
        try t.registry.setGuard(app: app, maxRollbackPPM: 20_000, minDevices: 50, action: .revoke, actor: t.actor)
        var touched = try feed(t, app, patch: 2, devices: 0..<40, rolledBack: 0)
        /// `count` forged devices spread over `blocks` blocks (one network each), each reporting
        /// an install and a rollback with the receipt its download got.
        func forge(_ prefix: String, count: Int, blocks: Int) throws {
            for i in 0..<count {
                let origin = ReportOrigin(network: "\(prefix)-net-\(i % blocks)", block: "\(prefix)-block-\(i % blocks)")
                touched.formUnion(try t.registry.report(app: app, deviceID: "\(prefix)-\(i)", events: [
                    try event("i2", .installed, patch: 2), try event("r2", .rolledBack, patch: 2)], origin: origin).touched)
            }
        }
        try forge("five", count: 100, blocks: 5)
        #expect(try t.registry.enforceGuards(app: app, patches: touched).isEmpty, "rollbacks from 5 blocks; 45 install blocks need 6")
        #expect(try t.registry.serving(app: app, appVersion: v23).delivery[2] == .live)
        // How far it can be pushed: five blocks more are 10 of 50 install blocks, past the 7 needed.
        try forge("more", count: 5, blocks: 5)
        let trip = try #require(try t.registry.enforceGuards(app: app, patches: touched).first)
        #expect(trip.action == .halt && trip.rolledBack == 105)
        let audit = try #require(try t.registry.auditEvents(app: app).last)
        #expect(audit.action == "guard.halt")
        #expect(audit.details["rolledBackBlocks"]?.intValue == 10 && audit.details["blockQuorum"]?.intValue == 7)
        #expect(audit.details["reason"]?.stringValue?.contains("from 10 blocks; quorum 7") == true)
    }

    @Test("the rollback quorum: minBlocks, or one block in eight of the install blocks")
    func rollbackQuorum() {
        var rules = ReportRules()
        #expect(rules.rollbackQuorum(installBlocks: 0) == 5)
        #expect(rules.rollbackQuorum(installBlocks: 40) == 5)
        #expect(rules.rollbackQuorum(installBlocks: 41) == 6)
        #expect(rules.rollbackQuorum(installBlocks: 800) == 100)
        rules.minBlocks = 2
        rules.installBlocksPerRollbackBlock = 4
        #expect(rules.rollbackQuorum(installBlocks: 4) == 2 && rules.rollbackQuorum(installBlocks: 13) == 4)
    }

    @Test("setting the same guard again changes nothing; set and remove are audited; limits are checked")
    func setAndRemove() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        #expect(try t.registry.setGuard(app: app, maxRollbackPPM: 20_000, minDevices: 50, action: .halt, actor: t.actor) != nil)
        #expect(try t.registry.setGuard(app: app, maxRollbackPPM: 20_000, minDevices: 50, action: .halt, actor: t.actor) == nil)
        #expect(try t.registry.guards(app: app).map(\.minDevices) == [50])
        #expect(try t.registry.removeGuard(app: app, actor: t.actor))
        #expect(try !t.registry.removeGuard(app: app, actor: t.actor))
        #expect(try t.registry.auditEvents(app: app).map(\.action).suffix(2) == ["guard.set", "guard.remove"])
        #expect(throws: RegistryError.self) { try t.registry.setGuard(app: app, maxRollbackPPM: 0, minDevices: 50, action: .halt, actor: t.actor) }
        #expect(throws: RegistryError.self) { try t.registry.setGuard(app: app, maxRollbackPPM: 20_000, minDevices: 0, action: .halt, actor: t.actor) }
    }

    @Test("a registry from before reports gains the tables on open and keeps its patches")
    func upgradesInPlace() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        try t.publish(app, "2.3", "one()")
        try t.registry.db.execute("DROP TABLE report_events; DROP TABLE report_devices; DROP TABLE report_counts; DROP TABLE report_hourly; DROP TABLE guard_trip_overrides; DROP TABLE guard_trips; DROP TABLE patch_guards")
        let reopened = try TestBackend.registry(dataDirectory: t.root.appendingPathComponent("data"), keysDirectory: t.root.appendingPathComponent("keys"))
        #expect(try reopened.patches(app: app, appVersion: nil, activeOnly: false).count == 1)
        #expect(try reopened.report(app: app, deviceID: "d", events: [try event("1", .installed)]).accepted == 1)
    }
}
