import Foundation

/// Every crypto operation a device's path uses, and nothing else: digests of what it
/// downloads and of canonical JSON, signature checks of metadata under any key type root
/// lists, AES-256-GCM open of encrypted bundles. One seam with two backends —
/// OpenSSL (`Crypto/OpenSSL/`, Linux) and CryptoKit plus Security.framework on Apple
/// platforms (`Crypto/Apple/`, not compiled on the Linux machines this is built on) — written
/// against the same vectors (Tests/PatchCoreTests/Fixtures/seam.json, CryptoSeamTests).
/// Signing, key generation and key import live in PatchSigning, on OpenSSL alone.
public protocol VerificationCrypto: Sendable {
    /// sha256, sha384, sha512 or md5 of `data`.
    func digest(_ algorithm: DigestAlgorithm, _ data: UnsafeRawBufferPointer) -> [UInt8]
    /// The backend's own form of `key`, made once: a sync checks several signatures per key.
    /// Refuses a key the backend cannot use (an EC point not on its curve).
    func verifier(for key: SubjectPublicKeyInfo) throws(CryptoError) -> any SignatureVerifier
    /// AES-256-GCM open with a 12-byte nonce and 16-byte tag; `.authenticationFailed` when
    /// anything does not match (no plaintext is returned then).
    func openAESGCM(key: [UInt8], nonce: [UInt8], ciphertext: [UInt8], tag: [UInt8], aad: [UInt8]) throws(CryptoError) -> [UInt8]
}

/// One public key, parsed by a backend.
public protocol SignatureVerifier: Sendable {
    /// True only when `signature` is a valid signature of `message` under `algorithm`; any
    /// failure (wrong key type for the algorithm, malformed signature) is false.
    func isValidSignature(_ signature: [UInt8], for message: [UInt8], algorithm: SignatureAlgorithm) -> Bool
}

extension VerificationCrypto {
    public func digest(_ algorithm: DigestAlgorithm, _ data: [UInt8]) -> [UInt8] {
        data.withUnsafeBytes { digest(algorithm, $0) }
    }

    public func sha256Hex(_ data: [UInt8]) -> String { Hex.encode(digest(.sha256, data)) }

    /// RFC 8032 Ed25519 with the 32 raw bytes of the public key.
    public func isValidEd25519(signature: [UInt8], for message: [UInt8], publicKey: [UInt8]) -> Bool {
        guard let key = try? SubjectPublicKeyInfo(ed25519: publicKey), let verifier = try? verifier(for: key) else { return false }
        return verifier.isValidSignature(signature, for: message, algorithm: .ed25519)
    }

    /// ECDSA P-256 over SHA-256, the signature DER `SEQUENCE { r, s }`, the key a DER SubjectPublicKeyInfo.
    public func isValidP256(signature: [UInt8], for message: [UInt8], publicKeyDER: [UInt8]) -> Bool {
        guard let key = try? SubjectPublicKeyInfo(der: publicKeyDER), key.algorithm == .ec(.p256),
            let verifier = try? verifier(for: key) else { return false }
        return verifier.isValidSignature(signature, for: message, algorithm: .ecdsa(.sha256))
    }
}

public enum Verification {
    /// CryptoKit where it exists (Apple platforms), OpenSSL on Linux.
    public static let crypto: any VerificationCrypto = {
        #if canImport(CryptoKit)
        return CryptoKitVerification()
        #else
        return OpenSSLVerification()
        #endif
    }()
}
