import WireFormat

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
    public static func methodNotAllowed(_ allowed: String) -> HTTPError {
        HTTPError(405, "method_not_allowed", "use \(allowed)", headers: [("Allow", allowed)])
    }
    public static func tooLarge(_ limit: Int) -> HTTPError { HTTPError(413, "too_large", "the request body exceeds \(limit) bytes") }
    /// 503 for a connection over a connection limit, refused before a byte of it is read.
    package static func tooManyConnections(_ message: String) -> HTTPError {
        HTTPError(503, "too_many_connections", message, headers: [("Retry-After", "1")])
    }
    public static func throttled(retryAfter: Int, _ message: String) -> HTTPError {
        HTTPError(429, "throttled", message, headers: [("Retry-After", String(max(1, retryAfter)))])
    }
    public static let internalError = HTTPError(500, "internal", "internal server error")
}
