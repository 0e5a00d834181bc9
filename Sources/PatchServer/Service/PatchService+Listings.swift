import HTTPTransport
import PatchCore
import PatchRegistry

// Listings any token may ask for. Each answers only what the token could already read
// elsewhere: a token scoped to one app sees that app, and the tokens whose `token.create`
// event that app's audit log shows; a token for every app sees everything. Neither
// listing carries a token's secret or its hash, which the registry never returns.
extension PatchService {
    /// `GET /v1/apps`: the apps the token may read, sorted by name.
    func apps(_ request: HTTPRequest, _ p: PathParameters) throws(HTTPError) -> HTTPResponse {
        let token = try caller(p)
        let apps = try read { registry throws(RegistryError) in try registry.apps() }
        return .json(.array(apps.filter { token.app == nil || $0.name == token.app }.map(\.json)))
    }

    /// `GET /v1/apps/{app}/channels`: the app's declared channels, production first.
    func channels(_ request: HTTPRequest, _ p: PathParameters) throws(HTTPError) -> HTTPResponse {
        let app = try appCatalog(p["app"]).app
        let channels = try read { registry throws(RegistryError) in try registry.channels(app: app) }
        return .json(.array(channels.map { .string($0.rawValue) }))
    }

    /// `GET /v1/tokens[?app=A]`: the tokens scoped to the token's app, or with a token for
    /// every app, every token (`app` narrows to those scoped to A).
    func tokens(_ request: HTTPRequest, _ p: PathParameters) throws(HTTPError) -> HTTPResponse {
        var app: AppName?
        if let raw = request.query("app") { app = try appCatalog(raw).app }
        let token = try caller(p)
        if let scope = token.app {
            guard app == nil || app == scope else {
                throw .forbidden(token, needs: .auditor, app: app, for: "listing the tokens of \(app.map(\.rawValue) ?? "every app")")
            }
            app = scope
        }
        let filter = app
        let tokens = try read { registry throws(RegistryError) in try registry.tokens(scope: filter) }
        return .json(.array(tokens.map(\.json)))
    }
}
