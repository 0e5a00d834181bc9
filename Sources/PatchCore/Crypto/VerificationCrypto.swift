import Foundation

/// The crypto a device's verification path uses, and nothing else: digests of what it
/// downloads, Ed25519 and ECDSA P-256 signature checks of metadata, AES-256-GCM open of
/// encrypted bundles. One seam with two twins — OpenSSL (`VerificationCrypto+OpenSSL.swift`)
/// and CryptoKit on Apple platforms (`VerificationCrypto+CryptoKit.swift`, not compiled on
/// the Linux machines this is built on) — checked by the same vectors (CryptoSeamTests).
/// Signing, RSA and the server's crypto stay on OpenSSL alone.
public protocol VerificationCrypto: Sendable {
    /// sha256, sha384, sha512 or md5 of `data`.
    func digest(_ algorithm: DigestAlgorithm, _ data: [UInt8]) -> [UInt8]
    /// RFC 8032 Ed25519 with the 32 raw bytes of the public key.
    func isValidEd25519(signature: [UInt8], for message: [UInt8], publicKey: [UInt8]) -> Bool
    /// ECDSA P-256 over SHA-256, the signature DER `SEQUENCE { r, s }`, the key a DER SubjectPublicKeyInfo.
    func isValidP256(signature: [UInt8], for message: [UInt8], publicKeyDER: [UInt8]) -> Bool
    /// AES-256-GCM open with a 12-byte nonce and 16-byte tag; `.authenticationFailed` when
    /// anything does not match (no plaintext is returned then).
    func openAESGCM(key: [UInt8], nonce: [UInt8], ciphertext: [UInt8], tag: [UInt8], aad: [UInt8]) throws(CryptoError) -> [UInt8]
}

extension VerificationCrypto {
    public func sha256Hex(_ data: [UInt8]) -> String { Hex.encode(digest(.sha256, data)) }
}

public enum Verification {
    /// CryptoKit where it exists (Apple platforms), OpenSSL elsewhere.
    public static let crypto: any VerificationCrypto = {
        #if canImport(CryptoKit)
        return CryptoKitVerification()
        #else
        return OpenSSLVerification()
        #endif
    }()
}
