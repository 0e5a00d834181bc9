import Foundation
import PatchCore
import PatchRegistry
import Testing
@testable import PatchClient

/// Replay and freeze attacks: old metadata served again, or metadata that has expired.
@Suite("PatchClient refuses rolled-back and frozen metadata")
struct RollbackFreezeTests {
    /// A device that installed patch 1 (timestamp/snapshot/targets v2), then patch 2 (v3);
    /// `old` is the export from before patch 2 was published.
    struct Scene {
        let fixture: ClientFixture
        let mirror: Mirror
        let client: PatchClient
        let good: GoodPatch
        let old: [String: [UInt8]]
    }

    static func scene() async throws -> Scene {
        let fixture = try ClientFixture()
        try fixture.publish(fixture.demo)
        let old = try fixture.exported(fixture.demo)
        let mirror = try Mirror()
        mirror.serve(old)
        let client = PatchClient(configuration: try fixture.configuration(fixture.demo, server: mirror.url))
        try await installGood(client, number: 1, script: ClientFixture.script(fixture.demo, 1))
        try fixture.publish(fixture.demo)
        mirror.serve(try fixture.exported(fixture.demo))
        let good = try await installGood(client, number: 2, script: ClientFixture.script(fixture.demo, 2))
        #expect(try fixture.latestTimestamp(fixture.demo).body.version == 3)
        return Scene(fixture: fixture, mirror: mirror, client: client, good: good, old: old)
    }

    static func path(_ name: String) -> String { "/v1/apps/demo/metadata/\(name)" }

    @Test("after timestamp v3, the old v2 timestamp served again → .verification(.rollback)")
    func timestampRollback() async throws {
        let scene = try await Self.scene()
        scene.mirror.serve([Self.path("timestamp.json"): scene.old[Self.path("timestamp.json")]!])
        let outcome = await scene.client.sync(force: true)
        #expect(outcome == .failed(.verification(.rollback(role: "timestamp", trusted: 3, offered: 2))))
        expectKept(scene.client, scene.good)
    }

    @Test("a newer timestamp (real key) pinning the old snapshot v2 → .verification(.rollback) of the snapshot")
    func snapshotRollback() async throws {
        let scene = try await Self.scene()
        let oldSnapshot = try #require(scene.old[Self.path("2.snapshot.json")])
        let forged = try scene.fixture.forgedTimestamp(scene.fixture.demo, pinning: (2, oldSnapshot))
        scene.mirror.serve([Self.path("timestamp.json"): forged])
        let outcome = await scene.client.sync(force: true)
        #expect(outcome == .failed(.verification(.rollback(role: "snapshot", trusted: 3, offered: 2))))
        expectKept(scene.client, scene.good)
    }

    @Test("a newer snapshot (real key) pinning the old targets v2 → .verification(.rollback) of targets, and again on the next sync (spec 5.5.5: the cached snapshot v3 stays the floor)")
    func targetsRollbackAcrossTwoSyncs() async throws {
        let scene = try await Self.scene()
        let fixture = scene.fixture
        // Whoever holds the online timestamp and snapshot keys signs a snapshot v4 naming the old targets v2.
        let oldTargets = try #require(scene.old[Self.path("2.targets.json")])
        let snapshot = try fixture.forgedSnapshot(fixture.demo, pinning: (2, oldTargets))
        let timestamp = try fixture.forgedTimestamp(fixture.demo, pinning: snapshot)
        scene.mirror.serve([Self.path("\(snapshot.version).snapshot.json"): snapshot.bytes, Self.path("timestamp.json"): timestamp])
        let refused = SyncOutcome.failed(.verification(.rollback(role: "targets.json", trusted: 3, offered: 2)))
        // The first sync stores timestamp v4 and refuses snapshot v4; the second starts from
        // that timestamp, whose pin the cached snapshot v3 no longer matches.
        #expect(await scene.client.sync(force: true) == refused)
        expectKept(scene.client, scene.good)
        #expect(await scene.client.sync(force: true) == refused, "the retry must not accept what the first sync refused")
        expectKept(scene.client, scene.good)
    }

    @Test("freeze: a new timestamp that has already expired (published with now: two days ago) → .verification(.expired)")
    func expiredNewTimestamp() async throws {
        let scene = try await Self.scene()
        let fixture = scene.fixture
        let past = Date().addingTimeInterval(-2 * 86_400)
        try fixture.publish(fixture.demo, now: past)
        scene.mirror.serve(try fixture.exported(fixture.demo, now: past))
        let timestamp = try fixture.latestTimestamp(fixture.demo)
        #expect(timestamp.body.version == 4)
        let outcome = await scene.client.sync(force: true)
        #expect(outcome == .failed(.verification(.expired(role: "timestamp", expires: TUFTime.format(timestamp.body.expires)))))
        expectKept(scene.client, scene.good)
    }

    @Test("freeze: a timestamp re-signed with the real timestamp key but expired an hour ago → .verification(.expired)")
    func expiredResignedTimestamp() async throws {
        let scene = try await Self.scene()
        let fixture = scene.fixture
        let snapshot = try fixture.latestSnapshot(fixture.demo)
        let expires = Date().addingTimeInterval(-3600)
        let forged = try fixture.forgedTimestamp(fixture.demo, pinning: (snapshot.body.version, snapshot.bytes), expires: expires)
        scene.mirror.serve([Self.path("timestamp.json"): forged])
        let outcome = await scene.client.sync(force: true)
        #expect(outcome == .failed(.verification(.expired(role: "timestamp", expires: TUFTime.format(expires)))))
        expectKept(scene.client, scene.good)
    }

    @Test("freeze: the same timestamp served on after it expired (a mirror that stopped updating) → .verification(.expired)")
    func staleMirror() async throws {
        let scene = try await Self.scene()
        let expires = try scene.fixture.latestTimestamp(scene.fixture.demo).body.expires
        let outcome = await scene.client.sync(force: true, now: expires.addingTimeInterval(60))
        #expect(outcome == .failed(.verification(.expired(role: "timestamp", expires: TUFTime.format(expires)))))
        expectKept(scene.client, scene.good)
    }

    @Test("freeze: snapshot and targets kept from cache are still checked for expiry (timestamp fresh, snapshot expired)")
    func expiredCachedSnapshot() async throws {
        let scene = try await Self.scene()
        let fixture = scene.fixture
        let snapshot = try fixture.latestSnapshot(fixture.demo)
        // 31 days on, a timestamp re-signed with the real key still pins the same, now expired, snapshot.
        let later = Date().addingTimeInterval(31 * 86_400)
        let forged = try fixture.forgedTimestamp(fixture.demo, pinning: (snapshot.body.version, snapshot.bytes), expires: later.addingTimeInterval(86_400))
        scene.mirror.serve([Self.path("timestamp.json"): forged])
        let outcome = await scene.client.sync(force: true, now: later)
        #expect(outcome == .failed(.verification(.expired(role: "snapshot", expires: TUFTime.format(snapshot.body.expires)))))
        expectKept(scene.client, scene.good)
    }
}
