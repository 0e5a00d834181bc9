#if canImport(CryptoKit)
// NOT COMPILED on the Linux machines hotpatch is built and tested on: written against Apple's
// documented CryptoKit API, kept this small so it can be read against it line by line. It is
// written against the vectors in Tests/PatchCoreTests/Fixtures/seam.json, which its Linux twin
// (Crypto/OpenSSL/OpenSSLVerification.swift) passes; on a Mac the same tests run through it.
import CryptoKit
import Foundation

public struct CryptoKitVerification: VerificationCrypto {
    public init() {}

    public func digest(_ algorithm: DigestAlgorithm, _ data: UnsafeRawBufferPointer) -> [UInt8] {
        switch algorithm {
        case .md5: return Self.hash(Insecure.MD5(), data)
        case .sha256: return Self.hash(SHA256(), data)
        case .sha384: return Self.hash(SHA384(), data)
        case .sha512: return Self.hash(SHA512(), data)
        }
    }

    private static func hash<H: HashFunction>(_ hasher: H, _ data: UnsafeRawBufferPointer) -> [UInt8] {
        var hasher = hasher
        hasher.update(bufferPointer: data)
        return Array(hasher.finalize())
    }

    public func verifier(for key: SubjectPublicKeyInfo) throws(CryptoError) -> any SignatureVerifier {
        do {
            switch key.algorithm {
            case .ed25519: return CryptoKitVerifier.ed25519(try Curve25519.Signing.PublicKey(rawRepresentation: key.publicKeyBytes))
            case .ec(.p256): return CryptoKitVerifier.p256(try P256.Signing.PublicKey(derRepresentation: key.der))
            case .ec(.p384): return CryptoKitVerifier.p384(try P384.Signing.PublicKey(derRepresentation: key.der))
            case .ec(.p521): return CryptoKitVerifier.p521(try P521.Signing.PublicKey(derRepresentation: key.der))
            case .rsa: return try SecKeyVerifier(pkcs1: key.publicKeyBytes)
            }
        } catch let error as CryptoError {
            throw error
        } catch {
            throw .invalidKey("CryptoKit refuses the public key: \(error)")
        }
    }

    public func openAESGCM(key: [UInt8], nonce: [UInt8], ciphertext: [UInt8], tag: [UInt8], aad: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard key.count == AESGCM.keyByteCount else { throw .invalidKey("an AES-256 key is 32 bytes, got \(key.count)") }
        do {
            let box = try AES.GCM.SealedBox(nonce: try AES.GCM.Nonce(data: nonce), ciphertext: ciphertext, tag: tag)
            return Array(try AES.GCM.open(box, using: SymmetricKey(data: key), authenticating: aad))
        } catch {
            throw .authenticationFailed
        }
    }
}

/// CryptoKit hashes the message itself with the digest its curve pairs with (SHA-256 for
/// P-256, SHA-384 for P-384, SHA-512 for P-521): the only pairs KeyScheme names. Any other
/// pairing is refused.
enum CryptoKitVerifier: SignatureVerifier {
    case ed25519(Curve25519.Signing.PublicKey)
    case p256(P256.Signing.PublicKey)
    case p384(P384.Signing.PublicKey)
    case p521(P521.Signing.PublicKey)

    func isValidSignature(_ signature: [UInt8], for message: [UInt8], algorithm: SignatureAlgorithm) -> Bool {
        switch (self, algorithm) {
        case (.ed25519(let key), .ed25519):
            return signature.count == 64 && key.isValidSignature(signature, for: message)
        case (.p256(let key), .ecdsa(.sha256)):
            guard let parsed = try? P256.Signing.ECDSASignature(derRepresentation: signature) else { return false }
            return key.isValidSignature(parsed, for: message)
        case (.p384(let key), .ecdsa(.sha384)):
            guard let parsed = try? P384.Signing.ECDSASignature(derRepresentation: signature) else { return false }
            return key.isValidSignature(parsed, for: message)
        case (.p521(let key), .ecdsa(.sha512)):
            guard let parsed = try? P521.Signing.ECDSASignature(derRepresentation: signature) else { return false }
            return key.isValidSignature(parsed, for: message)
        default:
            return false
        }
    }
}
#endif
