import Foundation
import Testing
import PatchCore
import PatchSigning
@testable import PatchRegistry
import HotpatchTestSupport

/// The JSPatch key in the registry and the key store: creation, import, refusals, packages, export.
@Suite("JSPatch keys and packages in the registry")
struct JSPatchRegistryTests {
    /// The case name of a registry error, for comparing.
    static func kind(_ body: () throws -> Void) -> String? {
        do { try body() } catch let error as RegistryError {
            switch error {
            case .invalidInput: return "invalidInput"
            case .notFound: return "notFound"
            case .conflict: return "conflict"
            case .keys: return "keys"
            default: return "other: \(error)"
            }
        } catch { return "not a RegistryError: \(error)" }
        return nil
    }

    @Test("apps create with a JSPatch key: the key file is 0600 PKCS#8, recorded, and named in app.create")
    func createWithKey() throws {
        let f = try JSPatchRegistryFixture()
        let (app, key) = try f.jspatchApp("demo")
        let url = f.registry.keys.jspatchKeyURL(app: app)
        #expect(url.path == f.keysDirectory.appendingPathComponent("demo/jspatch-rsa.pem").path)
        let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        #expect(String(decoding: try Data(contentsOf: url), as: UTF8.self).hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let info = try #require(try f.registry.jspatchKey(app: app))
        #expect(info.bits == 1024)
        #expect(info.publicKeyPEM == (try key.publicKeyPEM()))
        #expect(info.publicKeySHA256 == Digest.sha256Hex(try key.publicKeyDER()))
        #expect(info.createdBy == f.actor.name)
        let created = try #require(try f.registry.auditEvents(app: app).first { $0.action == "app.create" })
        #expect(created.details["jspatchRSA"]?["bits"]?.intValue == 1024)
        #expect(created.details["jspatchRSA"]?["publicKeySha256"]?.stringValue == info.publicKeySHA256)
        // Apps without one have none, and their audit event does not mention it.
        let plain = try AppName("plain")
        try f.registry.createApp(plain, encrypted: false, actor: f.actor)
        #expect(try f.registry.jspatchKey(app: plain) == nil)
        #expect(try f.registry.auditEvents(app: plain).first?.details["jspatchRSA"] == nil)
        #expect(try f.registry.jspatchPackages(app: plain) == nil)
    }

    @Test("an existing app gets a key once, with an app.jspatch event; a second key is refused")
    func enableLater() throws {
        let f = try JSPatchRegistryFixture()
        let app = try AppName("later")
        try f.registry.createApp(app, encrypted: false, actor: f.actor)
        try f.publish(app, "2.3", "console.log(1)")
        let info = try f.registry.enableJSPatch(app: app, key: try RSAPrivateKey.generate(bits: 2048), actor: f.actor)
        #expect(info.bits == 2048)
        let event = try #require(try f.registry.auditEvents(app: app).last)
        #expect(event.action == "app.jspatch")
        #expect(event.details["publicKeySha256"]?.stringValue == info.publicKeySHA256)
        #expect(try f.registry.jspatchPackages(app: app)?.map(\.number) == [1])
        let before = try f.snapshot()
        #expect(Self.kind { try f.registry.enableJSPatch(app: app, key: try RSAPrivateKey.generate(bits: 1024), actor: f.actor) } == "conflict")
        #expect(try f.snapshot() == before)
        #expect(try f.registry.verifyAudit() == .intact(events: 3, head: try f.registry.auditEvents(app: nil).last!.hash))
    }

