import PatchCheck
import PatchCore

/// Everything the registry can refuse or fail at. `invalidInput`, `notFound` and `conflict`
/// are the caller's mistakes and change nothing; the others are the machine's.
public enum RegistryError: Error, Sendable, CustomStringConvertible {
    case invalidInput(String)
    /// An operation's parameters do not make a call (one missing, two that exclude each
    /// other, a value out of range): 400 over HTTP, a usage error (exit 64) in patchctl.
    case invalidCall(String)
    /// The change would leave a version and channel serving no patch, or publishes to several
    /// versions, and was not confirmed (`confirm=true`, `--yes`): nothing was changed; the
    /// message says what devices would run, or which versions the publish names.
    case unconfirmed(String)
    /// The caller's token may not make this change (`TokenRecord.refusal`): 403 over HTTP.
    case forbidden(String)
    case notFound(String)
    case conflict(String)
    case keys(String)
    case storage(StorageError)
    case crypto(CryptoError)
    case io(String)
    case internalError(String)
    /// The change needs signatures of keys that are not here (raised inside its transaction,
    /// which rolls back; `Registry.proposing` stores it as a pending change).
    case signaturesNeeded(SignatureRequest)
    /// Nothing was changed yet: the change is stored as `PendingChange`, waiting for
    /// `patchctl approve` by holders of the keys it still needs. Not a failure of the request.
    case pending(PendingChange)
    /// The script check found errors in the script (issue 45): nothing was stored or signed.
    /// 422 over HTTP with the report; exit 2 in patchctl.
    case checkFailed(CheckReport, appVersion: AppVersion?)
    /// The script check could not run (its worker is missing or broke): nothing was stored.
    case checkUnavailable(String)

    public var description: String {
        switch self {
        case .invalidInput(let m), .invalidCall(let m), .unconfirmed(let m), .forbidden(let m), .notFound(let m), .conflict(let m), .keys(let m), .io(let m): return m
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
        case .signaturesNeeded(let request): return "\(request.description); nothing was changed"
        case .checkFailed(let report, let version):
            let errors = report.errors.count
            // One line (it travels in JSON error bodies and logs): the errors, then what to do.
            let found = report.errors.map(\.line).joined(separator: "; ")
            return "the script check\(version.map { " against app version \($0)" } ?? "") found \(errors) error\(errors == 1 ? "" : "s"): \(found); nothing was published (give --skip-check REASON to publish anyway; the reason and the findings are audited)"
        case .checkUnavailable(let why):
            return "\(why): nothing was published (give --skip-check REASON to publish unchecked)"
        case .pending(let change):
            return "pending: change \(change.id) of \(change.app) (\(change.change.summary)) needs \(change.missing) more signature\(change.missing == 1 ? "" : "s") of the \(change.request.role) keys; nothing is served until a holder of one runs `patchctl approve --app \(change.app) \(change.id) --key-file KEY.pem`"
        }
    }

    /// True when the request itself was wrong (a 4xx over HTTP, a usage-like exit in the CLI).
    public var isCallerError: Bool {
        switch self {
        case .invalidInput, .invalidCall, .unconfirmed, .forbidden, .notFound, .conflict, .pending, .signaturesNeeded, .checkFailed: return true
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
