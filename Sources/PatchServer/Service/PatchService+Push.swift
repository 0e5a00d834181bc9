import Foundation
import PatchCore
import PatchRegistry

extension PatchService {
    /// The devices route's JSON body, at most: a token, a version, a channel and an environment.
    static let devicesBodyLimit = 1024

    /// `POST /v1/apps/{app}/devices`: `{"token": HEX, "environment": "production"|"sandbox",
    /// "appVersion": "2.3", "channel": "production"}` (channel and environment optional). No
    /// token, so bounded like reports: the 1 KiB cap and the per-IP bucket from the head
    /// (`admit`), and `maxPushDevicesPerApp` stored tokens per app (503 `full` for a new one
    /// beyond it; a stored token is refreshed whatever the count). 201 stored, 200 refreshed.
    func registerDevice(_ request: HTTPRequest, _ p: PathParameters) throws(HTTPError) -> HTTPResponse {
        let app = try appCatalog(p["app"]).app
        let body: JSON
        do { body = try JSONParser.parse(request.body, maxDepth: 2, maxLength: PatchService.devicesBodyLimit) } catch {
            throw .badRequest("body must be JSON like {\"token\": \"…\", \"appVersion\": \"2.3\"}: \(error)")
        }
        guard let token = body["token"]?.stringValue, let rawVersion = body["appVersion"]?.stringValue else {
            throw .badRequest("body needs string token (hex, as APNs gave it) and appVersion")
        }
        let version = try appVersion(rawVersion)
        let channel = try body["channel"].map { raw throws(HTTPError) in
            guard let text = raw.stringValue else { throw .badRequest("channel must be a string") }
            return try PatchService.channel(text)
        } ?? .production
        let rawEnvironment = body["environment"]?.stringValue ?? PushEnvironment.production.rawValue
        guard let environment = PushEnvironment(rawValue: rawEnvironment) else { throw .badRequest("environment must be production or sandbox") }
        let limit = configuration.maxPushDevicesPerApp
        let registered: PushRegistration
        do {
            registered = try registry.withLock { registry throws(RegistryError) in
                try registry.registerPushDevice(app: app, token: token, environment: environment, appVersion: version, channel: channel, limit: limit)
            }
        } catch .conflict(let message) {
            throw HTTPError(503, "full", message, headers: [("Retry-After", "3600")])
        } catch {
            if !error.isCallerError { logOnce("cannot store a device token: \(error)") }
            throw error.httpError
        }
        return .json(["registered": .string(registered.rawValue)], status: registered == .stored ? 201 : 200)
    }
}
