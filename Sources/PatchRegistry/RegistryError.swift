import PatchCore

/// Everything the registry can refuse or fail at. `invalidInput`, `notFound` and `conflict`
/// are the caller's mistakes and change nothing; the others are the machine's.
public enum RegistryError: Error, Sendable, CustomStringConvertible {
    case invalidInput(String)
    case notFound(String)
    case conflict(String)
    case keys(String)
    case storage(StorageError)
    case crypto(CryptoError)
    case io(String)
    case internalError(String)

    public var description: String {
        switch self {
        case .invalidInput(let m), .notFound(let m), .conflict(let m), .keys(let m), .io(let m): return m
        case .storage(let e):
            if e.isDiskFull { return "the registry's disk is full; nothing was changed (\(e.message))" }
            if e.isBusy { return "the registry is locked by another process; nothing was changed, try again" }
            if e.kind == .unavailable { return "the registry's database is unreachable; nothing was changed (\(e.message))" }
            if e.kind == .replaced {
                return "the registry file was deleted or replaced while open, so nothing more is written to it; nothing was changed (\(e.message)): put the registry back, then restart"
            }
            return "registry storage error: \(e)"
        case .crypto(let e): return e.description
        case .internalError(let m): return "internal error: \(m)"
        }
    }

    /// True when the request itself was wrong (a 4xx over HTTP, a usage-like exit in the CLI).
    public var isCallerError: Bool {
        switch self {
        case .invalidInput, .notFound, .conflict: return true
        default: return false
        }
    }
}

extension RegistryError {
    /// Any error from the layers below, as the registry reports it.
    static func wrapping(_ error: any Error) -> RegistryError {
        switch error {
        case let error as RegistryError: return error
        case let error as StorageError: return .storage(error)
        case let error as CryptoError: return .crypto(error)
        default: return .internalError(String(describing: error))
        }
    }
}

extension ValidationError {
    var registryError: RegistryError { .invalidInput(message) }
}
