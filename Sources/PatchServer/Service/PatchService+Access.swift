import HTTPTransport
import PatchCore
import PatchRegistry

// What `patchctl apps throttle` shows, over HTTP (setting the rules, and tokens, are
// operations: Sources/PatchRegistry/Operations).
extension PatchService {
    /// `GET /v1/apps/{app}/throttle`: the app's rules (`apps throttle APP --json`).
    func throttle(_ request: HTTPRequest, _ p: PathParameters) throws(HTTPError) -> HTTPResponse {
        let app = try appCatalog(p["app"]).app
        let rules = try read { registry throws(RegistryError) in try registry.throttleRules(app: app) }
        return .json(rules.json)
    }
}
