// A stand-in for Apple's CryptoKit, compiled only in the Linux "apple-shaped" test build
// (Package.swift, HOTPATCH_APPLE_SHAPED=1): it declares exactly the API that
// Sources/PatchCore/Crypto/Apple/CryptoKitVerification.swift uses, with the signatures Apple
// documents (cited next to each declaration), implemented over OpenSSL. It proves that file
// compiles and passes seam.json; it says nothing of what CryptoKit itself accepts (docs/IOS.md).
import Foundation
internal import CCrypto

/// Owns one `EVP_PKEY*` (a public key), freed in deinit; the key types of this stand-in hold
/// one each, and so does the `Security` stand-in's `SecKey` (hence `package`).
package final class EVPKey: @unchecked Sendable {
    // @unchecked: immutable after init; OpenSSL allows concurrent verifies with separate contexts.
    private let pointer: OpaquePointer

    private init(_ pointer: OpaquePointer) { self.pointer = pointer }
    deinit { EVP_PKEY_free(pointer) }

    /// A DER SubjectPublicKeyInfo of an EC key on `curve` (OpenSSL's name), every byte of it.
    package static func ec<Bytes: RandomAccessCollection>(spki: Bytes, curve: String) throws(CryptoKitError) -> EVPKey where Bytes.Element == UInt8 {
        let der = Array(spki)
        let parsed = der.withUnsafeBufferPointer { buffer -> (OpaquePointer?, Int) in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            let key = d2i_PUBKEY(nil, &cursor, buffer.count)
            return (key, cursor.map { $0 - buffer.baseAddress! } ?? 0)
        }
        guard let pointer = parsed.0 else { throw .failure() }
        let key = EVPKey(pointer)
        guard parsed.1 == der.count, EVP_PKEY_get_base_id(pointer) == EVP_PKEY_EC, key.groupName == curve else { throw .incorrectParameterSize }
        return key
    }

    /// A DER PKCS #1 `RSAPublicKey { n, e }`, every byte of it; nil when OpenSSL refuses it.
    package static func rsa(pkcs1 der: [UInt8]) -> EVPKey? {
        let parsed = der.withUnsafeBufferPointer { buffer -> (OpaquePointer?, Int) in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            let key = d2i_PublicKey(EVP_PKEY_RSA, nil, &cursor, buffer.count)
            return (key, cursor.map { $0 - buffer.baseAddress! } ?? 0)
        }
        ERR_clear_error()
        guard let pointer = parsed.0 else { return nil }
        let key = EVPKey(pointer)
        return parsed.1 == der.count ? key : nil
    }

    /// An Ed25519 public key from its 32 bytes.
    package static func ed25519(raw: [UInt8]) throws(CryptoKitError) -> EVPKey {
        guard raw.count == 32 else { throw .incorrectKeySize }
        guard let pointer = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nil, raw, raw.count) else { throw .failure() }
        return EVPKey(pointer)
    }

    private var groupName: String? {
        var name = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_group_name(pointer, &name, name.count, &length) == 1 else { return nil }
        return String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The RSA paddings `SecKeyAlgorithm` names.
    package enum RSAPadding {
        case pkcs1v15
        /// RSASSA-PSS with MGF1 over the same digest and a salt exactly as long as the digest.
        case pssSaltIsDigestLength
    }

    /// One-shot verify: `digest` nil for Ed25519 (it hashes inside), an OpenSSL digest name otherwise.
    package func isValid(_ signature: [UInt8], for message: [UInt8], digest: String?, rsa padding: RSAPadding? = nil) -> Bool {
        guard let context = EVP_MD_CTX_new() else { return false }
        defer {
            EVP_MD_CTX_free(context)
            ERR_clear_error()  // a refused signature leaves reasons nobody reads
        }
        var keyContext: OpaquePointer?  // owned by `context`
        guard EVP_DigestVerifyInit_ex(context, &keyContext, digest, nil, nil, pointer, nil) == 1 else { return false }
        switch padding {
        case nil: break
        case .pkcs1v15:
            guard EVP_PKEY_CTX_set_rsa_padding(keyContext, RSA_PKCS1_PADDING) == 1 else { return false }
        case .pssSaltIsDigestLength:
            guard EVP_PKEY_CTX_set_rsa_padding(keyContext, RSA_PKCS1_PSS_PADDING) == 1,
                  EVP_PKEY_CTX_set_rsa_pss_saltlen(keyContext, RSA_PSS_SALTLEN_DIGEST) == 1 else { return false }
        }
        return EVP_DigestVerify(context, signature, signature.count, message, message.count) == 1
    }
}

extension CryptoKitError {
    /// OpenSSL refused: its first reason code, as CryptoKit reports its own library's.
    static func failure() -> CryptoKitError {
        defer { ERR_clear_error() }
        return .underlyingCoreCryptoError(error: Int32(truncatingIfNeeded: ERR_peek_error()))
    }
}
