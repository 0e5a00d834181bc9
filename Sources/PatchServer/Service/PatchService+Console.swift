import HTTPTransport
import PatchCore
import PatchRegistry

// The web console (console/ in the repository) and the two routes it needs that the rest of
// the API does not answer: who a token is, and a patch's script for its diff.
extension PatchService {
    /// `GET /console/` and `GET /console/{file}`: the console's static files.
    func consoleFile(_ request: HTTPRequest, _ p: PathParameters) throws(HTTPError) -> HTTPResponse {
        try PatchService.console.response(p.values["file"] ?? "index.html", ifNoneMatch: request.header(.ifNoneMatch))
    }

    static let console = ConsoleSite()

    /// `GET /v1/whoami`: the token's id, name, role and scope, so the console knows what to
    /// offer (an auditor sees no action) before anything is refused.
    func whoami(_ request: HTTPRequest, _ p: PathParameters) throws(HTTPError) -> HTTPResponse {
        let token = try caller(p)
        return .json(["id": .string(token.id), "name": .string(token.name), "role": .string(token.role.rawValue),
                      "scope": .string(token.app?.rawValue ?? "*")], headers: [("Cache-Control", "no-store")])
    }

    /// `GET /v1/apps/{app}/versions/{version}/patches/{patch}/script`: the script as it was
    /// published, revoked or not, as text/plain (never run if opened). A plaintext app's
    /// scripts are public targets anyway; an encrypted app's are not served in the clear.
    func script(_ request: HTTPRequest, _ p: PathParameters) throws(HTTPError) -> HTTPResponse {
        let app = try appCatalog(p["app"]).app
        let version = try appVersion(p["appVersion"])
        let number = try PatchService.patchNumber(p["patch"])
        let bytes = try read { registry throws(RegistryError) -> [UInt8]? in
            guard let patch = try registry.patches(app: app, appVersion: version, activeOnly: false).first(where: { $0.number == number }) else {
                throw .notFound("\(app) \(version) has no patch \(number)")
            }
            return patch.encrypted ? nil : try registry.plaintext(of: patch)
        }
        guard let bytes else {
            throw HTTPError(409, "conflict", "\(app) is encrypted: its scripts are not served in the clear; compare them with patchctl diff, which holds the content key")
        }
        return HTTPResponse(status: 200, headers: [("Content-Type", "text/plain; charset=utf-8"), ("X-Content-Type-Options", "nosniff"),
                                                   ("Cache-Control", "private, no-store")], body: bytes)
    }
}
