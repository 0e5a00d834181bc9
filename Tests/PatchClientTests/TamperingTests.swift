import Foundation
import PatchCore
import PatchSigning
import PatchRegistry
import Testing
@testable import PatchClient

/// Arbitrary-installation, mix-and-match and endless-data attacks by whoever serves the
/// files. Each test installs patch 1 first, then publishes patch 2 and serves it tampered:
/// the sync must fail with the right error and patch 1 must stay installed, byte for byte.
@Suite("PatchClient refuses tampered repositories")
struct TamperingTests {
    /// A device of `app` with patch 1 installed from a mirror, and patch 2 published
    /// (exported as `files`, not yet served).
    struct Scene {
        let fixture: ClientFixture
        let mirror: Mirror
        let client: PatchClient
        let good: GoodPatch
        let patch2: PatchRecord
        let files: [String: [UInt8]]
    }

    static func scene(_ app: (ClientFixture) -> AppName = { $0.demo }) async throws -> Scene {
        let fixture = try ClientFixture()
        let app = app(fixture)
        try fixture.publish(app)
        let mirror = try Mirror()
        mirror.serve(try fixture.exported(app))
        let client = PatchClient(configuration: try fixture.configuration(app, server: mirror.url))
        let good = try await installGood(client, number: 1, script: ClientFixture.script(app, 1))
        let patch2 = try fixture.publish(app)
        return Scene(fixture: fixture, mirror: mirror, client: client, good: good, patch2: patch2, files: try fixture.exported(app))
    }

    @Test("a bundle with one byte changed (same length) → .verification(hash mismatch)")
    func tamperedBundle() async throws {
        let scene = try await Self.scene()
        scene.mirror.serve(scene.files)
        for path in ClientFixture.targetPaths(scene.patch2) {
            var bytes = scene.mirror.bytes(path)
            bytes[bytes.count / 2] ^= 0x01
            scene.mirror.serve([path: bytes])
        }
        let outcome = await scene.client.sync(force: true)
        #expect(isHashMismatch(outcome.verificationError, what: "target 2.3/2/main.js"), "\(outcome)")
        expectKept(scene.client, scene.good)
    }

    @Test("a timestamp.json that is not valid UTF-8 → .verification(.malformed), nothing else fetched")
    func invalidUTF8Metadata() async throws {
        let scene = try await Self.scene()
        scene.mirror.serve(scene.files)
        let path = ClientFixture.metadataPath(scene.fixture.demo, "timestamp.json")
        var bytes = scene.mirror.bytes(path)
        let quote = try #require(bytes.firstIndex(of: UInt8(ascii: "_")))
        bytes[quote] = 0xFF  // inside the "_type" key: a byte that is never UTF-8
        scene.mirror.serve([path: bytes])
        let before = scene.mirror.requests.count
        let outcome = await scene.client.sync(force: true)
        guard case .failed(.verification(.malformed(let role, _))) = outcome else {
            Issue.record("expected .verification(.malformed), got \(outcome)")
            return
        }
        #expect(role == "timestamp")
        #expect(!scene.mirror.requests.dropFirst(before).contains { $0.contains("snapshot") }, "nothing after the bad timestamp is fetched")
        expectKept(scene.client, scene.good)
    }

    @Test("targets metadata with one byte changed → .verification(hash mismatch against the snapshot's pin)")
    func tamperedTargets() async throws {
        let scene = try await Self.scene()
        scene.mirror.serve(scene.files)
        let path = ClientFixture.metadataPath(scene.fixture.demo, "3.targets.json")
        var bytes = scene.mirror.bytes(path)
        let rollout = try #require(bytes.firstRange(of: Array("\"rollout\":100".utf8)))
        bytes[rollout.upperBound - 1] = UInt8(ascii: "1") // "rollout":100 → "rollout":101, same length
        scene.mirror.serve([path: bytes])
        let outcome = await scene.client.sync(force: true)
        #expect(outcome == .failed(.verification(.hashMismatch(what: "targets metadata", algorithm: "sha256"))))
        expectKept(scene.client, scene.good)
    }

