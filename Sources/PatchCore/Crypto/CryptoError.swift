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
}
