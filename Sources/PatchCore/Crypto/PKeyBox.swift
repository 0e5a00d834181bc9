import Foundation
internal import CCrypto

/// Owns one `EVP_PKEY*` and frees it when the last key value referring to it goes away.
/// Every key type (Ed25519, ECDSA, RSA; public or private) is one of these, and what
/// OpenSSL does the same way for all of them — reading and writing PEM, the DER
/// SubjectPublicKeyInfo, the type and curve — lives here once.
final class PKeyBox: @unchecked Sendable {
    // Immutable after init; OpenSSL allows concurrent use of a const EVP_PKEY for
    // signing/verifying with separate contexts.
    let pointer: OpaquePointer

    init(_ pointer: OpaquePointer) { self.pointer = pointer }
    deinit { EVP_PKEY_free(pointer) }

    /// A PEM SubjectPublicKeyInfo (`BEGIN PUBLIC KEY`), as securesystemslib lists ECDSA and RSA keys.
    convenience init(publicPEM pem: [UInt8]) throws(CryptoError) {
        let bio = try MemoryBIO(reading: pem)
        guard let pkey = PEM_read_bio_PUBKEY(bio.pointer, nil, { _, _, _, _ in 0 }, nil) else {
            ERR_clear_error()
            throw .invalidKey("not a PEM public key (expected BEGIN PUBLIC KEY)")
        }
        self.init(pkey)
    }

    /// An unencrypted PEM private key: PKCS#8 (`BEGIN PRIVATE KEY`) or a traditional form
    /// (`BEGIN EC PRIVATE KEY`, `BEGIN RSA PRIVATE KEY`).
    convenience init(privatePEM pem: [UInt8]) throws(CryptoError) {
        let text = String(decoding: pem.prefix(64 << 10), as: UTF8.self)
        if text.contains("BEGIN ENCRYPTED PRIVATE KEY") || text.contains("Proc-Type: 4,ENCRYPTED") {
            throw .invalidKey("the PEM key is encrypted; decrypt it first (openssl pkey -in KEY -out PLAIN.pem) and keep PLAIN.pem private")
        }
        if text.contains("PUBLIC KEY"), !text.contains("PRIVATE KEY") {
            throw .invalidKey("this is a public key; import the private key that belongs to it")
        }
        let bio = try MemoryBIO(reading: pem)
        // A callback that supplies no passphrase: OpenSSL's default would prompt on the terminal.
        guard let pkey = PEM_read_bio_PrivateKey(bio.pointer, nil, { _, _, _, _ in 0 }, nil) else {
            ERR_clear_error()
            throw .invalidKey("not a PEM private key")
        }
        self.init(pkey)
    }

    /// `EVP_PKEY_ED25519`, `EVP_PKEY_EC`, `EVP_PKEY_RSA`…
    var baseID: Int32 { EVP_PKEY_get_base_id(pointer) }

    var bits: Int { Int(EVP_PKEY_get_bits(pointer)) }

    /// The curve of an EC key as OpenSSL names it (`prime256v1`, `secp384r1`, `secp521r1`); nil for other keys.
    var groupName: String? {
        var name = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_group_name(pointer, &name, name.count, &length) == 1 else {
            ERR_clear_error()
            return nil
        }
        return String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The public key as DER SubjectPublicKeyInfo: one encoding per key, whatever text it came from.
    func publicKeyDER() throws(CryptoError) -> [UInt8] {
        let length = i2d_PUBKEY(pointer, nil)
        guard length > 0 else { throw CryptoError.fromOpenSSL("i2d_PUBKEY") }
        var der = [UInt8](repeating: 0, count: Int(length))
        let written = der.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            return i2d_PUBKEY(pointer, &cursor)
        }
        guard written == length else { throw CryptoError.fromOpenSSL("i2d_PUBKEY") }
        return der
    }

    /// The public key as PEM SubjectPublicKeyInfo (`BEGIN PUBLIC KEY`, 64-column base64,
    /// a final newline): byte for byte what python's `cryptography` writes.
    func publicKeyPEM() throws(CryptoError) -> String {
        let bio = try MemoryBIO()
        guard PEM_write_bio_PUBKEY(bio.pointer, pointer) == 1 else { throw CryptoError.fromOpenSSL("PEM_write_bio_PUBKEY") }
        return String(decoding: try bio.bytes(), as: UTF8.self)
    }

    /// PKCS#8 PEM, unencrypted: key files are protected by their mode (0600), like ssh keys.
    func privateKeyPEM() throws(CryptoError) -> [UInt8] {
        let bio = try MemoryBIO()
        guard PEM_write_bio_PKCS8PrivateKey(bio.pointer, pointer, nil, nil, 0, nil, nil) == 1 else {
            throw CryptoError.fromOpenSSL("PEM_write_bio_PKCS8PrivateKey")
        }
        return try bio.bytes()
    }
}
