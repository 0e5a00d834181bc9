import PatchCore

/// One operation of patchd's HTTP API, as every side of the project but the device knows it:
/// patchd's router is built from these (`Router.add`), patchctl's remote commands build their
/// URLs from them, the console's `operations.js` is rendered from them, and tests hold
/// `docs/openapi.yaml` and README's CLI reference to them. A route's path is spelt here only,
/// or, for the few a device calls, in PatchCore's `DeviceRoutes`, which the table names.
/// Not part of the client library: the command names, scopes and console routes are the
/// server's and the CLI's business, not an app's.
public struct APIOperation: Sendable, Hashable, CustomStringConvertible {
    /// Who may call it; patchd checks this from the request head, before any body byte.
    public enum Scope: String, Sendable, Hashable {
        /// No token (devices, the console's files, health).
        case anyone
        /// Any known token; what it sees is filtered to what the token may read.
        case token
        /// A token that may read the app named in the path (auditor or publisher).
        case auditor
        /// A token that may change the app named in the path; on a path with no app
        /// (`createToken`), any publisher token, and the handler holds the app it acts on to
        /// the token's scope.
        case publisher
    }

    public typealias Segment = RoutePath.Segment

    /// `operationId` in docs/openapi.yaml.
    public let id: String
    public let method: String
    public let route: RoutePath
    public let scope: Scope
    /// The patchctl commands whose remote form (`--server`) calls it (`"rollback"`, `"apps guard"`).
    public let commands: [String]

    init(_ id: String, _ method: String, _ route: RoutePath, scope: Scope = .anyone, commands: [String] = []) {
        self.id = id
        self.method = method
        self.route = route
        self.scope = scope
        self.commands = commands
    }

    init(_ id: String, _ method: String, _ path: String, scope: Scope = .anyone, commands: [String] = []) {
        self.init(id, method, RoutePath(path), scope: scope, commands: commands)
    }

    public var description: String { "\(method) \(path)" }

    /// The path as docs/openapi.yaml writes it.
    public var path: String { route.template }
    public var segments: [Segment] { route.segments }
    public var parameters: [String] { route.parameters }

    /// The path with every parameter filled in (`RoutePath.path`).
    public func path(_ values: [String: String]) -> String { route.path(values) }

    /// The path and a query (`RoutePath.target`).
    public func target(_ values: [String: String], query: [String: String] = [:]) -> String { route.target(values, query: query) }
}
