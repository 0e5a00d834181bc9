internal import CCrypto

/// Every failure of the crypto layer. OpenSSL failures carry the library's own reason,
/// read from its error queue right after the failing call.
public enum CryptoError: Error, Equatable, CustomStringConvertible {
    case openssl(operation: String, reason: String)
    case invalidKey(String)
    case authenticationFailed
    case invalidInput(String)

    public var description: String {
        switch self {
        case .openssl(let operation, let reason): return "OpenSSL \(operation) failed: \(reason)"
        case .invalidKey(let why): return "invalid key: \(why)"
        case .authenticationFailed: return "decryption failed: the ciphertext, nonce, key or associated data do not match"
        case .invalidInput(let why): return why
        }
    }

    /// Drains OpenSSL's thread-local error queue into one error so a later call does not
    /// report a stale reason.
    static func fromOpenSSL(_ operation: String) -> CryptoError {
        var reasons: [String] = []
        while case let code = ERR_get_error(), code != 0 {
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            reasons.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return .openssl(operation: operation, reason: reasons.isEmpty ? "unknown error" : reasons.joined(separator: "; "))
    }
}
