import Foundation
import PatchCore
import PatchPush
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
        do { body = try JSONParser.parse(request.body, maxLength: PatchService.devicesBodyLimit) } catch {
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

    /// A guard acted: wakes the devices of the patch's version and channel (issue 15: "the
    /// guard: always"), for an app with an APNs key. Prepared under the registry lock the
    /// caller holds; sent on `pushQueue`, which takes the lock again only to record the figures.
    func pushGuardTrips(_ registry: Registry, app: AppName, trips: [GuardTrip]) {
        guard let endpoint = configuration.apnsEndpoint, (try? registry.apnsConfig(app: app)) != nil else { return }
        var scopes: [PatchKey] = []
        for trip in trips where !scopes.contains(where: { $0.appVersion == trip.key.appVersion && $0.channel == trip.key.channel }) {
            scopes.append(trip.key)
        }
        for key in scopes {
            let round: PushRound
            do { round = try PushRound.prepare(registry: registry, app: app, appVersion: key.appVersion, channel: key.channel,
                                               reason: "guard", endpoint: endpoint) } catch {
                logOnce("cannot push the guard's halt of \(app) \(key.appVersion): \(error)")
                continue
            }
            pushQueue.async { [self] in
                do {
                    let result = try round.send()
                    try self.registry.withLock { registry throws(PushError) in try round.finish(registry: registry, result: result, actor: Actor("patchd guard")) }
                    log("guard push for \(app) \(key.appVersion) \(key.channel): \(result.summary.text)")
                } catch {
                    log("guard push for \(app) \(key.appVersion) failed: \(error)")
                }
            }
        }
    }
}
