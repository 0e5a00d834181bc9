import PatchCheck
import PatchCore
import PatchRegistry

/// Every error the API answers with: a status and `{"error":{"code":…,"message":…}}`.
/// Anything thrown that is not an HTTPError becomes a 500 whose body says nothing more.
public struct HTTPError: Error, Equatable {
    public let status: Int
    public let code: String
    public let message: String
    public var headers: [(String, String)] = []
    /// The whole body instead of the error object: a change stored as pending is answered
    /// 202 with it (`{"pending": …}`), through the same path as a refusal, since nothing changed.
    public var body: JSON?

    public init(_ status: Int, _ code: String, _ message: String, headers: [(String, String)] = []) {
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
    }

    public static func == (lhs: HTTPError, rhs: HTTPError) -> Bool {
        lhs.status == rhs.status && lhs.code == rhs.code && lhs.message == rhs.message
    }

    /// Errors are never cached: a CDN holding a 404 for `N+1.root.json` would hide a key rotation.
    public var response: HTTPResponse {
        .json(body ?? ["error": ["code": .string(code), "message": .string(message)]], status: status,
              headers: [("Cache-Control", "no-store")] + headers)
    }

    public static func badRequest(_ message: String) -> HTTPError { HTTPError(400, "bad_request", message) }
    public static func notFound(_ message: String = "no such resource") -> HTTPError { HTTPError(404, "not_found", message) }
    public static let unauthorized = HTTPError(401, "unauthorized", "a bearer token is required", headers: [("WWW-Authenticate", "Bearer")])
    /// 403 naming what the token is and what the request needs (`TokenRecord.refusal`).
    public static func forbidden(_ token: TokenRecord, needs role: TokenRole, app: AppName?, for action: String) -> HTTPError {
        HTTPError(403, "forbidden", token.refusal(needs: role, app: app, for: action))
    }
    /// 403 for a route whose path names no app: the token lacks the role on any app.
    public static func forbidden(_ token: TokenRecord, needs role: TokenRole, for action: String, scope: String = "") -> HTTPError {
        HTTPError(403, "forbidden", token.refusal(needs: role, for: action, scope: scope))
    }
    public static func methodNotAllowed(_ allowed: String) -> HTTPError {
        HTTPError(405, "method_not_allowed", "use \(allowed)", headers: [("Allow", allowed)])
    }
    public static func tooLarge(_ limit: Int) -> HTTPError { HTTPError(413, "too_large", "the request body exceeds \(limit) bytes") }
    /// 503 for a connection over a connection limit, refused before a byte of it is read.
    static func tooManyConnections(_ message: String) -> HTTPError {
        HTTPError(503, "too_many_connections", message, headers: [("Retry-After", "1")])
    }
    public static func throttled(retryAfter: Int, _ message: String) -> HTTPError {
        HTTPError(429, "throttled", message, headers: [("Retry-After", String(max(1, retryAfter)))])
    }
    public static let internalError = HTTPError(500, "internal", "internal server error")
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
