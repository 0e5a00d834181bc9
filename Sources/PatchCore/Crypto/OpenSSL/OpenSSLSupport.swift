#if canImport(CCrypto)
// What every OpenSSL wrapper shares — here and in PatchSigning — written once.
internal import CCrypto

extension DigestAlgorithm {
    /// Fetched once: OpenSSL 3 otherwise performs an implicit provider fetch on every init,
    /// which dominates the cost of hashing small metadata files (and of sealing small bundles).
    package var md: OpaquePointer {
        switch self {
        case .md5: return FetchedDigests.shared.md5
        case .sha256: return FetchedDigests.shared.sha256
        case .sha384: return FetchedDigests.shared.sha384
        case .sha512: return FetchedDigests.shared.sha512
        }
    }
}

/// Owns the fetched `EVP_MD` / `EVP_CIPHER` objects for the life of the process.
package final class FetchedDigests: @unchecked Sendable {
    package static let shared = FetchedDigests()
    let md5: OpaquePointer
    let sha256: OpaquePointer
    let sha384: OpaquePointer
    let sha512: OpaquePointer
    package let aes256gcm: OpaquePointer

    private init() {
        // All are in OpenSSL 3's default provider; failing to fetch them means a broken
        // installation, not bad input.
        guard let md5 = EVP_MD_fetch(nil, "MD5", nil), let sha256 = EVP_MD_fetch(nil, "SHA256", nil),
            let sha384 = EVP_MD_fetch(nil, "SHA384", nil), let sha512 = EVP_MD_fetch(nil, "SHA512", nil),
            let gcm = EVP_CIPHER_fetch(nil, "AES-256-GCM", nil) else {
            fatalError("OpenSSL default provider lacks MD5/SHA-2/AES-256-GCM: \(CryptoError.fromOpenSSL("fetch"))")
        }
        self.md5 = md5
        self.sha256 = sha256
        self.sha384 = sha384
        self.sha512 = sha512
        self.aes256gcm = gcm
    }

    deinit {
        EVP_MD_free(md5)
        EVP_MD_free(sha256)
        EVP_MD_free(sha384)
        EVP_MD_free(sha512)
        EVP_CIPHER_free(aes256gcm)
    }
}

extension CryptoError {
    /// Drains OpenSSL's thread-local error queue into one error so a later call does not
    /// report a stale reason.
    package static func fromOpenSSL(_ operation: String) -> CryptoError {
        var reasons: [String] = []
        while case let code = ERR_get_error(), code != 0 {
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            reasons.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return .openssl(operation: operation, reason: reasons.isEmpty ? "unknown error" : reasons.joined(separator: "; "))
    }
}
#endif
