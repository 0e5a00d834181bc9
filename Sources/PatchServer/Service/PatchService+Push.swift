import Foundation
import PatchCore
import PatchPush
import PatchRegistry

extension PatchService {
    /// The devices route's JSON body, at most: a token, a version, a channel and an environment.
    static let devicesBodyLimit = 1024
    /// What a registration may hold; at their longest (a 200-digit token, a 64-byte version and
    /// channel) about 400 bytes, well under `devicesBodyLimit`.
    static let registrationMembers = ["token", "appVersion", "channel", "environment"]

    /// `POST /v1/apps/{app}/devices`: `{"token": HEX, "environment": "production"|"sandbox",
    /// "appVersion": "2.3", "channel": "production"}` (channel and environment optional) and
    /// `X-Device-ID`, the device the token is bound to. No token, so bounded like reports: the
    /// 1 KiB cap and the per-IP bucket from the head (`admit`); then a new token must fit its
    /// network's hourly quota (429), name a version and channel with a patch (404), and past
    /// `maxPushDevicesPerApp` it evicts the app's stalest token. A stored token is refreshed
    /// only by its own device (409 for another). 201 stored, 200 refreshed.
    func registerDevice(_ request: HTTPRequest, _ p: PathParameters) throws(HTTPError) -> HTTPResponse {
        let app = try appCatalog(p["app"]).app
        guard let device = try deviceID(request) else {
            throw .badRequest("X-Device-ID is required: a device token is bound to the device that registers it")
        }
        // Only the documented members: a body the schema bounds is one that fits the route's
        // byte limit, so a well-formed registration is never refused as too large.
        let body = JSON.object(try PatchService.object(request, limit: PatchService.devicesBodyLimit, members: PatchService.registrationMembers,
                                                       what: "a registration", example: #"{"token": "…", "appVersion": "2.3"}"#))
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
        let limit = configuration.maxPushDevicesPerApp, quota = configuration.pushNewTokensPerNetworkPerHour
        let network = client(of: request).network
        var wait: Int?
        let registered: PushRegistration
        do {
            registered = try registry.withLock { registry throws(RegistryError) in
                try registry.registerPushDevice(app: app, token: token, deviceID: device, environment: environment, appVersion: version,
                                                channel: channel, limit: limit) {
                    wait = pushQuota.take(scope: app.rawValue, ip: network, perHour: quota)
                    return wait == nil
                }
            }
        } catch {
            if !error.isCallerError { logOnce("cannot store a device token: \(error)") }
            throw error.httpError
        }
        if registered == .overQuota {
            metrics.recordPushQuotaRefusal()
            throw .throttled(retryAfter: wait ?? 60, "too many new device tokens from this network (\(quota) an hour); nothing was stored, retry in \(wait ?? 60) s")
        }
        return .json(["registered": .string(registered.rawValue)], status: registered == .stored ? 201 : 200)
    }

    /// `POST /v1/apps/{app}/notify[?appVersion=V][&channel=C]`: one round of pushes to the
    /// app's devices of that version and channel (every one when left out), as `patchctl
    /// notify` makes it: a `push.notify` event, and its figures as the answer. Prepared and
    /// recorded under the registry lock, sent without it; the request waits for APNs' answers
    /// (bounded by PushSettings' timeout and retries). 409 for an app without an APNs key.
    /// Why a round is sent, as `push.notify` audit events name it: `patchctl notify`, or the
    /// change a `--notify` followed.
    static let pushReasons = ["notify", "publish", "promote", "revoke", "rollback"]

    func notify(_ request: HTTPRequest, _ p: PathParameters) throws(HTTPError) -> HTTPResponse {
        let app = try appCatalog(p["app"]).app
        let token = try caller(p)
        let version = try request.query("appVersion").map { raw throws(HTTPError) in try appVersion(raw) }
        let channel = try request.query("channel").map { raw throws(HTTPError) in try PatchService.channel(raw) }
        let reason = request.query("reason") ?? "notify"
        guard PatchService.pushReasons.contains(reason) else {
            throw .badRequest("reason must be one of \(PatchService.pushReasons.joined(separator: ", "))")
        }
        let dryRun = try PatchService.flag(request, "dryRun")
        guard let endpoint = configuration.apnsEndpoint else { throw HTTPError(409, "conflict", "this server sends no pushes (it has no APNs endpoint)") }
        let round = try change(app: nil, by: token) { registry throws(RegistryError) -> PushRound in
            guard try registry.apnsConfig(app: app) != nil else {
                throw .conflict("app \"\(app)\" has no APNs key: set one with `patchctl apps apns \(app) --team-id T --key-id K --key AuthKey.p8 --topic BUNDLE_ID`; nothing was sent")
            }
            do throws(PushError) {
                return try PushRound.prepare(registry: registry, app: app, appVersion: version, channel: channel, reason: reason, endpoint: endpoint)
            } catch {
                switch error {
                case .registry(let error): throw error
                case .configuration(let message): throw .conflict(message)
                }
            }
        }
        // The dry run before a change made with `--notify --server`: the key is there, and this
        // many devices would be woken.
        if dryRun { return .json(["dryRun": true, "devices": .int(Int64(round.devices.count))]) }
        do throws(PushError) {
            let result = try round.send()
            try registry.withLock { registry throws(PushError) in try round.finish(registry: registry, result: result, actor: token.actor) }
            return .json(result.summary.json)
        } catch {
            log("push for \(app) failed: \(error)")
            if case .registry(let error) = error { throw error.httpError }
            throw .internalError
        }
    }

    /// Part of patchd's upkeep: deletes the tokens not registered again within
    /// `Registry.pushTokenLifetime` (never pushed to meanwhile: `pushDevices` leaves them out).
    public func pushUpkeep(now: Date = Date()) {
        registry.withLock { registry in
            guard registry.holdsUpkeepLease() else { return }
            do { try registry.prunePushDevices(now: now) } catch { logOnce("cannot prune expired device tokens: \(error)") }
        }
    }
}
