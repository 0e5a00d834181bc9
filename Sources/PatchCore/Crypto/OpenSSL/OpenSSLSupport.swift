#if canImport(CCrypto)
// What every OpenSSL wrapper shares — here and in PatchSigning — written once.
internal import CCrypto

extension DigestAlgorithm {
    /// Fetched once: OpenSSL 3 otherwise performs an implicit provider fetch on every init,
    /// which dominates the cost of hashing small metadata files (and of sealing small bundles).
    package var md: OpaquePointer {
        switch self {
        case .md5: return FetchedAlgorithm.md5.pointer
        case .sha256: return FetchedAlgorithm.sha256.pointer
        case .sha384: return FetchedAlgorithm.sha384.pointer
        case .sha512: return FetchedAlgorithm.sha512.pointer
        }
    }
}

/// One fetched `EVP_MD` or `EVP_CIPHER`, owned for the life of the process. Each is fetched
/// the first time it is used, on its own: fetching AES-256-GCM with the digests cost the
/// first sync of a process 3.2 M instructions (`EVP_CIPHER_fetch`) for a plain app that
/// never decrypts.
package final class FetchedAlgorithm: @unchecked Sendable {
    // @unchecked: set once in init; OpenSSL's fetched objects are immutable and shared.
    package let pointer: OpaquePointer
    private let free: (OpaquePointer) -> Void

    package static let md5 = FetchedAlgorithm(digest: "MD5")
    package static let sha256 = FetchedAlgorithm(digest: "SHA256")
    package static let sha384 = FetchedAlgorithm(digest: "SHA384")
    package static let sha512 = FetchedAlgorithm(digest: "SHA512")
    package static let aes256gcm = FetchedAlgorithm(cipher: "AES-256-GCM")

    // All are in OpenSSL 3's default provider; failing to fetch one means a broken
    // installation, not bad input.
    private init(digest name: String) {
        guard let md = EVP_MD_fetch(nil, name, nil) else { fatalError("OpenSSL's default provider lacks \(name): \(CryptoError.fromOpenSSL("fetch"))") }
        pointer = md
        free = { EVP_MD_free($0) }
    }

    private init(cipher name: String) {
        guard let cipher = EVP_CIPHER_fetch(nil, name, nil) else { fatalError("OpenSSL's default provider lacks \(name): \(CryptoError.fromOpenSSL("fetch"))") }
        pointer = cipher
        free = { EVP_CIPHER_free($0) }
    }

    deinit { free(pointer) }
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