    @Test("refused: an encrypted app, a 512-bit key, an unknown app, a key file left from an earlier app — nothing changes")
    func refusals() throws {
        let f = try JSPatchRegistryFixture()
        let secret = try AppName("secret")
        try f.registry.createApp(secret, encrypted: true, actor: f.actor)
        let good = try RSAPrivateKey.generate(bits: 1024)
        let dir = try TempDirectory()
        try Tool.check(["openssl", "genrsa", "-out", dir.path("small.pem"), "512"])
        let small = try RSAPrivateKey(pem: try dir.read("small.pem"))
        #expect(small.bitCount == 512)
        let before = try f.snapshot()

        #expect(Self.kind { try f.registry.createApp(try AppName("both"), encrypted: true, jspatchKey: good, actor: f.actor) } == "invalidInput")
        #expect(Self.kind { try f.registry.enableJSPatch(app: secret, key: good, actor: f.actor) } == "invalidInput")
        #expect(Self.kind { try f.registry.createApp(try AppName("small"), encrypted: false, jspatchKey: small, actor: f.actor) } == "invalidInput")
        #expect(Self.kind { try f.registry.enableJSPatch(app: try AppName("nope"), key: good, actor: f.actor) } == "notFound")
        #expect(try f.snapshot() == before)

        // A key file from an earlier app of the same name is never overwritten, and the keys
        // written before it was found are removed again.
        let leftover = f.keysDirectory.appendingPathComponent("reused/jspatch-rsa.pem")
        try FileManager.default.createDirectory(at: leftover.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data("old key".utf8).write(to: leftover)
        let withLeftover = try f.snapshot()
        #expect(Self.kind { try f.registry.createApp(try AppName("reused"), encrypted: false, jspatchKey: good, actor: f.actor) } == "conflict")
        #expect(try f.snapshot() == withLeftover)
        #expect(String(decoding: try Data(contentsOf: leftover), as: UTF8.self) == "old key")
    }

    @Test("packages exist for the listed patches only (paused ones included, as targets lists them): not revoked or superseded ones")
    func listedPatchesOnly() throws {
        let f = try JSPatchRegistryFixture()
        let (app, key) = try f.jspatchApp("demo")
        try f.publish(app, "2.3", "console.log(1)")              // 1: superseded by 2
        try f.publish(app, "2.3", "console.log(2)")              // 2: 100 %
        try f.publish(app, "2.3", "console.log(3)", rollout: 10) // 3: 10 %
        try f.publish(app, "2.3", "console.log(4)", rollout: 0)  // 4: paused
        try f.publish(app, "2.4", "console.log(5)")
        try f.registry.revoke(app: app, appVersion: try AppVersion("2.4"), number: nil, actor: f.actor)
        let packages = try #require(try f.registry.jspatchPackages(app: app))
        #expect(packages.map { "\($0.appVersion)/\($0.number)@\($0.rollout)" } == ["2.3/2@100", "2.3/3@10", "2.3/4@0"])
        let dir = try TempDirectory()
        let unpacked = try UnpackedPackage(packages[1].bytes, publicKeyPEM: try key.publicKeyPEM(), in: dir)
        #expect(unpacked.mainJS == Array("console.log(3)".utf8))
        #expect(unpacked.recovered == packages[1].scriptMD5)
    }

    @Test("the JSPatch routes are production-only: a staging patch gets no package")
    func productionOnly() throws {
        let f = try JSPatchRegistryFixture()
        let (app, _) = try f.jspatchApp("demo")
        try f.publish(app, "2.3", "console.log(1)")
        _ = try f.registry.publish(app: app, appVersion: try AppVersion("2.3"), bundle: Array("console.log(2)".utf8),
                               channel: try ChannelName("staging"), newChannel: true, actor: f.actor)
        let packages = try #require(try f.registry.jspatchPackages(app: app))
        #expect(packages.map { "\($0.appVersion)/\($0.number)" } == ["2.3/1"])
    }

    @Test("packages need the key file, and the key the registry recorded")
    func keyFileChecked() throws {
        let f = try JSPatchRegistryFixture()
        let (app, _) = try f.jspatchApp("demo")
        try f.publish(app, "2.3", "console.log(1)")
        let url = f.registry.keys.jspatchKeyURL(app: app)
        let original = try Data(contentsOf: url)
        try FileManager.default.removeItem(at: url)
        #expect(Self.kind { _ = try f.registry.jspatchPackages(app: app) } == "keys")
        try Data(try RSAPrivateKey.generate(bits: 1024).pemRepresentation()).write(to: url)
        chmod(url.path, 0o600)
        #expect(Self.kind { _ = try f.registry.jspatchPackages(app: app) } == "keys", "another key")
        try original.write(to: url)
        chmod(url.path, 0o644)
        #expect(Self.kind { _ = try f.registry.jspatchPackages(app: app) } == "keys", "readable by others")
        chmod(url.path, 0o600)
        #expect(try f.registry.jspatchPackages(app: app)?.count == 1)
    }

    @Test("a registry written before JSPatch support opens, gains the table and keeps its apps")
    func olderRegistryOpens() throws {
        let f = try JSPatchRegistryFixture()
        let app = try AppName("old")
        try f.registry.createApp(app, encrypted: false, actor: f.actor)
        // What an older hotpatch left: the same schema without jspatch_keys.
        try f.registry.db.execute("DROP TABLE jspatch_keys")
        let reopened = try TestBackend.registry(dataDirectory: f.dataDirectory, keysDirectory: f.keysDirectory)
        #expect(try reopened.apps().map(\.name) == [app])
        #expect(try reopened.jspatchKey(app: app) == nil)
        try reopened.enableJSPatch(app: app, key: try RSAPrivateKey.generate(bits: 1024), actor: f.actor)
        #expect(try reopened.jspatchKey(app: app)?.bits == 1024)
    }

    @Test("export writes v{N}.zip and latest per version, and removes what a revocation withdrew")
    func export() throws {
        let f = try JSPatchRegistryFixture()
        let (app, key) = try f.jspatchApp("demo")
        try f.publish(app, "2.3", "console.log(1)")
        try f.publish(app, "2.3", "console.log(2)", rollout: 50)
        try f.publish(app, "3.0", "console.log(3)", rollout: 20)
        let out = f.directory.url.appendingPathComponent("site")
        let summary = try f.registry.exportJSPatch(app: app, to: out)
        #expect(summary.packages == 3)
        #expect(summary.latestFiles == 1)
        let served = try #require(try f.registry.jspatchPackages(app: app))
        #expect(Array(try Data(contentsOf: out.appendingPathComponent("2.3/v1.zip"))) == served[0].bytes)
        #expect(Array(try Data(contentsOf: out.appendingPathComponent("2.3/v2.zip"))) == served[1].bytes)
        // A static host cannot apply a partial rollout: latest names the full one.
        #expect(String(decoding: try Data(contentsOf: out.appendingPathComponent("2.3/latest")), as: UTF8.self) == "{\"patch\":1}\n")
        #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent("3.0/latest").path))
        let dir = try TempDirectory()
        let unpacked = try UnpackedPackage(Array(try Data(contentsOf: out.appendingPathComponent("3.0/v1.zip"))), publicKeyPEM: try key.publicKeyPEM(), in: dir)
        #expect(unpacked.mainJS == Array("console.log(3)".utf8))

        try f.registry.revoke(app: app, appVersion: try AppVersion("2.3"), number: 1, actor: f.actor)
        let again = try f.registry.exportJSPatch(app: app, to: out)
        #expect(again.removed == 2, "2.3/v1.zip and 2.3/latest")
        #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent("2.3/v1.zip").path))
        #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent("2.3/latest").path))
        #expect(FileManager.default.fileExists(atPath: out.appendingPathComponent("2.3/v2.zip").path))

        let plain = try AppName("plain")
        try f.registry.createApp(plain, encrypted: false, actor: f.actor)
        #expect(Self.kind { try f.registry.exportJSPatch(app: plain, to: out) } == "invalidInput")
    }
}
