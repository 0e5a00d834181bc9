import Foundation
internal import CCrypto
import PatchCore

/// An Ed25519 private key. Stored on disk as PKCS#8 PEM, the form `openssl genpkey
/// -algorithm ed25519` writes and python's `cryptography` loads.
public struct Ed25519PrivateKey: Sendable {
    private let box: PKeyBox
    public let publicKey: Ed25519PublicKey

    public static func generate() throws(CryptoError) -> Ed25519PrivateKey {
        guard let ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, nil) else { throw CryptoError.fromOpenSSL("EVP_PKEY_CTX_new_id") }
        defer { EVP_PKEY_CTX_free(ctx) }
        var pkey: OpaquePointer?
        guard EVP_PKEY_keygen_init(ctx) == 1, EVP_PKEY_keygen(ctx, &pkey) == 1, let pkey else {
            throw CryptoError.fromOpenSSL("Ed25519 keygen")
        }
        return try Ed25519PrivateKey(PKeyBox(pkey))
    }

    /// The 32-byte seed, as CryptoKit's `Curve25519.Signing.PrivateKey(rawRepresentation:)` takes it.
    public init(rawRepresentation seed: [UInt8]) throws(CryptoError) {
        guard seed.count == 32 else { throw .invalidKey("an Ed25519 private key is 32 bytes, got \(seed.count)") }
        guard let pkey = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nil, seed, seed.count) else {
            throw CryptoError.fromOpenSSL("EVP_PKEY_new_raw_private_key")
        }
        try self.init(PKeyBox(pkey))
    }

    public init(pem: [UInt8]) throws(CryptoError) {
        try self.init(PKeyBox(privatePEM: pem))
    }

    /// Takes ownership of a key already read; checks that it is of this type.
    init(_ box: PKeyBox) throws(CryptoError) {
        guard box.baseID == EVP_PKEY_ED25519 else { throw .invalidKey("not an Ed25519 key") }
        var raw = [UInt8](repeating: 0, count: 32)
        var length = raw.count
        guard EVP_PKEY_get_raw_public_key(box.pointer, &raw, &length) == 1, length == 32 else {
            throw CryptoError.fromOpenSSL("EVP_PKEY_get_raw_public_key")
        }
        self.box = box
        self.publicKey = try Ed25519PublicKey(rawRepresentation: raw)
    }

    public var rawRepresentation: [UInt8] {
        var raw = [UInt8](repeating: 0, count: 32)
        var length = raw.count
        _ = EVP_PKEY_get_raw_private_key(box.pointer, &raw, &length)
        return raw
    }

    /// PKCS#8 PEM, unencrypted: the file is protected by its mode (0600), like ssh keys.
    public func pemRepresentation() throws(CryptoError) -> [UInt8] { try box.privateKeyPEM() }

    public func signature(for message: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard let ctx = EVP_MD_CTX_new() else { throw CryptoError.fromOpenSSL("EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(ctx) }
        guard EVP_DigestSignInit(ctx, nil, nil, nil, box.pointer) == 1 else { throw CryptoError.fromOpenSSL("sign init") }
        var signature = [UInt8](repeating: 0, count: 64)
        var length = signature.count
        guard EVP_DigestSign(ctx, &signature, &length, message, message.count) == 1, length == 64 else {
            throw CryptoError.fromOpenSSL("EVP_DigestSign")
        }
        return signature
    }
}
