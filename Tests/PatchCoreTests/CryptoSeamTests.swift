import Foundation
import Testing
@testable import PatchCore

/// seam.json (Tests/interop/seam_vectors.py): the vectors both backends of the verification
/// seam are written against — signatures securesystemslib made with every key type, RFC 8032,
/// AES-256-GCM and digests. Each backend this platform builds runs them: OpenSSL on Linux,
/// CryptoKit and Security.framework on Apple platforms (`Verification.crypto` there).
struct SeamVectors: Decodable {
    struct Signature: Decodable, Sendable, CustomTestStringConvertible {
        let name: String
        let algorithm: String
        let spki: String
        let message: String
        let signature: String
        var testDescription: String { name }

        var signatureAlgorithm: SignatureAlgorithm? {
            let digests: [String: DigestAlgorithm] = ["sha256": .sha256, "sha384": .sha384, "sha512": .sha512]
            if algorithm == "ed25519" { return .ed25519 }
            guard let dash = algorithm.lastIndex(of: "-"), let digest = digests[String(algorithm[algorithm.index(after: dash)...])] else { return nil }
            switch algorithm[..<dash] {
            case "ecdsa": return .ecdsa(digest)
            case "rsa-pss": return .rsaPSS(digest)
            case "rsa-pkcs1v15": return .rsaPKCS1v15(digest)
            default: return nil
            }
        }
    }

    struct AESGCMVector: Decodable, Sendable {
        let key, nonce, ciphertext, tag, aad, plaintext: String
    }

    struct DigestVector: Decodable, Sendable {
        let text: String
        let `repeat`: Int
        let md5, sha256, sha384, sha512: String
    }

    let signatures: [Signature]
    let aesgcm: [AESGCMVector]
    let digests: [DigestVector]

    static func load() throws -> SeamVectors { try Fixture.load("seam") }
}

@Suite("Verification crypto seam: every backend this platform builds passes seam.json")
struct CryptoSeamTests {
    static var backends: [any VerificationCrypto] {
        var all: [any VerificationCrypto] = [Verification.crypto]
        #if canImport(CryptoKit)
        all.append(CryptoKitVerification())
        #endif
        #if canImport(CCrypto)
        all.append(OpenSSLVerification())
        #endif
        return all
    }

    @Test("the seam is CryptoKit wherever a CryptoKit is (Apple platforms; the apple-shaped Linux build's stand-in), OpenSSL otherwise")
    func backendChoice() {
        #if canImport(CryptoKit)
        #expect(Verification.crypto is CryptoKitVerification)
        #else
        #expect(Verification.crypto is OpenSSLVerification)
        #endif
    }

    @Test("md5, sha256, sha384 and sha512 of each vector")
    func digests() throws {
        for vector in try SeamVectors.load().digests {
            let data = Array(String(repeating: vector.text, count: vector.repeat).utf8)
            for crypto in Self.backends {
                #expect(Hex.encode(crypto.digest(.md5, data)) == vector.md5)
                #expect(Hex.encode(crypto.digest(.sha256, data)) == vector.sha256)
                #expect(Hex.encode(crypto.digest(.sha384, data)) == vector.sha384)
                #expect(Hex.encode(crypto.digest(.sha512, data)) == vector.sha512)
            }
        }
    }

    @Test("each signature verifies under its key and algorithm; a flipped bit, another algorithm or another key does not",
          arguments: try SeamVectors.load().signatures)
    func signature(_ vector: SeamVectors.Signature) throws {
        let algorithm = try #require(vector.signatureAlgorithm)
        let key = try SubjectPublicKeyInfo(der: bytes(hex: vector.spki))
        let message = try bytes(hex: vector.message), signature = try bytes(hex: vector.signature)
        let others = try SeamVectors.load().signatures.filter { $0.spki != vector.spki }
        for crypto in Self.backends {
            let verifier = try crypto.verifier(for: key)
            #expect(verifier.isValidSignature(signature, for: message, algorithm: algorithm))
            #expect(!verifier.isValidSignature(signature.flippingByte(at: signature.count / 2), for: message, algorithm: algorithm))
            #expect(!verifier.isValidSignature(signature, for: message + [0], algorithm: algorithm))
            #expect(!verifier.isValidSignature([], for: message, algorithm: algorithm))
            for wrong: SignatureAlgorithm in [.ed25519, .ecdsa(.sha256), .rsaPSS(.sha256), .rsaPKCS1v15(.sha512)] where wrong != algorithm {
                #expect(!verifier.isValidSignature(signature, for: message, algorithm: wrong), "\(wrong)")
            }
            for other in others {
                let otherVerifier = try crypto.verifier(for: SubjectPublicKeyInfo(der: bytes(hex: other.spki)))
                #expect(!otherVerifier.isValidSignature(signature, for: message, algorithm: algorithm), "\(other.name)'s key")
            }
        }
    }

