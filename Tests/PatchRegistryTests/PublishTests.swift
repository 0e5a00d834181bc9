import Foundation
import Testing
import PatchCore
import PatchSigning
@testable import PatchRegistry

@Suite("Publishing")
struct PublishTests {
    @Test("patch numbers start at 1 and grow per app version, independently")
    func numbering() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        #expect(try t.publish(app, "2.3", "a()").number == 1)
        #expect(try t.publish(app, "2.3", "b()").number == 2)
        #expect(try t.publish(app, "2.4", "c()").number == 1)
        try t.registry.revoke(app: app, appVersion: try AppVersion("2.3"), number: nil, actor: t.actor)
        #expect(try t.publish(app, "2.3", "d()").number == 3, "numbers of revoked patches are never reused")
    }

    @Test("publish records plaintext and served digests and signs a new targets/snapshot/timestamp")
    func digestsAndMetadata() async throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        let before = try t.registry.latestMetadata(app: app, role: .timestamp).version
        let patch = try t.publish(app, "2.3", "abc")
        #expect(patch.plaintext == BundleDigests(length: 3, sha256: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
                                                 md5: "900150983cd24fb0d6963f7d28e17f72"))
        #expect(patch.served == patch.plaintext)
        #expect(try t.registry.latestMetadata(app: app, role: .timestamp).version == before + 1)
        let target = try #require(try t.targets(app).targets["2.3/1/main.js"])
        #expect(target.hashes == ["sha256": patch.served.sha256, "md5": patch.served.md5])
        #expect(target.custom?["patch"]?.intValue == 1)
        #expect(target.custom?["rollout"]?.intValue == 100)
        #expect(target.custom?["plaintext"]?["sha256"]?.stringValue == patch.plaintext.sha256)
        #expect(target.custom?["encryption"] == nil)
        #expect(try await t.verify(app).ok)
    }

    @Test("an encrypted app serves nonce||ciphertext||tag bound to app, version and patch")
    func encrypted() async throws {
        let t = try TempRegistry()
        let app = try t.app("secret", encrypted: true)
        let patch = try t.publish(app, "1.0", "console.log(1)")
        #expect(patch.served.length == patch.plaintext.length + AESGCM.overhead)
        let key = try t.registry.keys.contentKey(app: app)
        let served = try t.registry.servedBytes(sha256: patch.served.sha256)
        #expect(try BundleCipher.open(served, key: key, app: "secret", appVersion: "1.0", patch: 1) == Array("console.log(1)".utf8))
        #expect(throws: CryptoError.authenticationFailed) {
            try BundleCipher.open(served, key: key, app: "secret", appVersion: "1.1", patch: 1)
        }
        let target = try #require(try t.targets(app).targets["1.0/1/main.js"])
        #expect(target.custom?["encryption"]?["alg"]?.stringValue == "A256GCM")
        #expect(target.custom?["encryption"]?["keyid"]?.stringValue == BundleCipher.keyID(key))
        let report = try await t.verify(app, contentKey: key)
        #expect(report.ok && report.targets.allSatisfy(\.plaintextChecked))
    }

    @Test("empty and oversized bundles are refused and change nothing", arguments: [(0, "empty"), (Registry.maxBundleSize + 1, "limit")])
    func refusedBundles(size: Int, expected: String) throws {
        let bundle = String(repeating: "x", count: size)
        let t = try TempRegistry()
        let app = try t.app("demo")
        try t.publish(app, "2.3", "ok()")
        let before = try t.snapshot()
        #expect { try t.publish(app, "2.3", bundle) } throws: { "\($0)".contains(expected) }
        #expect(try t.snapshot() == before)
    }

    @Test("non-UTF-8 bundles, bad rollouts and unknown apps are refused and change nothing")
    func refusedOther() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        let before = try t.snapshot()
        #expect(throws: RegistryError.self) {
            try t.registry.publish(app: app, appVersion: try AppVersion("2.3"), bundle: [0xFF, 0xFE, 0x00], actor: t.actor)
        }
        #expect(throws: RegistryError.self) { try t.publish(app, "2.3", "x", rollout: 101) }
        #expect(throws: RegistryError.self) { try t.publish(try AppName("ghost"), "2.3", "x") }
        #expect(throws: RegistryError.self) { try t.registry.createApp(app, encrypted: false, actor: t.actor) }
        #expect(try t.snapshot() == before)
    }

    @Test("a missing targets key leaves the publish pending: nothing served changes until the key's holder signs it")
    func missingKey() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        let keyDir = t.root.appendingPathComponent("keys/demo")
        var targetsKey: SigningKey?
        for file in try FileManager.default.contentsOfDirectory(atPath: keyDir.path) where file.hasPrefix("targets.") {
            let url = keyDir.appendingPathComponent(file)
            targetsKey = try SigningKey(pem: Array(try Data(contentsOf: url)))
            try FileManager.default.removeItem(at: url)
        }
        let before = try t.snapshot()
        var waiting: PendingChange?
        #expect { try t.publish(app, "2.3", "x()") } throws: { error in
            guard case RegistryError.pending(let change) = error else { return false }
            waiting = change
            return "\(error)".contains("targets keys") && "\(error)".contains("patchctl approve")
        }
        // Only the proposal's audit event is new: no patch, no metadata.
        #expect(try t.snapshot().count == before.count + 1)
        #expect(try t.registry.patches(app: app, appVersion: nil, activeOnly: false).isEmpty)
        let change = try #require(waiting)
        try t.registry.approve(app: app, id: change.id, keys: [try #require(targetsKey)], actor: t.actor)
        #expect(try t.registry.patches(app: app, appVersion: nil, activeOnly: false).map(\.number) == [1])
    }

    @Test("key files readable by group or others are refused")
    func keyPermissions() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        let keyDir = t.root.appendingPathComponent("keys/demo")
        let file = try #require(try FileManager.default.contentsOfDirectory(atPath: keyDir.path).first { $0.hasPrefix("targets.") })
        #expect(chmod(keyDir.appendingPathComponent(file).path, 0o644) == 0)
        #expect { try t.publish(app, "2.3", "x()") } throws: { "\($0)".contains("chmod 600") }
    }
}
