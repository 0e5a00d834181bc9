import PatchCore
import PatchRegistry

// What `patchctl apps throttle` and `patchctl tokens create` do, over HTTP: the same registry
// calls, answering the JSON those commands print with --json.
extension PatchService {
    /// The token route's JSON body, at most: a 200-character name written all in `\u` escapes
    /// (12 bytes a character outside the BMP) and an app name fit, so a body the schema allows
    /// is never 413.
    static let tokenBodyLimit = 4096

    /// `GET /v1/apps/{app}/throttle`: the app's rules (`apps throttle APP --json`).
    func throttle(_ request: HTTPRequest, _ p: PathParameters) throws(HTTPError) -> HTTPResponse {
        let app = try appCatalog(p["app"]).app
        let rules = try read { registry throws(RegistryError) in try registry.throttleRules(app: app) }
        return .json(rules.json)
    }

    /// `POST /v1/tokens`: `{"app": "demo", "role": "auditor", "name": "dashboard"}` (app left
    /// out: every app; role default publisher; name default the caller's actor). A publisher
    /// token issues tokens no broader than itself (`TokenRecord.mayIssue`), recorded as their
    /// `parent`: revoking it revokes them. 201 with the listing entry and, once, `token`.
    func createToken(_ request: HTTPRequest, _ p: PathParameters) throws(HTTPError) -> HTTPResponse {
        let token = try caller(p)
        let body = try PatchService.object(request, limit: PatchService.tokenBodyLimit, members: ["app", "role", "name"],
                                           what: "a token request", example: #"{"app": "demo", "role": "auditor", "name": "dashboard"}"#)
        let app = try body["app"].map { raw throws(HTTPError) -> AppName in
            guard let text = raw.stringValue else { throw .badRequest("app must be an app name, or left out for every app") }
            do throws(ValidationError) { return try AppName(text) } catch { throw error.httpError }
        }
        let role = try body["role"].map { raw throws(HTTPError) -> TokenRole in
            guard let role = raw.stringValue.flatMap(TokenRole.init(rawValue:)) else { throw .badRequest("role must be publisher or auditor") }
            return role
        } ?? .publisher
        let name = try body["name"].map { raw throws(HTTPError) -> String in
            guard let text = raw.stringValue else { throw .badRequest("name must be a string") }
            return text
        } ?? token.actor.name
        guard token.mayIssue(app: app) else {
            throw .forbidden(token, needs: .publisher, app: app, for: "issuing a token for \(app.map { "app \($0)" } ?? "every app")")
        }
        let issued = try change(app: nil, by: token) { registry throws(RegistryError) in
            try registry.createToken(app: app, role: role, name: name, actor: token.actor, parent: token.id)
        }
        return .json(issued.json, status: 201, headers: [("Cache-Control", "no-store")])
    }

    /// `DELETE /v1/tokens/{id}`: revokes a token no broader than the caller (what it could
    /// have issued: `TokenRecord.mayIssue`), and with it every token issued from it
    /// (Registry.revokeToken). The same answer as `patchctl tokens revoke --json`.
    func revokeToken(_ request: HTTPRequest, _ p: PathParameters) throws(HTTPError) -> HTTPResponse {
        let token = try caller(p)
        let id = p["id"]
        guard id.count == 12, id.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else {
            throw .badRequest("a token id is 12 lower-case hex digits")
        }
        let revoked = try change(app: nil, by: token) { registry throws(RegistryError) -> TokenRecord? in
            // Looked up and revoked under one lock: the scope checked is the one revoked.
            guard let target = try registry.tokens(scope: nil).first(where: { $0.record.id == id })?.record else {
                throw .notFound("no token with id \(id)")
            }
            guard token.mayIssue(app: target.app) else { return nil }
            return try registry.revokeToken(id: id, actor: token.actor)
        }
        guard let revoked else {
            throw .forbidden(token, needs: .publisher, for: "revoking a token", scope: " for the app that token is scoped to, or for every app")
        }
        return .json(revoked.revokedJSON)
    }
}