    @Test("a timestamp whose signed part was edited → .verification(.unsignedThreshold)")
    func tamperedTimestamp() async throws {
        let scene = try await Self.scene()
        scene.mirror.serve(scene.files)
        let path = ClientFixture.metadataPath(scene.fixture.demo, "timestamp.json")
        let text = String(decoding: scene.mirror.bytes(path), as: UTF8.self)
        #expect(text.hasSuffix("\"version\":3}}"))
        scene.mirror.serve([path: Array(text.replacingOccurrences(of: "\"version\":3}}", with: "\"version\":9}}").utf8)])
        let outcome = await scene.client.sync(force: true)
        #expect(outcome == .failed(.verification(.unsignedThreshold(role: "timestamp", valid: 0, threshold: 1))))
        expectKept(scene.client, scene.good)
    }

    @Test("targets re-signed with a key root does not list (valid snapshot and timestamp) → .verification(.unsignedThreshold)")
    func targetsSignedWithWrongKey() async throws {
        let scene = try await Self.scene()
        scene.mirror.serve(scene.files)
        let stranger = try Ed25519PrivateKey.generate()
        scene.mirror.serve(try scene.fixture.forgedChain(scene.fixture.demo, targets: { _ in }, targetsKey: stranger))
        let outcome = await scene.client.sync(force: true)
        #expect(outcome == .failed(.verification(.unsignedThreshold(role: "targets", valid: 0, threshold: 1))))
        expectKept(scene.client, scene.good)
    }

    @Test("a timestamp signed with a freshly generated key → .verification(.unsignedThreshold)")
    func timestampSignedWithWrongKey() async throws {
        let scene = try await Self.scene()
        scene.mirror.serve(scene.files)
        let fixture = scene.fixture
        let snapshot = try fixture.latestSnapshot(fixture.demo)
        let forged = try fixture.forgedTimestamp(fixture.demo, pinning: (snapshot.body.version, snapshot.bytes), key: try Ed25519PrivateKey.generate())
        scene.mirror.serve([ClientFixture.metadataPath(fixture.demo, "timestamp.json"): forged])
        let outcome = await scene.client.sync(force: true)
        #expect(outcome == .failed(.verification(.unsignedThreshold(role: "timestamp", valid: 0, threshold: 1))))
        expectKept(scene.client, scene.good)
    }

    @Test("mix-and-match: patch 1's bytes at patch 2's URL → .verification; another app's (longer) bundle there → .tooLarge")
    func otherBundleAtTargetURL() async throws {
        let scene = try await Self.scene()
        scene.mirror.serve(scene.files)
        let patch1 = try #require(try scene.fixture.registry.patches(app: scene.fixture.demo, appVersion: scene.fixture.version, activeOnly: true).first { $0.number == 1 })
        for path in ClientFixture.targetPaths(scene.patch2) { scene.mirror.serve([path: scene.good.bytes]) }
        #expect(patch1.served.length == scene.patch2.served.length)
        var outcome = await scene.client.sync(force: true)
        #expect(isHashMismatch(outcome.verificationError, what: "target 2.3/2/main.js"), "\(outcome)")
        expectKept(scene.client, scene.good)

        let foreign = try scene.fixture.publish(scene.fixture.secret)
        let foreignBytes = try scene.fixture.registry.servedBytes(sha256: foreign.served.sha256)
        for path in ClientFixture.targetPaths(scene.patch2) { scene.mirror.serve([path: foreignBytes]) }
        outcome = await scene.client.sync(force: true)
        #expect(foreignBytes.count > scene.patch2.served.length)
        let url = scene.mirror.url.absoluteString + ClientFixture.targetPaths(scene.patch2)[0]
        #expect(outcome == .failed(.tooLarge(what: url, limit: scene.patch2.served.length)), "refused from its Content-Length, unread")
        expectKept(scene.client, scene.good)

        // Shorter than signed: the length check names it.
        for path in ClientFixture.targetPaths(scene.patch2) { scene.mirror.serve([path: Array(foreignBytes.prefix(10))]) }
        outcome = await scene.client.sync(force: true)
        #expect(outcome == .failed(.verification(.lengthMismatch(what: "target 2.3/2/main.js", expected: scene.patch2.served.length, got: 10))))
        expectKept(scene.client, scene.good)
    }

