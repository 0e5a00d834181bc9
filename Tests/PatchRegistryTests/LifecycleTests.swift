import Foundation
import Testing
import PatchCore
@testable import PatchRegistry
import HotpatchTestSupport

@Suite("Revoke, rollout and what targets lists")
struct LifecycleTests {
    @Test("targets lists the newest 100% patch and every newer active one, paused at 0 % too")
    func listedPatches() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        try t.publish(app, "2.3", "one()")
        try t.publish(app, "2.3", "two()")
        try t.publish(app, "2.3", "three()", rollout: 30)
        try t.publish(app, "2.3", "four()", rollout: 0)
        try t.publish(app, "2.4", "other()", rollout: 50)
        #expect(Set(try t.targets(app).targets.keys) == ["2.3/2/main.js", "2.3/3/main.js", "2.3/4/main.js", "2.4/1/main.js"])
    }

    @Test("revoking the live patch brings the previous full rollout back; revoking a version empties it")
    func revoke() async throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        let version = try AppVersion("2.3")
        try t.publish(app, "2.3", "one()")
        try t.publish(app, "2.3", "two()")
        try t.registry.revoke(app: app, appVersion: version, number: 2, actor: t.actor)
        #expect(Set(try t.targets(app).targets.keys) == ["2.3/1/main.js"])
        #expect(throws: RegistryError.self) { try t.registry.revoke(app: app, appVersion: version, number: 2, actor: t.actor) }
        #expect(throws: RegistryError.self) { try t.registry.revoke(app: app, appVersion: version, number: 9, actor: t.actor) }
        try t.registry.revoke(app: app, appVersion: version, number: nil, actor: t.actor)
        #expect(try t.targets(app).targets.isEmpty)
        #expect(try t.registry.patches(app: app, appVersion: version, activeOnly: true).isEmpty)
        let revoked = try t.registry.patches(app: app, appVersion: version, activeOnly: false)
        #expect(revoked.allSatisfy { $0.state == .revoked && $0.revokedBy == "tester@test" && $0.revokedAt != nil })
        #expect(try await t.verify(app).targets.isEmpty)
    }

    @Test("a rollout change is re-signed into targets and audited")
    func rollout() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        try t.publish(app, "2.3", "one()")
        try t.publish(app, "2.3", "two()", rollout: 10)
        let updated = try t.registry.setRollout(app: app, appVersion: try AppVersion("2.3"), number: 2, percent: 100, actor: t.actor)
        #expect(updated.patch.rollout == 100 && updated.changed)
        #expect(Set(try t.targets(app).targets.keys) == ["2.3/2/main.js"])
        let event = try #require(try t.registry.auditEvents(app: app).last)
        #expect(event.action == "patch.rollout")
        #expect(event.details["from"]?.intValue == 10 && event.details["to"]?.intValue == 100)
        #expect(throws: RegistryError.self) {
            try t.registry.setRollout(app: app, appVersion: try AppVersion("2.3"), number: 2, percent: 150, actor: t.actor)
        }
    }
}

@Suite("No-op changes")
struct NoOpChangeTests {
    @Test("a rollout set to the percentage it has, or throttle rules to the ones in force, signs nothing and writes no audit event")
    func unchanged() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        try t.publish(app, "2.3", "one()", rollout: 25)
        try t.registry.setThrottleRules(app: app, ThrottleRules(minInterval: 60, ipRatePerMinute: 120), actor: t.actor)
        let events = try t.registry.auditEvents(app: nil).count
        let versions = try Role.allCases.map { try t.registry.latestMetadata(app: app, role: $0).version }
        let rollout = try t.registry.setRollout(app: app, appVersion: try AppVersion("2.3"), number: 1, percent: 25, actor: t.actor)
        #expect(!rollout.changed && rollout.patch.rollout == 25)
        #expect(rollout.json["changed"]?.boolValue == false)
        #expect(try !t.registry.setThrottleRules(app: app, ThrottleRules(minInterval: 60, ipRatePerMinute: 120), actor: t.actor))
        #expect(try t.registry.auditEvents(app: nil).count == events)
        #expect(try Role.allCases.map { try t.registry.latestMetadata(app: app, role: $0).version } == versions)
        // A real change still signs and records.
        #expect(try t.registry.setRollout(app: app, appVersion: try AppVersion("2.3"), number: 1, percent: 30, actor: t.actor).changed)
        #expect(try t.registry.auditEvents(app: nil).count == events + 1)
    }
}

