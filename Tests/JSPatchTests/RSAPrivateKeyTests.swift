import Foundation
import Testing
import PatchCore
import PatchSigning

/// The RSA operation JSPatch Loader packages rely on, checked against the openssl CLI.
@Suite("RSA private-key encryption (PKCS#1 v1.5 type 1)")
struct RSAPrivateKeyTests {
    @Test("a generated key has the size asked for and a SubjectPublicKeyInfo PEM")
    func generate() throws {
        let key = try RSAPrivateKey.generate(bits: 2048)
        #expect(key.bitCount == 2048)
        #expect(key.byteCount == 256)
        let pem = try key.publicKeyPEM()
        #expect(pem.hasPrefix("-----BEGIN PUBLIC KEY-----\n"))
        #expect(pem.hasSuffix("-----END PUBLIC KEY-----\n"))
        // The PKCS#8 form reads back as the same key.
        let again = try RSAPrivateKey(pem: try key.pemRepresentation())
        #expect(try again.publicKeyDER() == key.publicKeyDER())
    }

    @Test("the output is byte for byte what openssl pkeyutl -sign with pkcs1 padding gives, and verifyrecover gets the data back")
    func matchesOpenSSL() throws {
        let dir = try TempDirectory()
        let key = try RSAPrivateKey.generate(bits: 1024)
        let keyPath = try dir.write("key.pem", try key.pemRepresentation())
        let pubPath = try dir.write("pub.pem", Array(try key.publicKeyPEM().utf8))
        let data = Array(Digest.md5Hex(Array("console.log(1)".utf8)).utf8)
        let ours = try key.privateEncryptPKCS1(data)
        let theirs = try Tool.check(["openssl", "pkeyutl", "-sign", "-inkey", keyPath, "-pkeyopt", "rsa_padding_mode:pkcs1"], input: data)
        #expect(ours == theirs)
        #expect(ours.count == 128)
        #expect(try key.privateEncryptPKCS1(data) == ours, "type-1 padding is deterministic")
        let recovered = try Tool.check(["openssl", "pkeyutl", "-verifyrecover", "-pubin", "-inkey", pubPath, "-pkeyopt", "rsa_padding_mode:pkcs1"], input: ours)
        #expect(recovered == data)
        // The raw public operation shows the layout the loader parses: 00 01 FF…FF 00 ‖ data.
        let raw = try Tool.check(["openssl", "pkeyutl", "-verifyrecover", "-pubin", "-inkey", pubPath, "-pkeyopt", "rsa_padding_mode:none"], input: ours)
        #expect(raw.count == 128)
        #expect(Array(raw.prefix(2)) == [0x00, 0x01])
        #expect(raw[2..<(128 - data.count - 1)].allSatisfy { $0 == 0xFF })
        #expect(raw[128 - data.count - 1] == 0x00)
        #expect(Array(raw.suffix(data.count)) == data)
    }

    @Test("PKCS#1 and PKCS#8 PEM keys from openssl import with the public key openssl derives")
    func importsBothForms() throws {
        let dir = try TempDirectory()
        try Tool.check(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024", "-out", dir.path("pkcs8.pem")])
        try Tool.check(["openssl", "pkey", "-in", dir.path("pkcs8.pem"), "-traditional", "-out", dir.path("pkcs1.pem")])
        let expected = String(decoding: try Tool.check(["openssl", "pkey", "-in", dir.path("pkcs8.pem"), "-pubout"]), as: UTF8.self)
        #expect(String(decoding: try dir.read("pkcs1.pem"), as: UTF8.self).hasPrefix("-----BEGIN RSA PRIVATE KEY-----"))
        #expect(String(decoding: try dir.read("pkcs8.pem"), as: UTF8.self).hasPrefix("-----BEGIN PRIVATE KEY-----"))
        for file in ["pkcs1.pem", "pkcs8.pem"] {
            let key = try RSAPrivateKey(pem: try dir.read(file))
            #expect(key.bitCount == 1024, "\(file)")
            #expect(try key.publicKeyPEM() == expected, "\(file)")
        }
    }

    @Test("garbage, public keys, encrypted keys and non-RSA keys are refused", arguments: ["garbage", "public", "encrypted", "ed25519"])
    func refusesOtherInput(_ kind: String) throws {
        let dir = try TempDirectory()
        let pem: [UInt8]
        switch kind {
        case "garbage":
            pem = Array("-----BEGIN RSA PRIVATE KEY-----\nnot base64 at all\n-----END RSA PRIVATE KEY-----\n".utf8)
        case "public":
            pem = Array(try RSAPrivateKey.generate(bits: 1024).publicKeyPEM().utf8)
        case "encrypted":
            try dir.write("plain.pem", try RSAPrivateKey.generate(bits: 1024).pemRepresentation())
            pem = try Tool.check(["openssl", "pkey", "-in", dir.path("plain.pem"), "-aes256", "-passout", "pass:secret"])
        default:
            pem = try Ed25519PrivateKey.generate().pemRepresentation()
        }
        #expect(throws: CryptoError.self) { try RSAPrivateKey(pem: pem) }
    }

    @Test("data longer than the key size minus 11 bytes is refused")
    func refusesLongData() throws {
        let key = try RSAPrivateKey.generate(bits: 1024)
        #expect(try key.privateEncryptPKCS1([UInt8](repeating: 0x61, count: 117)).count == 128)
        #expect(throws: CryptoError.self) { try key.privateEncryptPKCS1([UInt8](repeating: 0x61, count: 118)) }
        #expect(throws: CryptoError.self) { try key.privateEncryptPKCS1([]) }
    }
}
