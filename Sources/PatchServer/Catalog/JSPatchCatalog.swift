import Foundation
import HTTPTransport
import PatchCore
import PatchRegistry

/// The JSPatch Loader answers of one app, prepared with the rest of its `AppCatalog`: the
/// `vN.zip` of every listed patch and the `latest` answer naming it. Present only for apps
/// with a JSPatch key.
public struct JSPatchCatalog: Sendable {
    /// `{appVersion}/{N}` → the `vN.zip` answer.
    public let packages: [String: HTTPResponse]
    /// `{appVersion}/{N}` → the `latest` answer `{"patch":N}`.
    public let latest: [String: HTTPResponse]

    static func key(_ appVersion: String, _ number: Int) -> String { "\(appVersion)/\(number)" }

    /// nil when the app has no JSPatch key. Throws when it has one but its packages cannot be
    /// built (the key file missing or not the recorded key): the app is then not served anew.
    static func build(_ registry: Registry, app: AppName) throws(RegistryError) -> JSPatchCatalog? {
        guard let built = try registry.jspatchPackages(app: app) else { return nil }
        var packages: [String: HTTPResponse] = [:]
        var latest: [String: HTTPResponse] = [:]
        for package in built {
            let key = key(package.appVersion.rawValue, package.number)
            // no-cache rather than immutable: a revoked package must stop being served at once,
            // and JSPatch has no metadata that would tell a device to ignore it.
            packages[key] = HTTPResponse(status: 200, headers: [
                ("Content-Type", "application/zip"), ("Cache-Control", "no-cache"),
                ("ETag", "\"\(Digest.sha256Hex(package.bytes))\""),
            ], body: package.bytes, prepared: true)
            latest[key] = HTTPResponse(status: 200, headers: [
                ("Content-Type", "application/json"), ("Cache-Control", "private, no-cache"), PatchService.checkVary,
            ], body: JSON.object(["patch": .int(Int64(package.number))]).canonicalBytes + [0x0A], prepared: true)
        }
        return JSPatchCatalog(packages: packages, latest: latest)
    }
}
