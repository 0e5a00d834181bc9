import HTTPTransport
import PatchCore
import PatchRegistry

extension PatchService {
    /// `GET /v1/apps/{app}/status`: what `patchctl status` shows of one app, computed by the
    /// registry (`Registry.status`), so local and remote answers are the same JSON.
    func status(_ request: HTTPRequest, _ p: PathParameters) throws(HTTPError) -> HTTPResponse {
        let app = try appCatalog(p["app"]).app
        let status = try read { registry throws(RegistryError) in try registry.status(app: app) }
        return .json(status.first?.json ?? .null)
    }
}
