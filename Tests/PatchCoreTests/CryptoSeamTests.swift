import Foundation
import Testing
@testable import PatchCore
import PatchSigning

/// The verification seam (Sources/PatchCore/Crypto/VerificationCrypto.swift) against fixed
/// vectors computed with python `cryptography`/`hashlib` (Ed25519: RFC 8032 section 7.1,
/// test 2). `Verification.crypto` is the OpenSSL twin on Linux and the CryptoKit twin on Apple
/// platforms, so the same vectors check whichever one a platform builds.
@Suite("Verification crypto seam")
struct CryptoSeamTests {
    static let message = Array("hotpatch verification seam".utf8)
    static var twins: [any VerificationCrypto] {
        var all: [any VerificationCrypto] = [Verification.crypto]
        #if canImport(CCrypto)
        all.append(OpenSSLVerification())
        #endif
        return all
    }

    static func hex(_ text: String) -> [UInt8] { Hex.decode(text)! }

    @Test("sha256, sha384, sha512 and md5 of the same message")
    func digests() {
        let expected: [DigestAlgorithm: String] = [
            .md5: "0bff0fb86801d93f9e62f35fe443b68d",
            .sha256: "59f86cb13e31aaa1fa42bb459a95b22fbab9c9590d6583ad11afa66f7d799224",
            .sha384: "47a77ab948e624479336d4ca4e3a50d8ec69251ce591acbe40fb847fd1ee66d1d796d5fe1174460b3816a73d3d5c0d98",
            .sha512: "1376d49be57531e2debdca41c77fb0e1303c6b4cf44b2b60a6a2e9c6744535ba684a226f1aef6f8dd09ba800e8c79a051b844a8e9f2afd849b248dd1b8d76258",
        ]
        for crypto in Self.twins {
            for (algorithm, digest) in expected { #expect(Hex.encode(crypto.digest(algorithm, Self.message)) == digest, "\(algorithm)") }
        }
    }

    @Test("Ed25519: RFC 8032 test 2 verifies; a flipped bit in the signature, message or key does not")
    func ed25519() {
        let key = Self.hex("3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c")
        let signature = Self.hex("92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00")
        for crypto in Self.twins {
            #expect(crypto.isValidEd25519(signature: signature, for: [0x72], publicKey: key))
            var bad = signature
            bad[10] ^= 1
            #expect(!crypto.isValidEd25519(signature: bad, for: [0x72], publicKey: key))
            #expect(!crypto.isValidEd25519(signature: signature, for: [0x73], publicKey: key))
            var otherKey = key
            otherKey[0] ^= 1
            #expect(!crypto.isValidEd25519(signature: signature, for: [0x72], publicKey: otherKey))
            #expect(!crypto.isValidEd25519(signature: signature, for: [0x72], publicKey: Array(key.prefix(31))))
        }
    }

    @Test("ECDSA P-256 / SHA-256 with a DER key and DER signature; tampering is refused")
    func p256() {
        let key = Self.hex("3059301306072a8648ce3d020106082a8648ce3d03010703420004471c3e758c4904285bba7e53118ed0f524adeb0757d25bd2f8e7b0d76dfa714cdd520f7aca8a8b917acc37f51de8f0c9bbe3ad858382e702dc25a12d09f7a858")
        let signature = Self.hex("3045022068b50a1eb7ed652de338792ab3858f61b3e2648f62791c1d878cfc76f930270902210096947350467cb45922adbcf07dc5bf79de61e95005b1d14e7f6497e93f98dda2")
        for crypto in Self.twins {
            #expect(crypto.isValidP256(signature: signature, for: Self.message, publicKeyDER: key))
            var bad = signature
            bad[12] ^= 1
            #expect(!crypto.isValidP256(signature: bad, for: Self.message, publicKeyDER: key))
            #expect(!crypto.isValidP256(signature: signature, for: Self.message + [0], publicKeyDER: key))
            #expect(!crypto.isValidP256(signature: Array(signature.prefix(20)), for: Self.message, publicKeyDER: key))
        }
    }

    @Test("AES-256-GCM open: the vector decrypts; a changed tag, ciphertext, AAD or key is .authenticationFailed")
    func aesGCM() throws {
        let key = Array(UInt8(0)..<32), nonce = Array(UInt8(100)..<112)
        let aad = Array("hotpatch-bundle-v1".utf8) + [0] + Array("demo".utf8)
        let ciphertext = Self.hex("2074aa16189d35f61e143a9ab303039e23b66f65e54c8017c6bc")
        let tag = Self.hex("a68b7a5d15734acb1230c272dab30ddf")
        for crypto in Self.twins {
            #expect(try crypto.openAESGCM(key: key, nonce: nonce, ciphertext: ciphertext, tag: tag, aad: aad) == Self.message)
            var badTag = tag
            badTag[0] ^= 1
            #expect(throws: CryptoError.authenticationFailed) { try crypto.openAESGCM(key: key, nonce: nonce, ciphertext: ciphertext, tag: badTag, aad: aad) }
            var badText = ciphertext
            badText[3] ^= 1
            #expect(throws: CryptoError.authenticationFailed) { try crypto.openAESGCM(key: key, nonce: nonce, ciphertext: badText, tag: tag, aad: aad) }
            #expect(throws: CryptoError.authenticationFailed) { try crypto.openAESGCM(key: key, nonce: nonce, ciphertext: ciphertext, tag: tag, aad: aad + [0]) }
            var otherKey = key
            otherKey[31] ^= 1
            #expect(throws: CryptoError.authenticationFailed) { try crypto.openAESGCM(key: otherKey, nonce: nonce, ciphertext: ciphertext, tag: tag, aad: aad) }
        }
    }

    @Test("BundleCipher.open goes through the seam: what AESGCM.seal made opens, in the combined layout")
    func bundleCipherRoundTrip() throws {
        let key = Array(UInt8(0)..<32)
        let sealed = try BundleCipher.seal(Self.message, key: key, app: "demo", appVersion: "2.3", patch: 4)
        #expect(try BundleCipher.open(sealed, key: key, app: "demo", appVersion: "2.3", patch: 4) == Self.message)
        #expect(throws: CryptoError.authenticationFailed) { try BundleCipher.open(sealed, key: key, app: "demo", appVersion: "2.3", patch: 5) }
        #expect(throws: CryptoError.self) { try BundleCipher.open(Array(sealed.prefix(27)), key: key, app: "demo", appVersion: "2.3", patch: 4) }
    }
}
