import Foundation
internal import CCrypto

/// Owns one `EVP_PKEY*` and frees it when the last key value referring to it goes away.
final class PKeyBox: @unchecked Sendable {
    // Immutable after init; OpenSSL allows concurrent use of a const EVP_PKEY for
    // signing/verifying with separate contexts.
    let pointer: OpaquePointer

    init(_ pointer: OpaquePointer) { self.pointer = pointer }
    deinit { EVP_PKEY_free(pointer) }
}

/// An Ed25519 public key: what TUF lists in root metadata and CryptoKit's
/// `Curve25519.Signing.PublicKey(rawRepresentation:)` accepts.
public struct Ed25519PublicKey: Sendable, Equatable {
    public let rawRepresentation: [UInt8]
    private let box: PKeyBox

    public init(rawRepresentation raw: [UInt8]) throws(CryptoError) {
        guard raw.count == 32 else { throw .invalidKey("an Ed25519 public key is 32 bytes, got \(raw.count)") }
        guard let pkey = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nil, raw, raw.count) else {
            throw CryptoError.fromOpenSSL("EVP_PKEY_new_raw_public_key")
        }
        self.rawRepresentation = raw
        self.box = PKeyBox(pkey)
    }

    public var hex: String { Hex.encode(rawRepresentation) }

    public func isValidSignature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
        guard signature.count == 64, let ctx = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(ctx) }
        guard EVP_DigestVerifyInit(ctx, nil, nil, nil, box.pointer) == 1 else {
            _ = CryptoError.fromOpenSSL("verify init")
            return false
        }
        let ok = EVP_DigestVerify(ctx, signature, signature.count, message, message.count) == 1
        if !ok { ERR_clear_error() }
        return ok
    }

    public static func == (lhs: Ed25519PublicKey, rhs: Ed25519PublicKey) -> Bool {
        lhs.rawRepresentation == rhs.rawRepresentation
    }
}

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
        return try Ed25519PrivateKey(owning: pkey)
    }

    /// The 32-byte seed, as CryptoKit's `Curve25519.Signing.PrivateKey(rawRepresentation:)` takes it.
    public init(rawRepresentation seed: [UInt8]) throws(CryptoError) {
        guard seed.count == 32 else { throw .invalidKey("an Ed25519 private key is 32 bytes, got \(seed.count)") }
        guard let pkey = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nil, seed, seed.count) else {
            throw CryptoError.fromOpenSSL("EVP_PKEY_new_raw_private_key")
        }
        try self.init(owning: pkey)
    }

    public init(pem: [UInt8]) throws(CryptoError) {
        let bio = try MemoryBIO(reading: pem)
        guard let pkey = PEM_read_bio_PrivateKey(bio.pointer, nil, nil, nil) else {
            ERR_clear_error()
            throw .invalidKey("not a PEM private key")
        }
        guard EVP_PKEY_get_base_id(pkey) == EVP_PKEY_ED25519 else {
            EVP_PKEY_free(pkey)
            throw .invalidKey("not an Ed25519 key")
        }
        try self.init(owning: pkey)
    }

    private init(owning pkey: OpaquePointer) throws(CryptoError) {
        let box = PKeyBox(pkey)
        var raw = [UInt8](repeating: 0, count: 32)
        var length = raw.count
        guard EVP_PKEY_get_raw_public_key(pkey, &raw, &length) == 1, length == 32 else {
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
    public func pemRepresentation() throws(CryptoError) -> [UInt8] {
        let bio = try MemoryBIO()
        guard PEM_write_bio_PKCS8PrivateKey(bio.pointer, box.pointer, nil, nil, 0, nil, nil) == 1 else {
            throw CryptoError.fromOpenSSL("PEM_write_bio_PKCS8PrivateKey")
        }
        return try bio.bytes()
    }

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
