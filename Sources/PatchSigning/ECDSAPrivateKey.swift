import Foundation
internal import CCrypto
import PatchCore

/// An ECDSA P-256 private key: what hardware tokens (YubiKey PIV, smart cards) and cloud
/// KMS hold, imported as a TUF root key (`patchctl apps create --root-key`). Signatures are
/// DER `SEQUENCE { r, s }` over SHA-256, scheme `ecdsa-sha2-nistp256` as securesystemslib
/// names it.
public struct ECDSAPrivateKey: Sendable {
    private let box: PKeyBox
    public let publicKey: PublicKey
    /// PEM SubjectPublicKeyInfo: the `keyval.public` of the TUF key object.
    public let publicKeyPEM: String

    /// OpenSSL's name for P-256.
    static let curve = "prime256v1"

    public static func generate() throws(CryptoError) -> ECDSAPrivateKey {
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { throw CryptoError.fromOpenSSL("EVP_PKEY_CTX_new_from_name") }
        defer { EVP_PKEY_CTX_free(ctx) }
        var pkey: OpaquePointer?
        guard EVP_PKEY_keygen_init(ctx) == 1, EVP_PKEY_CTX_set_group_name(ctx, "P-256") == 1,
            EVP_PKEY_keygen(ctx, &pkey) == 1, let pkey else {
            throw CryptoError.fromOpenSSL("P-256 keygen")
        }
        return try ECDSAPrivateKey(PKeyBox(pkey))
    }

    /// An unencrypted PEM private key: PKCS#8 (`BEGIN PRIVATE KEY`, what `cryptography` and
    /// `openssl genpkey` write) or SEC1 (`BEGIN EC PRIVATE KEY`, what `openssl ecparam -genkey`
    /// and most token tools export).
    public init(pem: [UInt8]) throws(CryptoError) {
        try self.init(PKeyBox(privatePEM: pem))
    }

    /// Takes ownership of a key already read; checks that it is of this type.
    init(_ box: PKeyBox) throws(CryptoError) {
        guard box.baseID == EVP_PKEY_EC else { throw .invalidKey("not an EC key") }
        guard box.groupName == ECDSAPrivateKey.curve else {
            throw .invalidKey("an ECDSA key must be on P-256 (prime256v1), this one is on \(box.groupName ?? "an unnamed curve")")
        }
        self.box = box
        let pem = try box.publicKeyPEM()
        self.publicKeyPEM = pem
        self.publicKey = try PublicKey(pem: Array(pem.utf8))
    }

    /// PKCS#8 PEM, unencrypted: the file is protected by its mode (0600), like ssh keys.
    public func pemRepresentation() throws(CryptoError) -> [UInt8] { try box.privateKeyPEM() }

    /// A DER-encoded ECDSA signature of SHA-256(message). Randomised (a fresh nonce each
    /// time), so two signatures of the same message differ; check them by verifying.
    public func signature(for message: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard let ctx = EVP_MD_CTX_new() else { throw CryptoError.fromOpenSSL("EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(ctx) }
        guard EVP_DigestSignInit(ctx, nil, DigestAlgorithm.sha256.md, nil, box.pointer) == 1 else {
            throw CryptoError.fromOpenSSL("sign init")
        }
        var length = 0
        guard EVP_DigestSign(ctx, nil, &length, message, message.count) == 1, length > 0 else {
            throw CryptoError.fromOpenSSL("EVP_DigestSign")
        }
        var signature = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(ctx, &signature, &length, message, message.count) == 1 else {
            throw CryptoError.fromOpenSSL("EVP_DigestSign")
        }
        return Array(signature.prefix(length))
    }
}

extension ECDSAPrivateKey {
    /// The signature as JOSE writes ES256 (RFC 7518 section 3.4): r and s as 32 big-endian
    /// bytes each, not DER. What a JWT for APNs carries.
    public func joseSignature(for message: [UInt8]) throws(CryptoError) -> [UInt8] {
        let der = try signature(for: message)
        guard let raw = ECDSAPrivateKey.rawSignature(der: der) else { throw .invalidKey("OpenSSL returned a malformed ECDSA signature") }
        return raw
    }

    /// DER `SEQUENCE { INTEGER r, INTEGER s }` (short lengths: a P-256 signature is at most
    /// 72 bytes) to r ‖ s, each left-padded to 32 bytes; nil when it is not that.
    public static func rawSignature(der: [UInt8]) -> [UInt8]? {
        guard der.count >= 8, der[0] == 0x30, Int(der[1]) == der.count - 2 else { return nil }
        var at = 2
        var out: [UInt8] = []
        for _ in 0..<2 {
            guard at + 2 <= der.count, der[at] == 0x02 else { return nil }
            let length = Int(der[at + 1])
            guard length >= 1, at + 2 + length <= der.count else { return nil }
            var integer = Array(der[(at + 2)..<(at + 2 + length)])
            while integer.count > 32, integer.first == 0 { integer.removeFirst() }
            guard integer.count <= 32 else { return nil }
            out += [UInt8](repeating: 0, count: 32 - integer.count) + integer
            at += 2 + length
        }
        return at == der.count ? out : nil
    }
}