    @Test("encrypted mix-and-match: patch 1's ciphertext at patch 2's URL fails its hashes; listed as patch 2 by a targets-key holder it fails decryption (AAD)")
    func ciphertextOfAnotherPatchNumber() async throws {
        let scene = try await Self.scene { $0.secret }
        let fixture = scene.fixture
        scene.mirror.serve(scene.files)
        let patch1 = try #require(try fixture.registry.patches(app: fixture.secret, appVersion: fixture.version, activeOnly: false).first { $0.number == 1 })
        let ciphertext1 = try fixture.registry.servedBytes(sha256: patch1.served.sha256)
        for path in ClientFixture.targetPaths(scene.patch2) { scene.mirror.serve([path: ciphertext1]) }
        var outcome = await scene.client.sync(force: true)
        #expect(isHashMismatch(outcome.verificationError, what: "target 2.3/2/main.js"), "\(outcome)")
        expectKept(scene.client, scene.good)

        // The attacker holds the targets key (not the content key) and lists patch 1's
        // ciphertext as patch 2: signatures and hashes pass, the AAD binding does not.
        scene.mirror.serve(try fixture.forgedChain(fixture.secret, targets: { targets in
            targets.targets["2.3/2/main.js"]!.length = patch1.served.length
            targets.targets["2.3/2/main.js"]!.hashes = ["sha256": patch1.served.sha256, "md5": patch1.served.md5]
        }))
        scene.mirror.serve(["/v1/apps/secret/targets/2.3/2/\(patch1.served.sha256).main.js": ciphertext1])
        outcome = await scene.client.sync(force: true)
        guard case .failed(.decryption) = outcome else {
            Issue.record("expected .decryption, got \(outcome)")
            return
        }
        expectKept(scene.client, scene.good)
    }

    @Test("endless data: a target longer than its signed length → .tooLarge, nothing installed")
    func targetLongerThanSigned() async throws {
        let scene = try await Self.scene()
        scene.mirror.serve(scene.files)
        let path = ClientFixture.targetPaths(scene.patch2)[0]
        scene.mirror.serve([path: scene.mirror.bytes(path) + [UInt8](repeating: 0x20, count: 1 << 20)])
        let outcome = await scene.client.sync(force: true)
        #expect(outcome == .failed(.tooLarge(what: scene.mirror.url.absoluteString + path, limit: scene.patch2.served.length)))
        expectKept(scene.client, scene.good)
    }

