import Foundation
import PatchCore
import PatchSigning
import PatchRegistry
import Testing
@testable import PatchClient

/// Key rotation as a device pinned to 1.root.json lives through it, and key compromise.
@Suite("PatchClient follows key rotations")
struct RotationTests {
    /// The newest root of the chain the client keeps as `N.root.json` (the pinned root is not cached).
    static func cachedRootVersion(_ client: PatchClient) throws -> Int64 {
        let directory = client.configuration.metadataDirectory
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".root.json") }
        let versions = try names.map { name in
            let bytes = try #require(CacheFiles.read(directory.appendingPathComponent(name)))
            let version = try SignedRoot(bytes: bytes).body.version
            #expect(name == "\(version).root.json")
            return version
        }
        return versions.max() ?? 1
    }

    @Test("root rotated 3 times between syncs: a device pinned to 1.root.json walks 2, 3, 4 and keeps installing")
    func followsRootRotations() async throws {
        let fixture = try ClientFixture()
        try fixture.publish(fixture.demo)
        let mirror = try Mirror()
        mirror.serve(try fixture.exported(fixture.demo))
        let client = PatchClient(configuration: try fixture.configuration(fixture.demo, server: mirror.url))
        try await installGood(client, number: 1, script: ClientFixture.script(fixture.demo, 1))

        for _ in 0..<3 { try fixture.registry.rotateKey(app: fixture.demo, role: .root, actor: fixture.actor) }
        try fixture.publish(fixture.demo)
        mirror.serve(try fixture.exported(fixture.demo))
        try await installGood(client, number: 2, script: ClientFixture.script(fixture.demo, 2))
        #expect(try Self.cachedRootVersion(client) == 4)
        for version in 2...4 { #expect(mirror.requests.contains("/v1/apps/demo/metadata/\(version).root.json")) }

        // Once more, with the other roles' keys rotated as well: still followed.
        for role in [Role.root, .targets, .snapshot, .timestamp] { try fixture.registry.rotateKey(app: fixture.demo, role: role, actor: fixture.actor) }
        try fixture.publish(fixture.demo)
        mirror.serve(try fixture.exported(fixture.demo))
        try await installGood(client, number: 3, script: ClientFixture.script(fixture.demo, 3))
        #expect(try Self.cachedRootVersion(client) == 8)

        // A new device, pinned to the same 1.root.json, walks the whole chain at once.
        let fresh = PatchClient(configuration: try fixture.configuration(fixture.demo, server: mirror.url, device: "device-new"))
        try await installGood(fresh, number: 3, script: ClientFixture.script(fixture.demo, 3))
        #expect(try Self.cachedRootVersion(fresh) == 8)
    }

    @Test("a next root signed by a key the trusted root does not list → .verification(.unsignedThreshold) for root")
    func forgedNextRoot() async throws {
        let device = try await InstalledDevice.demo()
        let (fixture, mirror, client, good) = (device.fixture, device.mirror, device.client, device.good)

        // The attacker makes root 2 name their own key for every role and signs it with it.
        let attacker = try Ed25519PrivateKey.generate()
        var body = try fixture.registry.currentRoot(app: fixture.demo).body
        body.version = 2
        body.keys = [attacker.tufKey.keyID: attacker.tufKey]
        for role in Role.allCases { body.roles[role] = RoleKeys(keyIDs: [attacker.tufKey.keyID]) }
        mirror.serve(["/v1/apps/demo/metadata/2.root.json": try SignedRoot(signing: body, with: [attacker]).bytes])
        let outcome = await client.sync(force: true)
        #expect(outcome == .failed(.verification(.unsignedThreshold(role: "root", valid: 0, threshold: 1))))
        expectKept(client, good)
        #expect(CacheFiles.read(client.configuration.metadataDirectory.appendingPathComponent("2.root.json")) == nil,
                "the forged root is not cached (the pinned root 1 stays the only one)")
    }

    @Test("timestamp key compromised and rotated: a timestamp signed with the OLD key is refused, the real one accepted")
    func oldTimestampKeyAfterRotation() async throws {
        let device = try await InstalledDevice.demo()
        let (fixture, mirror, client, good) = (device.fixture, device.mirror, device.client, device.good)

        // The attacker copied the timestamp key; the publisher notices and rotates it.
        let stolen = try fixture.signingKey(fixture.demo, .timestamp)
        let rotation = try fixture.registry.rotateKey(app: fixture.demo, role: .timestamp, actor: fixture.actor)
        #expect(rotation.oldKeyIDs == [stolen.tufKey.keyID])
        let legit = try fixture.exported(fixture.demo)
        mirror.serve(legit)

        // Before the device has seen root 2, and after: either way the stolen key signs nothing.
        let snapshot = try fixture.latestSnapshot(fixture.demo)
        let forged = try fixture.forgedTimestamp(fixture.demo, pinning: (snapshot.body.version, snapshot.bytes), version: 100, key: stolen)
        let timestampPath = ClientFixture.metadataPath(fixture.demo, "timestamp.json")
        mirror.serve([timestampPath: forged])
        var outcome = await client.sync(force: true)
        #expect(outcome == .failed(.verification(.unsignedThreshold(role: "timestamp", valid: 0, threshold: 1))))
        expectKept(client, good)
        #expect(try Self.cachedRootVersion(client) == 2, "root 2 (new timestamp key) was accepted before the timestamp was checked")

        outcome = await client.sync(force: true)
        #expect(outcome == .failed(.verification(.unsignedThreshold(role: "timestamp", valid: 0, threshold: 1))))
        expectKept(client, good)

        // The real repository is accepted again, and its version 100 forgery left no trace.
        mirror.serve([timestampPath: legit[timestampPath]!])
        #expect(await client.sync(force: true) == .unchanged(client.currentPatch()))
        try fixture.publish(fixture.demo)
        mirror.serve(try fixture.exported(fixture.demo))
        try await installGood(client, number: 2, script: ClientFixture.script(fixture.demo, 2))
    }

    @Test("an expired pinned root with no successor → .verification(.expired root); once root 2 is published it is followed")
    func expiredPinnedRoot() async throws {
        let fixture = try ClientFixture()
        let old = try AppName("old")
        let twoYearsAgo = Date().addingTimeInterval(-2 * 365 * 86_400)
        try fixture.registry.createApp(old, encrypted: false, actor: fixture.actor, now: twoYearsAgo)
        let pinned = try fixture.initialRoot(old)
        _ = try fixture.registry.publish(app: old, appVersion: fixture.version, bundle: Array("old();".utf8), actor: fixture.actor)
        let mirror = try Mirror()
        mirror.serve(try fixture.exported(old))
        var configuration = try fixture.configuration(fixture.demo, server: mirror.url)
        configuration.app = old
        configuration.trustedRoot = Data(pinned)
        let client = PatchClient(configuration: configuration)
        let expires = try SignedRoot(bytes: pinned).body.expires
        #expect(await client.sync(force: true) == .failed(.verification(.expired(role: "root", expires: TUFTime.format(expires)))))
        #expect(client.currentPatch() == nil)

        // An expired intermediate root does not matter; the newest one must be valid.
        try fixture.registry.rotateKey(app: old, role: .root, actor: fixture.actor)
        mirror.serve(try fixture.exported(old))
        try await installGood(client, number: 1, script: "old();")
    }
}
