import HTTPTransport
import PatchCheck
import PatchCore
import PatchRegistry

extension HTTPError {
    /// 403 naming what the token is and what the request needs (`TokenRecord.refusal`).
    public static func forbidden(_ token: TokenRecord, needs role: TokenRole, app: AppName?, for action: String) -> HTTPError {
        HTTPError(403, "forbidden", token.refusal(needs: role, app: app, for: action))
    }
    /// 403 for a route whose path names no app: the token lacks the role on any app.
    public static func forbidden(_ token: TokenRecord, needs role: TokenRole, for action: String, scope: String = "") -> HTTPError {
        HTTPError(403, "forbidden", token.refusal(needs: role, for: action, scope: scope))
    }
}

extension RegistryError {
    /// The caller's mistakes map to 4xx with the registry's message; anything else is a 500
    /// that reveals nothing (the detail goes to the server log).
    var httpError: HTTPError {
        switch self {
        case .invalidInput(let m), .invalidCall(let m): return .badRequest(m)
        case .unconfirmed(let m): return HTTPError(409, "confirmation_required", m)
        case .forbidden(let m): return HTTPError(403, "forbidden", m)
        case .notFound(let m): return .notFound(m)
        case .conflict(let m): return HTTPError(409, "conflict", m)
        case .pending(let change):
            var answer = HTTPError(202, "pending", description)
            answer.body = ["pending": change.json, "message": .string(description)]
            return answer
        case .signaturesNeeded: return HTTPError(409, "signatures_needed", description)
        case .checkFailed(let report, _):
            // The findings as data too, for the console and any client that shows them.
            var answer = HTTPError(422, "check_failed", description)
            answer.body = ["error": ["code": "check_failed", "message": .string(description)], "check": report.json]
            return answer
        case .checkUnavailable: return HTTPError(503, "check_unavailable", description, headers: [("Retry-After", "5")])
        case .storage(let e) where e.isBusy: return HTTPError(503, "busy", "the registry is busy; retry", headers: [("Retry-After", "1")])
        case .storage(let e) where e.kind == .unavailable:
            return HTTPError(503, "unavailable", "the registry's database is unreachable; nothing was changed, retry", headers: [("Retry-After", "1")])
        case .storage(let e) where e.kind == .replaced:
            return HTTPError(503, "unavailable", "the registry file was deleted or replaced under this server; nothing was changed", headers: [("Retry-After", "5")])
        case .storage(let e) where e.isDiskFull: return HTTPError(507, "insufficient_storage", "the registry's disk is full; nothing was changed")
        default: return .internalError
        }
    }
}

extension ValidationError {
    var httpError: HTTPError { .badRequest(message) }
}
