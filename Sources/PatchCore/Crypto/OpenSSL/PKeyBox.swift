#if canImport(CCrypto)
internal import CCrypto

/// Owns one `EVP_PKEY*` and frees it when the last key value referring to it goes away.
/// Every key type (Ed25519, ECDSA, RSA; public or private) is one of these, and what
/// OpenSSL does the same way for all of them — the DER SubjectPublicKeyInfo, the type and
/// curve — lives here once; PEM (the registry's side) is PatchSigning's `PKeyBox+PEM.swift`.
package final class PKeyBox: @unchecked Sendable {
    // Immutable after init; OpenSSL allows concurrent use of a const EVP_PKEY for
    // signing/verifying with separate contexts.
    package let pointer: OpaquePointer

    package init(_ pointer: OpaquePointer) { self.pointer = pointer }
    deinit { EVP_PKEY_free(pointer) }

    /// A DER SubjectPublicKeyInfo (SubjectPublicKeyInfo has read it strictly already).
    package convenience init(spki der: [UInt8]) throws(CryptoError) {
        let pkey = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_PUBKEY(nil, &cursor, buffer.count)
        }
        guard let pkey else {
            ERR_clear_error()
            throw .invalidKey("OpenSSL refuses the public key (a point not on its curve?)")
        }
        self.init(pkey)
    }

    /// An Ed25519 public key from its 32 bytes. The same key `init(spki:)` reads from the
    /// SubjectPublicKeyInfo around them, without OpenSSL 3's decoder framework: `d2i_PUBKEY`
    /// builds a decoder context over every provider's decoders each call, 53 µs against
    /// 2 µs here (measured in a loop of 1,000 on this machine), and a root lists 4 or more keys.
    package convenience init(ed25519 raw: [UInt8]) throws(CryptoError) {
        guard raw.count == 32, let pkey = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nil, raw, raw.count) else {
            ERR_clear_error()
            throw .invalidKey("OpenSSL refuses the Ed25519 public key")
        }
        self.init(pkey)
    }

    /// `EVP_PKEY_ED25519`, `EVP_PKEY_EC`, `EVP_PKEY_RSA`…
    package var baseID: Int32 { EVP_PKEY_get_base_id(pointer) }

    package var bits: Int { Int(EVP_PKEY_get_bits(pointer)) }

    /// The curve of an EC key as OpenSSL names it (`prime256v1`, `secp384r1`, `secp521r1`); nil for other keys.
    package var groupName: String? {
        var name = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_group_name(pointer, &name, name.count, &length) == 1 else {
            ERR_clear_error()
            return nil
        }
        return String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The public key as DER SubjectPublicKeyInfo: one encoding per key, whatever text it came from.
    package func publicKeyDER() throws(CryptoError) -> [UInt8] {
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
}
#endif
