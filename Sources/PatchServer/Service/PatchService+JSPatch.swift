import Foundation
import HTTPTransport
import PatchCore
import PatchRegistry

/// The JSPatch Loader routes (docs/PROTOCOL.md, "JSPatch Loader compatibility"): an app
/// built with `rootUrl = {server}/jspatch/{app}` fetches `{rootUrl}/{appVersion}/v{N}.zip`,
/// and learns N from `{rootUrl}/{appVersion}/latest`. Both answer from the prepared catalog.
extension PatchService {
    /// `GET /jspatch/{app}/{appVersion}/v{N}.zip`: the package of a listed patch. Like a TUF
    /// target download, not throttled per device.
    func jspatchPackage(_ request: HTTPRequest, _ p: PathParameters) throws(HTTPError) -> HTTPResponse {
        let (_, jspatch) = try jspatchCatalog(p["app"])
        let version = try appVersion(p["appVersion"])
        let number = try PatchService.jspatchPackageNumber(p["package"])
        guard let response = jspatch.packages[JSPatchCatalog.key(version.rawValue, number)] else {
            throw .notFound("no package v\(number).zip for \(version) (revoked, superseded, paused or never published)")
        }
        return response
    }

    /// `GET /jspatch/{app}/{appVersion}/latest`: `{"patch":N}` for the patch the simple check
    /// would answer this device (same rollout rule, same per-device interval), `204` for none.
    /// The loader has no ETag to present; an app that sends the number it runs
    /// (`X-JSPatch-Version`, `[JPLoader currentVersion]`) keeps a listed patch as the simple
    /// check's `If-None-Match` does — a number names one patch of a version, never reused.
    func jspatchLatest(_ request: HTTPRequest, _ p: PathParameters) throws(HTTPError) -> HTTPResponse {
        let (app, jspatch) = try jspatchCatalog(p["app"])
        let version = try appVersion(p["appVersion"])
        let device = try throttleDevice(request, catalog: app, scope: (version.rawValue, .production))
        let running = try request.header("X-JSPatch-Version").map { raw throws(HTTPError) in try PatchService.patchNumber(raw) }
        let etags = app.versions[version.rawValue]?.filter { $0.channel == .production && $0.number == running }.map(\.etag) ?? []
        guard let entry = app.patch(for: version.rawValue, deviceID: device, conditional: false, etags: EntityTags(etags)),
              let response = jspatch.latest[JSPatchCatalog.key(version.rawValue, entry.number)] else {
            return PatchService.noPatch
        }
        return response
    }

    private func jspatchCatalog(_ raw: String) throws(HTTPError) -> (AppCatalog, JSPatchCatalog) {
        let app = try appCatalog(raw)
        guard let jspatch = app.jspatch else { throw .notFound("app \"\(app.app)\" serves no JSPatch packages") }
        return (app, jspatch)
    }

    /// `v{N}` (the name without `.zip`) → N, with N written as a `{patch}` is.
    static func jspatchPackageNumber(_ raw: String) throws(HTTPError) -> Int {
        guard raw.hasPrefix("v") else { throw .badRequest("a JSPatch package is named v{N}.zip") }
        return try patchNumber(String(raw.dropFirst()))
    }
}
