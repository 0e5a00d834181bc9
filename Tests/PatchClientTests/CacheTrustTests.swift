import Foundation
import PatchCore
import PatchSigning
import PatchRegistry
import Testing
@testable import PatchClient

/// The cache directory is not a root of trust: whatever is read from it must chain from the
/// root the app pins, as if it had just been downloaded.
@Suite("PatchClient trusts nothing from its cache that does not chain from the pinned root")
struct CacheTrustTests {
    /// A complete repository of the attacker's own: root v1 naming only `key` for every role,
    /// and timestamp/snapshot/targets (versions well past the real ones) listing an evil
    /// patch 2, with its bundle, as URL path → bytes. `root` is the self-signed root.
    struct EvilRepository {
        let root: [UInt8]
        let files: [String: [UInt8]]
        let script: [UInt8]
    }

    static func evilRepository(_ fixture: ClientFixture, rootVersion: Int64 = 1) throws -> EvilRepository {
        let app = fixture.demo
        let key = try Ed25519PrivateKey.generate()
        var root = try fixture.registry.currentRoot(app: app).body
        root.version = rootVersion
        root.keys = [key.tufKey.keyID: key.tufKey]
        for role in Role.allCases { root.roles[role] = RoleKeys(keyIDs: [key.tufKey.keyID]) }

        let script = Array("steal(localStorage);\n".utf8)
        let digests = BundleDigests(of: script)
        let custom: JSON = .object([
            "patch": .int(2), "rollout": .int(100), "published": .string(TUFTime.format(Date())),
            "plaintext": .object(["length": .int(Int64(script.count)), "sha256": .string(digests.sha256), "md5": .string(digests.md5)]),
        ])
        var targets = try fixture.latestTargets(app).body
        targets.version += 10
        targets.targets["2.3/2/main.js"] = TargetFile(length: script.count, hashes: ["sha256": digests.sha256, "md5": digests.md5], custom: custom)
        let targetsBytes = try SignedTargets(signing: targets, with: [key]).bytes
        var snapshot = try fixture.latestSnapshot(app).body
        snapshot.version += 10
        snapshot.meta["targets.json"] = MetaFile(version: targets.version, bytes: targetsBytes)
        let snapshotBytes = try SignedSnapshot(signing: snapshot, with: [key]).bytes
        var timestamp = try fixture.latestTimestamp(app).body
        timestamp.version += 10
        timestamp.snapshot = MetaFile(version: snapshot.version, bytes: snapshotBytes)
        return EvilRepository(root: try SignedRoot(signing: root, with: [key]).bytes, files: [
            ClientFixture.metadataPath(app, "timestamp.json"): try SignedTimestamp(signing: timestamp, with: [key]).bytes,
            ClientFixture.metadataPath(app, "\(snapshot.version).snapshot.json"): snapshotBytes,
            ClientFixture.metadataPath(app, "\(targets.version).targets.json"): targetsBytes,
            "/v1/apps/\(app.rawValue)/targets/2.3/2/\(digests.sha256).main.js": script,
            "/v1/apps/\(app.rawValue)/targets/2.3/2/\(digests.md5).main.js": script,
        ], script: script)
    }

    @Test("a self-signed root planted in the cache (root.json v1, 2.root.json v2) is not trusted: the attacker's repository is refused, the planted roots are dropped, the honest server still works")
    func plantedRoot() async throws {
        let device = try await InstalledDevice.demo()
        let (fixture, mirror, client, good) = (device.fixture, device.mirror, device.client, device.good)
        let evil = try Self.evilRepository(fixture)
        let cache = client.configuration.metadataDirectory
        // Whoever can write the cache directory (another app, a restored backup) plants its root
        // under the name older clients used and as the next link of the chain.
        try CacheFiles.write(evil.root, to: cache.appendingPathComponent("root.json"))
        try CacheFiles.write(try Self.evilRepository(fixture, rootVersion: 2).root, to: cache.appendingPathComponent("2.root.json"))
        mirror.serve(evil.files)

        let outcome = await client.sync(force: true)
        #expect(outcome == .failed(.verification(.unsignedThreshold(role: "timestamp", valid: 0, threshold: 1))), "\(outcome)")
        #expect(client.scriptBytes != evil.script)
        expectKept(client, good)
        #expect(CacheFiles.read(cache.appendingPathComponent("2.root.json")) == nil, "a cached root that does not chain is discarded")

        // The honest repository (patch 2 published for real) is followed as before.
        try fixture.publish(fixture.demo)
        mirror.serve(try fixture.exported(fixture.demo))
        try await installGood(client, number: 2, script: ClientFixture.script(fixture.demo, 2))
    }
}
