import Foundation
import Testing
import PatchCore
@testable import PatchRegistry

@Suite("Key rotation")
struct RotationTests {
    @Test("each role can be rotated and a device pinned to root 1 follows the chain", arguments: [Role.root, .targets, .snapshot, .timestamp])
    func rotateRole(role: Role) async throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        try t.publish(app, "2.3", "one()")
        let pinned = try t.registry.initialRoot(app: app)
        let oldKey = try t.registry.currentRoot(app: app).body.roles[role]!.keyIDs
        let rotation = try t.registry.rotateKey(app: app, role: role, actor: t.actor)
        #expect(rotation.rootVersion == 2)
        let root = try t.registry.currentRoot(app: app)
        #expect(root.body.roles[role]!.keyIDs == [rotation.newKeyID])
        #expect(root.body.roles[role]!.keyIDs != oldKey)
        #expect(Set(root.body.keys.keys) == Set(root.body.roles.values.flatMap(\.keyIDs)), "retired keys are dropped from root")
        let keyFiles = try FileManager.default.contentsOfDirectory(atPath: t.root.appendingPathComponent("keys/demo").path)
        #expect(keyFiles.filter { $0.hasPrefix("\(role.rawValue).") } == ["\(role.rawValue).\(rotation.newKeyID).pem"], "the replaced key file is deleted")
        let report = try await t.verify(app, trustedRoot: pinned)
        #expect(report.ok && report.rootVersion == 2 && report.targets.count == 1)
        // Publishing after the rotation signs with the new key.
        try t.publish(app, "2.3", "two()")
        #expect(try await t.verify(app, trustedRoot: pinned).targets.map(\.path) == ["2.3/2/main.js"])
    }

    @Test("root N+1 is signed by the old and the new root key")
    func crossSigned() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        let v1 = try SignedRoot(bytes: try t.registry.initialRoot(app: app))
        try t.registry.rotateKey(app: app, role: .root, actor: t.actor)
        let v2 = try t.registry.currentRoot(app: app)
        #expect(v2.signatures.count == 2)
        try v2.verify(role: .root, delegator: v1.body)
        try v2.verify(role: .root, delegator: v2.body)
    }

    @Test("several rotations in a row keep the chain walkable")
    func chain() async throws {
        let t = try TempRegistry()
        let app = try t.app("demo", encrypted: true)
        try t.publish(app, "2.3", "one()")
        for role in [Role.root, .timestamp, .root, .targets, .snapshot, .root] { try t.registry.rotateKey(app: app, role: role, actor: t.actor) }
        let report = try await t.verify(app, contentKey: try t.registry.keys.contentKey(app: app))
        #expect(report.ok && report.rootVersion == 7)
    }

    @Test("export re-signs online roles that are close to expiry")
    func refresh() async throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        let longAgo = Date().addingTimeInterval(-20 * 3600)
        try t.publish(app, "2.3", "one()", now: longAgo)
        let before = try t.registry.latestMetadata(app: app, role: .timestamp).version
        #expect(try await t.verify(app).ok)
        #expect(try t.registry.latestMetadata(app: app, role: .timestamp).version == before + 1)
    }

    @Test("an offline targets key does not stop the timestamp from being kept fresh")
    func refreshWithOfflineTargetsKey() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        let later = Date().addingTimeInterval(80 * 86_400)
        let keyDir = t.root.appendingPathComponent("keys/demo")
        for file in try FileManager.default.contentsOfDirectory(atPath: keyDir.path) where file.hasPrefix("targets.") {
            try FileManager.default.removeItem(at: keyDir.appendingPathComponent(file))
        }
        let refresh = try t.registry.refreshExpiring(app: app, now: later)
        #expect(refresh.roles == [.snapshot, .timestamp])
        #expect("\(refresh.failure.map { "\($0)" } ?? "")".contains("targets key"))
        let timestamp = try SignedTimestamp(bytes: try t.registry.latestMetadata(app: app, role: .timestamp).bytes)
        #expect(timestamp.body.expires > later)
    }
}

