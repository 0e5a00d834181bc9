import Foundation
import HTTPTransport
import PatchCore
import PatchPush
import PatchRegistry

extension PatchService {
    /// The devices route's JSON body, at most: a token, a version, a channel and an environment.
    static let devicesBodyLimit = 1024
    /// What a registration may hold; at their longest (a 200-digit token, a 64-byte version and
    /// channel) about 400 bytes, well under `devicesBodyLimit`.
    static let registrationMembers = ["token", "appVersion", "channel", "environment"]

    /// Registrations per transaction, at most: one commit for many, a short hold of the lock.
    static let pushRegistrationGroup = 256

    /// `POST /v1/apps/{app}/devices`: `{"token": HEX, "environment": "production"|"sandbox",
    /// "appVersion": "2.3", "channel": "production"}` (channel and environment optional) and
    /// `X-Device-ID`, the device the token is bound to. No token, so bounded like reports: the
    /// 1 KiB cap and the per-IP bucket from the head (`admit`). Nothing here takes the registry
    /// lock or waits on the disk (issue 43): a refresh this server wrote within
    /// `Registry.pushRefreshInterval` is 200 at once (`RecentRegistrations`); anything else is
    /// queued for the registration writer (`writeRegistrations`) and answered once written,
    /// or 503 with Retry-After when the queue is full.
    func registerDevice(_ request: HTTPRequest, _ p: PathParameters) throws(HTTPError) -> HTTPReply {
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
        let registration: PushDeviceRegistration
        do {
            registration = try PushDeviceRegistration(app: app, token: token, deviceID: device, environment: environment, appVersion: version, channel: channel)
        } catch { throw error.httpError }
        if recentRegistrations.coalesces(registration, now: Date()) {
            metrics.recordPushRefreshFromMemory()
            return .now(PatchService.registered(.refreshed))
        }
        let network = client(of: request).network
        let promise = HTTPPromise()
        guard pushRegistrations.enqueue(PendingRegistration(registration: registration, network: network, promise: promise),
                                        writer: { [self] in writeRegistrations() }) else {
            metrics.recordPushQueueRefusal()
            throw HTTPError(503, "busy", "too many device registrations are waiting to be stored; nothing was stored, register again later",
                            headers: [("Retry-After", "30")])
        }
        return .later(promise)
    }

    /// The registration writer (the queue's thread): a group at a time, decided and written in
    /// one transaction under the registry lock (`Registry.registerPushDevices`: 409 bound to
    /// another device, 404 no patch for that version and channel, 429 past the network's
    /// quota of new tokens, a full table evicting the stalest), each request answered once
    /// the lock is free again: 201 stored, 200 refreshed.
    func writeRegistrations() {
        let limit = configuration.maxPushDevicesPerApp, quota = configuration.pushNewTokensPerNetworkPerHour
        pushRegistrations.drain { take in
            var answers: [(HTTPPromise, HTTPResponse)] = []
            defer { for (promise, answer) in answers { promise.keep(answer) } }
            return registry.withLock { registry -> Bool in
                guard let group = take() else { return false }
                let now = Date()
                var waits: [Int: Int] = [:]
                let batch = registry.registerPushDevices(group.map(\.registration), limit: limit, now: now) { i in
                    waits[i] = pushQuota.take(scope: group[i].registration.app.rawValue, ip: group[i].network, perHour: quota)
                    return waits[i] == nil
                }
                for (app, token) in batch.evicted { recentRegistrations.forget(app, token) }
                for (i, pending) in group.enumerated() {
                    answers.append((pending.promise, answer(batch.results[i], registration: pending.registration, wait: waits[i], quota: quota, now: now)))
                }
                return true
            }
        }
    }

    /// One registration's answer, and what this server remembers of it.
    private func answer(_ result: Result<(registration: PushRegistration, record: PushTokenRecord?), RegistryError>,
                        registration: PushDeviceRegistration, wait: Int?, quota: Int, now: Date) -> HTTPResponse {
        switch result {
        case .success((.overQuota, _)):
            metrics.recordPushQuotaRefusal()
            let wait = wait ?? 60
            return HTTPError.throttled(retryAfter: wait, "too many new device tokens from this network (\(quota) an hour); nothing was stored, retry in \(wait) s").response
        case .success(let (registered, record)):
            if let record { recentRegistrations.note(registration, holds: record, now: now) }
            return PatchService.registered(registered)
        case .failure(let error):
            if !error.isCallerError { logOnce("cannot store a device token: \(error)") }
            return error.httpError.response
        }
    }

    static func registered(_ registered: PushRegistration) -> HTTPResponse {
        .json(["registered": .string(registered.rawValue)], status: registered == .stored ? 201 : 200)
    }

    /// Waits until every registration queued so far is written and answered (tests; patchd's stop).
    public func settleRegistrations(stopping: Bool = false) { pushRegistrations.waitUntilIdle(hurry: stopping) }

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
                return try PushRound.prepare(store: registry.pushStore(actor: token.actor), app: app, appVersion: version, channel: channel, reason: reason, endpoint: endpoint)
            } catch {
                switch error {
                case .store(let error as RegistryError): throw error
                case .store: throw .internalError(String(describing: error))
                case .configuration(let message): throw .conflict(message)
                }
            }
        }
        // The dry run before a change made with `--notify --server`: the key is there, and this
        // many devices would be woken.
        if dryRun { return .json(["dryRun": true, "devices": .int(Int64(round.devices.count))]) }
        do throws(PushError) {
            let result = try round.send()
            try registry.withLock { registry throws(PushError) in try round.finish(store: registry.pushStore(actor: token.actor), result: result) }
            // The tokens APNs said are gone were deleted.
            if !result.gone.isEmpty { recentRegistrations.removeAll() }
            return .json(result.summary.json)
        } catch {
            log("push for \(app) failed: \(error)")
            if case .store(let error as RegistryError) = error { throw error.httpError }
            throw .internalError
        }
    }

    /// Part of patchd's upkeep: deletes the tokens not registered again within
    /// `Registry.pushTokenLifetime` (never pushed to meanwhile: `pushDevices` leaves them out).
    public func pushUpkeep(now: Date = Date()) {
        registry.withLock { registry in
            guard registry.holdsUpkeepLease() else { return }
            do {
                if try registry.prunePushDevices(now: now) > 0 { recentRegistrations.removeAll() }
            } catch { logOnce("cannot prune expired device tokens: \(error)") }
        }
    }
}

/// A registration waiting for the writer, and the request waiting for its answer.
struct PendingRegistration: Sendable {
    let registration: PushDeviceRegistration
    /// The client's network (`IPAddress.network`), which the quota of new tokens counts by.
    let network: String
    let promise: HTTPPromise
}