    #if canImport(CCrypto)
    @Test("OpenSSL: an Ed25519 key imported from its 32 bytes (the verifier's path) answers as the same key read from its DER; a key of 31 or 33 bytes is refused")
    func ed25519RawImport() throws {
        let vectors = try SeamVectors.load().signatures.filter { $0.algorithm == "ed25519" }
        #expect(!vectors.isEmpty)
        for vector in vectors {
            let info = try SubjectPublicKeyInfo(der: bytes(hex: vector.spki))
            let message = try bytes(hex: vector.message), signature = try bytes(hex: vector.signature)
            let raw = OpenSSLVerifier(box: try PKeyBox(ed25519: info.publicKeyBytes)), der = OpenSSLVerifier(box: try PKeyBox(spki: info.der))
            for (sig, text) in [(signature, message), (signature.flippingByte(at: 10), message), (signature, message + [1])] {
                #expect(raw.isValidSignature(sig, for: text, algorithm: .ed25519) == der.isValidSignature(sig, for: text, algorithm: .ed25519))
            }
            #expect(raw.isValidSignature(signature, for: message, algorithm: .ed25519))
        }
        for count in [31, 33] {
            #expect(throws: CryptoError.self) { try PKeyBox(ed25519: [UInt8](repeating: 7, count: count)) }
        }
    }
    #endif

    @Test("AES-256-GCM open: each vector decrypts; a changed tag, ciphertext, AAD or key is .authenticationFailed")
    func aesGCM() throws {
        for vector in try SeamVectors.load().aesgcm {
            let key = try bytes(hex: vector.key), nonce = try bytes(hex: vector.nonce), aad = try bytes(hex: vector.aad)
            let ciphertext = try bytes(hex: vector.ciphertext), tag = try bytes(hex: vector.tag)
            for crypto in Self.backends {
                #expect(try crypto.openAESGCM(key: key, nonce: nonce, ciphertext: ciphertext, tag: tag, aad: aad) == bytes(hex: vector.plaintext))
                #expect(throws: CryptoError.authenticationFailed) {
                    try crypto.openAESGCM(key: key, nonce: nonce, ciphertext: ciphertext, tag: tag.flippingByte(at: 0), aad: aad)
                }
                // (The empty message has no ciphertext byte to change: its tag and AAD still bind it.)
                if !ciphertext.isEmpty {
                    #expect(throws: CryptoError.authenticationFailed) {
                        try crypto.openAESGCM(key: key, nonce: nonce, ciphertext: ciphertext.flippingByte(at: 0), tag: tag, aad: aad)
                    }
                }
                #expect(throws: CryptoError.authenticationFailed) { try crypto.openAESGCM(key: key, nonce: nonce, ciphertext: ciphertext, tag: tag, aad: aad + [0]) }
                #expect(throws: CryptoError.authenticationFailed) {
                    try crypto.openAESGCM(key: key.flippingByte(at: 31), nonce: nonce, ciphertext: ciphertext, tag: tag, aad: aad)
                }
                #expect(throws: CryptoError.authenticationFailed) {
                    try crypto.openAESGCM(key: key, nonce: Array(nonce.prefix(11)), ciphertext: ciphertext, tag: tag, aad: aad)
                }
            }
        }
    }

    @Test("BundleCipher.open goes through the seam: the layout a device receives opens, and only under its own patch")
    func bundleCipher() throws {
        let vector = try #require(try Fixture.load("aesgcm", as: AESGCMVectors.self).vectors.first)
        let combined = try bytes(hex: vector.combined), key = try bytes(hex: vector.key)
        #expect(try BundleCipher.open(combined, key: key, app: vector.app, appVersion: vector.appVersion, patch: vector.patch) == bytes(hex: vector.plaintext))
        #expect(throws: CryptoError.authenticationFailed) {
            try BundleCipher.open(combined, key: key, app: vector.app, appVersion: vector.appVersion, patch: vector.patch + 1)
        }
        #expect(throws: CryptoError.self) { try BundleCipher.open(Array(combined.prefix(27)), key: key, app: vector.app, appVersion: vector.appVersion, patch: vector.patch) }
    }
}
