import Foundation
import Testing
import PatchCore
import PatchSigning
@testable import PatchRegistry

/// The package format, read back by independent tools: Info-ZIP's unzip and the openssl CLI.
@Suite("JSPatch Loader package format")
struct JSPatchPackageTests {
    static let script = "defineClass('ViewController', { viewDidLoad: function() { console.log('patched') } })\n"

    @Test("vN.zip holds script.zip then key; script.zip holds main.js; key recovers to the hex MD5 of script.zip")
    func layout() throws {
        let dir = try TempDirectory()
        let key = try RSAPrivateKey.generate(bits: 2048)
        let package = try JSPatchPackage.build(script: Array(Self.script.utf8), appVersion: try AppVersion("2.3"), number: 4, rollout: 100, key: key)
        #expect(package.fileName == "v4.zip")
        let unpacked = try UnpackedPackage(package.bytes, publicKeyPEM: try key.publicKeyPEM(), in: dir)
        #expect(unpacked.entries == ["script.zip", "key"])
        #expect(unpacked.scriptEntries == ["main.js"])
        #expect(unpacked.mainJS == Array(Self.script.utf8))
        #expect(unpacked.key.count == 256, "the raw RSA output, not base64")
        #expect(unpacked.recovered == Digest.md5Hex(unpacked.scriptZip))
        #expect(package.scriptMD5 == Digest.md5Hex(unpacked.scriptZip))
        #expect(Hex.isLowercase(unpacked.recovered, byteCount: 16))
    }

    @Test("the same script and key give the same bytes; another script gives other bytes")
    func reproducible() throws {
        let key = try RSAPrivateKey.generate(bits: 1024)
        let version = try AppVersion("2.3")
        let a = try JSPatchPackage.build(script: Array(Self.script.utf8), appVersion: version, number: 1, rollout: 100, key: key)
        let b = try JSPatchPackage.build(script: Array(Self.script.utf8), appVersion: version, number: 1, rollout: 100, key: key)
        let c = try JSPatchPackage.build(script: Array((Self.script + "//").utf8), appVersion: version, number: 1, rollout: 100, key: key)
        #expect(a.bytes == b.bytes)
        #expect(a.bytes != c.bytes)
        #expect(a.scriptMD5 != c.scriptMD5)
    }

    @Test("every entry is dated 1980-01-01 00:00 with mode 0644 and no extra fields")
    func fixedAttributes() throws {
        let dir = try TempDirectory()
        let package = try JSPatchPackage.build(script: Array(Self.script.utf8), appVersion: try AppVersion("1.0"), number: 1, rollout: 100,
                                               key: try RSAPrivateKey.generate(bits: 1024))
        let path = try dir.write("v1.zip", package.bytes)
        let listing = String(decoding: try Tool.check(["zipinfo", "-v", path]), as: UTF8.self)
        #expect(listing.components(separatedBy: "file last modified on (DOS date/time):          1980 Jan 1 00:00:00").count == 3)
        #expect(listing.components(separatedBy: "Unix file attributes (100644 octal):").count == 3)
        #expect(listing.components(separatedBy: "length of extra field:                          0 bytes").count == 3)
    }

    @Test("a package built the way packer.php does (zip CLI + openssl CLI) agrees in entries, MD5 and key")
    func matchesPackerPHP() throws {
        let dir = try TempDirectory()
        let key = try RSAPrivateKey.generate(bits: 1024)
        let keyPath = try dir.write("priv.pem", try key.pemRepresentation())
        // packer.php: zip the .js files into script.zip, md5_file it, openssl_private_encrypt
        // the hex string into `key`, zip both into vN.zip.
        try FileManager.default.createDirectory(atPath: dir.path("js"), withIntermediateDirectories: true)
        try dir.write("js/main.js", Array(Self.script.utf8))
        try Tool.check(["sh", "-c", "cd '\(dir.path("js"))' && zip -q -X ../script.zip main.js"])
        let handScript = try dir.read("script.zip")
        let handMD5 = Digest.md5Hex(handScript)
        try dir.write("key", try Tool.check(["openssl", "pkeyutl", "-sign", "-inkey", keyPath, "-pkeyopt", "rsa_padding_mode:pkcs1"],
                                            input: Array(handMD5.utf8)))
        try Tool.check(["sh", "-c", "cd '\(dir.url.path)' && zip -q -X hand.zip script.zip key"])
        let hand = try UnpackedPackage(try dir.read("hand.zip"), publicKeyPEM: try key.publicKeyPEM(), in: dir)

        let ours = try UnpackedPackage(JSPatchPackage.build(script: Array(Self.script.utf8), appVersion: try AppVersion("2.3"), number: 1,
                                                            rollout: 100, key: key).bytes,
                                       publicKeyPEM: try key.publicKeyPEM(), in: dir)
        #expect(ours.entries == hand.entries)
        #expect(ours.scriptEntries == hand.scriptEntries)
        #expect(ours.mainJS == hand.mainJS)
        // Each key verifies to the MD5 of its own script.zip (the zips differ in timestamps and
        // compression, so the MD5s differ; what the loader checks holds for both).
        #expect(hand.recovered == handMD5)
        #expect(ours.recovered == Digest.md5Hex(ours.scriptZip))
        // And the key is exactly what the CLI signs over our script.zip's MD5.
        let cliKey = try Tool.check(["openssl", "pkeyutl", "-sign", "-inkey", keyPath, "-pkeyopt", "rsa_padding_mode:pkcs1"],
                                    input: Array(Digest.md5Hex(ours.scriptZip).utf8))
        #expect(ours.key == cliKey)
    }
}
