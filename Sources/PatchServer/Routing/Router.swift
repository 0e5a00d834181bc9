import PatchRegistry

/// What routing found for a request: the path parameters captured by the pattern
/// (`:app` → `params["app"]`) and, for routes that need one, the caller's token, checked
/// from the request head before any body was read.
public struct PathParameters: Sendable {
    var values: [String: String] = [:]
    public internal(set) var caller: TokenRecord?
    public subscript(name: String) -> String { values[name] ?? "" }
}

/// Who may use a route. Checked from the request head, before any body byte is read.
public enum RouteAccess: Sendable {
    case anyone
    /// Any known token; the handler decides what it may see.
    case token
    /// A token that may act as this role on the route's `:app`.
    case role(TokenRole)
}

/// Matches method and path segments to handlers. Knows nothing of sockets: it turns an
/// `HTTPRequest` into an `HTTPResponse`, so every route is testable in process.
public struct Router<Context>: Sendable {
    /// Handlers get the context (the service) per call, so the router holds no reference to it.
    public typealias Handler = @Sendable (Context, HTTPRequest, PathParameters) throws(HTTPError) -> HTTPResponse

    public struct Route: Sendable {
        let method: String
        let segments: [String]
        public let metric: Metrics.Route
        public let access: RouteAccess
        /// Request-body bytes the route takes: 0 for routes that take none.
        public let bodyLimit: Int
        public let handler: Handler
    }

    private(set) var routes: [Route] = []

    public init() {}

    /// Adds a route. `pattern` segments starting with `:` capture one segment; a last
    /// segment like `:hash.main.js` captures what precedes the literal suffix. A pattern
    /// ending in `/` (`/`, `/console/`, a directory's index) matches only with that slash.
    public mutating func add(_ method: String, _ pattern: String, metric: Metrics.Route, access: RouteAccess = .anyone, body bodyLimit: Int = 0,
                             _ handler: @escaping Handler) {
        var segments = pattern.split(separator: "/").map(String.init)
        if pattern.hasSuffix("/") { segments.append("") }
        routes.append(Route(method: method, segments: segments, metric: metric, access: access, bodyLimit: bodyLimit, handler: handler))
    }

    public struct Match {
        public let metric: Metrics.Route
        public let result: Result<(Route, PathParameters), HTTPError>
    }

    /// Finds the route for a request: 404 when no pattern matches the path, 405 when one does
    /// but not for this method. HEAD is served as GET (the transport drops the body).
    public func match(method: String, path: String) -> Match {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map(String.init)
        // An empty segment only last (a trailing slash, which only a pattern ending in one matches).
        guard path.hasPrefix("/"), !segments.dropLast().contains(where: \.isEmpty) else {
            return Match(metric: .unknown, result: .failure(.notFound()))
        }
        let effective = method == "HEAD" ? "GET" : method
        var allowed: [String] = []
        var metric = Metrics.Route.unknown
        for route in routes {
            guard let params = Router.capture(route.segments, segments) else { continue }
            if route.method == effective { return Match(metric: route.metric, result: .success((route, params))) }
            allowed.append(route.method)
            metric = route.metric
        }
        if allowed.isEmpty { return Match(metric: .unknown, result: .failure(.notFound())) }
        return Match(metric: metric, result: .failure(.methodNotAllowed(allowed.joined(separator: ", "))))
    }

    static func capture(_ pattern: [String], _ segments: [String]) -> PathParameters? {
        guard pattern.count == segments.count else { return nil }
        var params = PathParameters()
        for (p, s) in zip(pattern, segments) {
            if p.hasPrefix(":") {
                guard !s.isEmpty else { return nil }
                let name = p.dropFirst()
                if let dot = name.firstIndex(of: ".") {
                    let suffix = String(name[dot...])
                    guard s.hasSuffix(suffix), s.count > suffix.count else { return nil }
                    params.values[String(name[..<dot])] = String(s.dropLast(suffix.count))
                } else {
                    params.values[String(name)] = s
                }
            } else if p != s {
                return nil
            }
        }
        return params
    }
}