    @Test("endless data: a chunked bundle that never ends (no Content-Length) → .tooLarge, and the client hangs up")
    func endlessChunkedTarget() async throws {
        let fixture = try ClientFixture()
        try fixture.publish(fixture.demo)
        let mirror = try Mirror()
        mirror.serve(try fixture.exported(fixture.demo))
        var clients: [PatchClient] = []
        var goods: [GoodPatch] = []
        for device in ["device-a", "device-b", "device-c"] {
            clients.append(PatchClient(configuration: try fixture.configuration(fixture.demo, server: mirror.url, device: device)))
            goods.append(try await installGood(clients.last!, number: 1, script: ClientFixture.script(fixture.demo, 1)))
        }
        // The metadata of patch 2 is accepted and cached while its bundle is missing…
        let patch2 = try fixture.publish(fixture.demo)
        mirror.serve(try fixture.exported(fixture.demo))
        for path in ClientFixture.targetPaths(patch2) { mirror[path] = nil }
        for client in clients {
            let outcome = await client.sync(force: true)
            #expect(outcome == .failed(.server(status: 404, url: mirror.url.absoluteString + ClientFixture.targetPaths(patch2)[0])))
        }
        // …then the three devices meet a server that streams the bundle without end.
        let cap = 128 << 20
        let endless = try EndlessServer(timestamp: mirror.bytes(ClientFixture.metadataPath(fixture.demo, "timestamp.json")), cap: cap)
        let configurations = clients.map { client in
            var configuration = client.configuration
            configuration.server = endless.url
            return configuration
        }
        let started = Date()
        let outcomes = await withTaskGroup(of: SyncOutcome.self) { group in
            for configuration in configurations { group.addTask { await PatchClient(configuration: configuration).sync(force: true) } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        let elapsed = Date().timeIntervalSince(started)
        let expected = SyncOutcome.failed(.tooLarge(what: endless.url.absoluteString + ClientFixture.targetPaths(patch2)[0], limit: patch2.served.length))
        #expect(outcomes == [expected, expected, expected])
        for (client, good) in zip(clients, goods) { expectKept(client, good) }
        // The syncs answer as soon as the cap is passed (HTTPFetcher resolves the request
        // itself rather than waiting for the cancelled transfer to report back). Bounded well
        // inside the 20 s request timeout a stuck transfer would end at, with room for this
        // task's wait to run again on the executor the other tests share.
        #expect(elapsed < 15, "the syncs took \(elapsed) s")
        // libcurl aborts the transfer from its write callback: the streams are not read on.
        // (Three streams' socket buffers can pass 16 MB together: no bound on the bytes.)
        expectNotReadOn(endless, sentBelow: nil)
    }

    @Test("endless data: a timestamp.json over 16384 bytes → .tooLarge")
    func hugeTimestamp() async throws {
        let scene = try await Self.scene()
        scene.mirror.serve(scene.files)
        let path = ClientFixture.metadataPath(scene.fixture.demo, "timestamp.json")
        scene.mirror.serve([path: [UInt8](repeating: 0x20, count: 16_385)])
        let outcome = await scene.client.sync(force: true)
        #expect(outcome == .failed(.tooLarge(what: scene.mirror.url.absoluteString + path, limit: 16_384)))
        expectKept(scene.client, scene.good)
    }

    @Test("a content key other than the app's → .decryption; no content key → .missingContentKey")
    func contentKeyProblems() async throws {
        let scene = try await Self.scene { $0.secret }
        scene.mirror.serve(scene.files)
        var configuration = scene.client.configuration
        configuration.contentKey = Data(try SecureRandom.bytes(32))
        var outcome = await PatchClient(configuration: configuration).sync(force: true)
        #expect(outcome == .failed(.decryption("the configured content key is not the one this patch was encrypted with")))
        expectKept(scene.client, scene.good)

        configuration.contentKey = nil
        outcome = await PatchClient(configuration: configuration).sync(force: true)
        #expect(outcome == .failed(.missingContentKey))
        expectKept(scene.client, scene.good)
    }

    @Test("endless data: a root or snapshot longer than its cap or pin → .tooLarge; a signed length over maxBundleSize is not fetched")
    func metadataAndBundleCaps() async throws {
        let scene = try await Self.scene()
        let fixture = scene.fixture
        scene.mirror.serve(scene.files)
        let root2 = ClientFixture.metadataPath(fixture.demo, "2.root.json")
        scene.mirror.serve([root2: [UInt8](repeating: 0x20, count: 512_001)])
        var outcome = await scene.client.sync(force: true)
        #expect(outcome == .failed(.tooLarge(what: scene.mirror.url.absoluteString + root2, limit: 512_000)))
        expectKept(scene.client, scene.good)
        scene.mirror[root2] = nil

        let snapshot = ClientFixture.metadataPath(fixture.demo, "3.snapshot.json")
        let pinned = try #require(try fixture.latestTimestamp(fixture.demo).body.snapshot.length)
        scene.mirror.serve([snapshot: scene.files[snapshot]! + [0x20]])
        outcome = await scene.client.sync(force: true)
        #expect(outcome == .failed(.tooLarge(what: scene.mirror.url.absoluteString + snapshot, limit: pinned)))
        expectKept(scene.client, scene.good)
        scene.mirror.serve(scene.files)

        var configuration = scene.client.configuration
        configuration.maxBundleSize = scene.patch2.served.length - 1
        let capped = PatchClient(configuration: configuration)
        let before = scene.mirror.requests.count
        outcome = await capped.sync(force: true)
        #expect(outcome == .failed(.tooLarge(what: "2.3/2/main.js", limit: scene.patch2.served.length - 1)))
        #expect(!scene.mirror.requests[before...].contains { $0.contains("/targets/") }, "the bundle is never requested")
        expectKept(capped, scene.good)
    }
}