@Suite("Audit log")
struct AuditTests {
    @Test("every change appends one chained event")
    func events() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        try t.publish(app, "2.3", "one()")
        try t.registry.setRollout(app: app, appVersion: try AppVersion("2.3"), number: 1, percent: 50, actor: t.actor)
        try t.registry.revoke(app: app, appVersion: try AppVersion("2.3"), number: 1, actor: t.actor)
        try t.registry.rotateKey(app: app, role: .targets, actor: t.actor)
        let events = try t.registry.auditEvents(app: nil)
        #expect(events.map(\.action) == ["app.create", "patch.publish", "patch.rollout", "patch.revoke", "key.rotate"])
        #expect(events.allSatisfy { $0.actor == "tester@test" })
        #expect(zip(events.dropFirst(), events).allSatisfy { $0.prev == $1.hash })
        guard case .intact(5, let head) = try t.registry.verifyAudit() else { Issue.record("chain not intact"); return }
        #expect(head == events.last?.hash)
    }

    @Test("the log refuses updates and deletes, and an edit that bypasses that is detected")
    func tamper() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        try t.publish(app, "2.3", "one()")
        try t.publish(app, "2.3", "two()")
        #expect(throws: StorageError.self) { try t.registry.db.execute("UPDATE audit SET actor = 'mallory' WHERE seq = 2") }
        #expect(throws: StorageError.self) { try t.registry.db.execute("DELETE FROM audit WHERE seq = 3") }
        try t.registry.db.execute(Self.dropTrigger(t, "audit_append_only_update") + "; UPDATE audit SET actor = 'mallory' WHERE seq = 2")
        #expect(try t.registry.verifyAudit() == .broken(seq: 2, reason: "content does not match its hash: the event was altered"))
    }

    @Test("a deleted event is detected")
    func deletion() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        try t.publish(app, "2.3", "one()")
        try t.publish(app, "2.3", "two()")
        try t.registry.db.execute(Self.dropTrigger(t, "audit_append_only_delete") + "; DELETE FROM audit WHERE seq = 2")
        guard case .broken(3, _) = try t.registry.verifyAudit() else { Issue.record("deletion not detected"); return }
    }

    @Test("a registry whose append-only trigger was dropped still opens, gets the rule back, and shows the edit")
    func reopenAfterTamper() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        try t.publish(app, "2.3", "one()")
        try t.registry.db.execute(Self.dropTrigger(t, "audit_append_only_update") + "; UPDATE audit SET actor = 'mallory' WHERE seq = 2")
        // On PostgreSQL opening used to fail here (42710: the truncate trigger exists), so the
        // edit could not even be reported.
        let reopened = try TestBackend.registry(dataDirectory: t.root.appendingPathComponent("data"), keysDirectory: t.root.appendingPathComponent("keys"))
        #expect(try reopened.verifyAudit() == .broken(seq: 2, reason: "content does not match its hash: the event was altered"))
        #expect(throws: StorageError.self) { try reopened.db.execute("UPDATE audit SET actor = 'eve' WHERE seq = 1") }
    }

    /// What an attacker with write access to the database runs to lift the append-only rule:
    /// SQLite has a trigger per statement kind; PostgreSQL one for UPDATE and DELETE.
    static func dropTrigger(_ t: TempRegistry, _ sqliteName: String) -> String {
        t.registry.db.dialect == .sqlite ? "DROP TRIGGER \(sqliteName)" : "DROP TRIGGER audit_append_only ON audit"
    }
}
