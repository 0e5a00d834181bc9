import Foundation
import Testing
import PatchCore
import PatchSigning
@testable import PatchRegistry
import HotpatchTestSupport

/// The withhold role (issue 44, part 1): on a two-person app, stopping a patch never waits.
@Suite("Withhold role")
struct WithholdTests {
    let v23 = try! AppVersion("2.3")

    /// A two-person app (TwoPersonRuleTests.twoPerson) with patches 1 and 2 at 100 %, and a
    /// withhold role whose one key the registry holds (set up with both release keys).
    func setUp() throws -> (TempRegistry, AppName, SigningKey, SigningKey, SigningKey) {
        let (t, app, alice, bob) = try TwoPersonRuleTests().twoPerson()
        for n in 1...2 {
            _ = try Registry.signing(with: [alice, bob]) { () throws(RegistryError) in
                try t.registry.publish(app: app, appVersion: v23, bundle: Array("p\(n)()".utf8), actor: Actor("alice@test"))
            }
        }
        let withhold = try SigningKey.generateEd25519()
        try t.registry.keys.storeDelegated(withhold, app: app, role: Withholds.roleName)
        // One key is not enough to set the role up: it waits, like a publish.
        let pending = try TwoPersonRuleTests().pendingChange { () throws(RegistryError) in
            try Registry.signing(with: [alice]) { () throws(RegistryError) in
                try t.registry.setWithholdRole(app: app, keys: [withhold.tufKey], actor: Actor("alice@test"))
            }
        }
        _ = try t.registry.approve(app: app, id: pending.id, keys: [bob], actor: Actor("bob@test"))
        #expect(try t.registry.withholdRole(app: app) == WithholdRole(keys: [withhold.tufKey.keyID: withhold.tufKey], threshold: 1))
        return (t, app, alice, bob, withhold)
    }

    func targetsVersion(_ t: TempRegistry, _ app: AppName) throws -> Int64 { try t.registry.latestMetadata(app: app, role: .targets).version }

    @Test("set up: targets delegates withhold with no paths and lists the fallback below the newest full patch; a channel delegation may not take the name")
    func setUpRole() async throws {
        let (t, app, alice, bob, withhold) = try setUp()
        let targets = try SignedTargets(bytes: try t.registry.latestMetadata(app: app, role: .targets).bytes).body
        let role = try #require(targets.delegations?.roles.first { $0.name == "withhold" })
        #expect(Withholds.isWithholdRole(role) && role.keyIDs == [withhold.tufKey.keyID])
        #expect(Set(targets.targets.keys) == ["2.3/1/main.js", "2.3/2/main.js"], "patch 1 stays listed as the fallback")
        #expect(try await t.verify(app).ok)
        #expect(try t.registry.auditEvents(app: app).map(\.action).contains("keys.withhold"))
        let staging = try ChannelName("staging")
        #expect(throws: RegistryError.self) {
            try Registry.signing(with: [alice, bob]) { () throws(RegistryError) in
                try t.registry.delegate(app: app, channel: staging, role: "withhold", keys: [withhold.tufKey], actor: t.actor)
            }
        }
    }

    @Test("halt with one person: lands at once through the withhold key; targets untouched; withhold.json lists it; snapshot pins it")
    func haltLandsAtOnce() throws {
        let (t, app, _, _, _) = try setUp()
        let before = try targetsVersion(t, app)
        let change = try t.registry.halt(app: app, appVersion: v23, number: 2, message: "crash on launch", actor: Actor("oncall@test"))
        #expect(change.changed && change.withheld?.rollBack == false && change.withheld?.reason == "crash on launch")
        #expect(change.json["withheld"]?["rollBack"]?.boolValue == false)
        #expect(try targetsVersion(t, app) == before, "no targets signature needed")
        #expect(try t.registry.pendingChanges(app: app).isEmpty)
        let file = try #require(try t.registry.latestDelegatedMetadata(app: app)["withhold"])
        let withholds = try Withholds(body: try SignedTargets(bytes: file.bytes).body)
        #expect(withholds.entries.keys.sorted() == ["2.3/2/main.js"])
        let snapshot = try SignedSnapshot(bytes: try t.registry.latestMetadata(app: app, role: .snapshot).bytes).body
        #expect(snapshot.meta["withhold.json"]?.version == file.version)
        #expect(try t.registry.auditEvents(app: app).last?.action == "patch.withhold")
        // The same halt again changes nothing.
        #expect(!(try t.registry.halt(app: app, appVersion: v23, number: 2, actor: Actor("oncall@test"))).changed)
    }

    @Test("revoke with one person: devices are told to roll back, at once; resume (giving it back) needs both release keys")
    func revokeThenResume() throws {
        let (t, app, alice, bob, _) = try setUp()
        let revoked = try t.registry.revoke(app: app, appVersion: v23, number: 2, actor: Actor("oncall@test"))
        #expect(revoked.map(\.number) == [2])
        #expect(try t.registry.withheldPatches(app: app).map(\.rollBack) == [true])
        #expect(try t.registry.auditEvents(app: app).last?.action == "patch.withhold.rollback")
        // Taking the withhold off gives the patch back: it waits for the release keys.
        let pending = try TwoPersonRuleTests().pendingChange { () throws(RegistryError) in
            try t.registry.resume(app: app, appVersion: v23, number: 2, actor: Actor("oncall@test"))
        }
        #expect(try t.registry.withheldPatches(app: app).count == 1, "still withheld while it waits")
        _ = try t.registry.approve(app: app, id: pending.id, keys: [alice, bob], actor: Actor("alice@test"))
        #expect(try t.registry.withheldPatches(app: app).isEmpty)
        #expect(try t.registry.auditEvents(app: app).map(\.action).contains("patch.withhold.lift"))
    }

    @Test("without a withhold role, or without its key here, a halt on a two-person app waits as before")
    func waitsWithoutTheKey() throws {
        let (t, app, _, _, withhold) = try setUp()
        try FileManager.default.removeItem(at: t.registry.keys.delegatedKeyURL(app: app, role: Withholds.roleName, keyID: withhold.tufKey.keyID))
        _ = try TwoPersonRuleTests().pendingChange { () throws(RegistryError) in
            try t.registry.halt(app: app, appVersion: v23, number: 2, actor: Actor("oncall@test"))
        }
        #expect(try t.registry.withheldPatches(app: app).isEmpty)
        // The on-call engineer's own copy of the withhold key, given for the change, is enough.
        let change = try Registry.signing(with: [withhold]) { () throws(RegistryError) in
            try t.registry.halt(app: app, appVersion: v23, number: 2, actor: Actor("oncall@test"))
        }
        #expect(change.withheld != nil)
    }

    @Test("a guard's trip on a two-person app lands at once through patchd's withhold key, as a halt only")
    func guardHalts() throws {
        let (t, app, alice, bob, _) = try setUp()
        _ = try Registry.signing(with: [alice, bob]) { () throws(RegistryError) in
            try t.registry.setGuard(app: app, maxRollbackPPM: 20_000, minDevices: 50, action: .revoke, actor: t.actor)
        }
        let touched = try feed(t, app, patch: 2, devices: 0..<60, rolledBack: 10)
        let trip = try #require(try t.registry.enforceGuards(app: app, patches: touched).first)
        #expect(trip.action == .halt)
        let withheld = try t.registry.withheldPatches(app: app)
        #expect(withheld.map(\.key.patch) == [2] && withheld.first?.rollBack == false && withheld.first?.actor == "patchd guard")
        #expect(try t.registry.pendingChanges(app: app).isEmpty)
    }
}
