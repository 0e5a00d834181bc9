import HTTPTransport
import PatchAPI
import PatchCore
import PatchRegistry

/// What routing found for a request: the path parameters captured by the pattern
/// (`{app}` → `params["app"]`) and, for routes that need one, the caller's token, checked
/// from the request head before any body was read.
public struct PathParameters: Sendable {
    var values: [String: String] = [:]
    public internal(set) var caller: TokenRecord?
    /// The published file the path named, when the catalog's exact-path cache found it
    /// (`PatchService.route`): the route's handler answers it without parsing the path again.
    public internal(set) var file: PublishedFile?
    public subscript(name: String) -> String { values[name] ?? "" }
}

/// Who may use a route: its operation's scope (`APIOperation.Scope`) as patchd checks it.
/// Checked from the request head, before any body byte is read.
public enum RouteAccess: Sendable {
    case anyone
    /// Any known token; the handler decides what it may see.
    case token
    /// A token that may act as this role on the route's `{app}`.
    case role(TokenRole)

    init(_ scope: APIOperation.Scope) {
        switch scope {
        case .anyone: self = .anyone
        case .token: self = .token
        case .auditor: self = .role(.auditor)
        case .publisher: self = .role(.publisher)
        }
    }
}

/// Matches method and path segments to handlers. Knows nothing of sockets: it turns an
/// `HTTPRequest` into an `HTTPResponse`, so every route is testable in process.
public struct Router<Context>: Sendable {
    /// Handlers get the context (the service) per call, so the router holds no reference to it.
    public typealias Handler = @Sendable (Context, HTTPRequest, PathParameters) throws(HTTPError) -> HTTPResponse
    /// A handler that may promise its answer (`HTTPReply.later`): one whose work blocks.
    public typealias Replier = @Sendable (Context, HTTPRequest, PathParameters) throws(HTTPError) -> HTTPReply
    /// What a route refuses from the head alone, once access and the body limit passed, before
    /// a body byte is read (a queue with no room for what the body could hold).
    public typealias HeadCheck = @Sendable (Context, HTTPRequest) throws(HTTPError) -> Void

    /// A class: every request's match hands one on, and a struct of eight fields (strings,
    /// arrays, closures) would be retained field by field at each copy.
    public final class Route: Sendable {
        public let operation: APIOperation
        let segments: [APIOperation.Segment]
        public let metric: Metrics.Route
        public let access: RouteAccess
        /// Request-body bytes the route takes: 0 for routes that take none.
        public let bodyLimit: Int
        public let headCheck: HeadCheck?
        public let handler: Replier

        init(operation: APIOperation, segments: [APIOperation.Segment], metric: Metrics.Route, access: RouteAccess, bodyLimit: Int,
             headCheck: HeadCheck?, handler: @escaping Replier) {
            self.operation = operation
            self.segments = segments
            self.metric = metric
            self.access = access
            self.bodyLimit = bodyLimit
            self.headCheck = headCheck
            self.handler = handler
        }
    }

    private(set) var routes: [Route] = []

    /// The route of `operation`, as added.
    func route(_ operation: APIOperation) -> Route? { routes.first { $0.operation.id == operation.id } }

    public init() {}

    /// Adds the route of `operation`: its method, its path (`{name}` captures one segment,
    /// `{hash}.main.js` what precedes the literal suffix, a path ending in `/` matches only
    /// with that slash) and its scope all come from the operation table.
    public mutating func add(_ operation: APIOperation, metric: Metrics.Route, body bodyLimit: Int = 0, head: HeadCheck? = nil,
                             _ handler: @escaping Handler) {
        add(operation, metric: metric, body: bodyLimit, head: head, replying: { context, request, params throws(HTTPError) in .now(try handler(context, request, params)) })
    }

    /// Adds a route whose handler may answer later (`HTTPReply.later`).
    public mutating func add(_ operation: APIOperation, metric: Metrics.Route, body bodyLimit: Int = 0, head: HeadCheck? = nil,
                             replying handler: @escaping Replier) {
        precondition(!routes.contains { $0.operation.id == operation.id }, "\(operation.id) is routed twice")
        routes.append(Route(operation: operation, segments: operation.segments, metric: metric, access: RouteAccess(operation.scope),
                            bodyLimit: bodyLimit, headCheck: head, handler: handler))
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
            if route.operation.method == effective { return Match(metric: route.metric, result: .success((route, params))) }
            allowed.append(route.operation.method)
            metric = route.metric
        }
        if allowed.isEmpty { return Match(metric: .unknown, result: .failure(.notFound())) }
        return Match(metric: metric, result: .failure(.methodNotAllowed(allowed.joined(separator: ", "))))
    }

    static func capture(_ pattern: [APIOperation.Segment], _ segments: [String]) -> PathParameters? {
        guard pattern.count == segments.count else { return nil }
        var params = PathParameters()
        for (p, s) in zip(pattern, segments) {
            guard let value = p.capture(Substring(s)) else { return nil }
            if let name = p.parameter { params.values[name] = String(value) }
        }
        return params
    }
}
