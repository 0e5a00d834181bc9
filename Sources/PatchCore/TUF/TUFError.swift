/// Why metadata or a target was refused. Each case names one threat from the TUF threat
/// model so callers (and tests) can tell a forged signature from a replay or a freeze.
public enum TUFError: Error, Equatable, CustomStringConvertible {
    case malformed(role: String, reason: String)
    case wrongType(expected: String, got: String)
    case unsignedThreshold(role: String, valid: Int, threshold: Int)
    case expired(role: String, expires: String)
    case rollback(role: String, trusted: Int64, offered: Int64)
    case versionMismatch(role: String, expected: Int64, got: Int64)
    case lengthMismatch(what: String, expected: Int, got: Int)
    case hashMismatch(what: String, algorithm: String)
    /// The hashes listed for a file name an algorithm hotpatch does not compute, or no
    /// collision-resistant one: the file cannot be checked, so it is refused.
    case uncheckableHashes(what: String, reason: String)
    case missingRole(String)
    case unknownTarget(String)

    public var description: String {
        switch self {
        case .malformed(let role, let reason): return "malformed \(role) metadata: \(reason)"
        case .wrongType(let expected, let got): return "expected \(expected) metadata, got \"\(got.debugSanitized)\""
        case .unsignedThreshold(let role, let valid, let threshold):
            return "\(role) metadata has \(valid) valid signature(s), needs \(threshold)"
        case .expired(let role, let expires): return "\(role) metadata expired at \(expires)"
        case .rollback(let role, let trusted, let offered):
            return "\(role) metadata version \(offered) is older than the trusted version \(trusted) (rollback)"
        case .versionMismatch(let role, let expected, let got):
            return "\(role) metadata is version \(got), expected \(expected)"
        case .lengthMismatch(let what, let expected, let got): return "\(what) is \(got) bytes, expected \(expected)"
        case .hashMismatch(let what, let algorithm): return "\(what) does not match its \(algorithm) hash"
        case .uncheckableHashes(let what, let reason): return "\(what) cannot be checked: \(reason)"
        case .missingRole(let role): return "\(role) metadata has not been loaded"
        case .unknownTarget(let path): return "no target \"\(path.debugSanitized)\" in targets metadata"
        }
    }
}
