import Foundation
import HTTPTransport
import Locking
import PatchCore
import PatchPush
import PatchRegistry
import Synchronization

/// Settings of the patch service beyond the transport's.
public struct ServiceConfiguration: Sendable {
    /// Requests per minute per IP on routes outside any app (health, metrics, audit).
    public var globalIPRatePerMinute = 600
    public var maxTrackedDevices = 4_000_000
    /// Changes (publish, revoke, rollout) per minute per token: a leaked or runaway CI token
    /// cannot flood the registry and the audit log.
    public var changesPerTokenPerMinute = 30
    /// Proxies (load balancers, CDNs) whose X-Forwarded-For names the client for the per-IP
    /// limits. Empty: the header is ignored and the TCP peer is the client.
    public var trustedProxies: [IPNetwork] = []
    /// IPv6 clients share a per-IP bucket per network of this many bits (one subscriber
    /// usually holds a /64); IPv4 clients have one each.
    public var ipv6Prefix = 64
    /// Device tokens stored per app, at most (`POST /v1/apps/{app}/devices` is unauthenticated).
    public var maxPushDevicesPerApp = Registry.defaultMaxPushDevicesPerApp
    /// New device tokens per app per client network (`IPAddress.network`: /24, /48) per hour;
    /// 0: no quota (patchd's `--push-new-per-network`).
    public var pushNewTokensPerNetworkPerHour = ServiceConfiguration.defaultPushNewTokensPerNetworkPerHour
    /// A site's new installs in an hour, many times over, and 10,000 networks' worth of
    /// hours to fill a million-token table.
    public static let defaultPushNewTokensPerNetworkPerHour = 100
    /// Where a guard's halt or revoke is pushed for apps with an APNs key; nil: not pushed.
    public var apnsEndpoint: APNsEndpoint?
    /// What a device report must cost before it counts (budgets per network, block and app;
    /// the distinct blocks a guard or a staged rollout needs).
    public var reportRules = ReportRules()
    /// Report events queued for counting, at most (~200 bytes each); past it, 503.
    public var reportQueueEvents = 50_000
    /// Report bodies waiting to be parsed, at most (bytes): a few dozen reports, a few
    /// milliseconds of the parser's work; past it, 503 from the head.
    public var reportIntakeBytes = 2 << 20
    /// Device-token registrations waiting to be written, at most (each an open connection
    /// waiting for its answer); past it, 503 (patchd's `--push-queue`).
    public var pushRegistrationQueue = 4_096
    /// Tokens remembered as recently written, at most (about 40 bytes each): a refresh of one
    /// is answered without the registry (`RecentRegistrations`).
    public var recentPushRegistrations = 262_144
    /// How long the upkeep lease lasts without a renewal (patchd's `--upkeep-lease`), on a
    /// PostgreSQL registry: a hung or dead holder is replaced within about this long plus one
    /// pass, and the holder renews it every pass (a third of it, at most a minute).
    public var upkeepLease: Double = 180
    /// `/healthz` says degraded once an app's timestamp expires within this many seconds
    /// (patchd's `--expiry-margin`); nil: a quarter of the registry's timestamp lifetime
    /// (6 h of a day), half of the time between the re-sign (at half-life) and the expiry.
    public var expiryMargin: Double?
    /// Webhook delivery (issue 47): pace, retries, deadlines, destinations.
    public var webhooks = WebhookSettings()
    public init() {}
}

/// hotpatch's HTTP API: the routes, authorization, throttling and metrics. Reads are
/// answered from the prepared `Catalog`; writes go through the registry under one lock and
/// rebuild the app's catalog before answering.
public final class PatchService: HTTPResponder {
    let registry: Locked<Registry>
    public let catalog = Catalog()
    public let metrics = Metrics()
    public let devices: DeviceThrottle
    public let ipLimiter: IPRateLimiter
    /// The new-token quota per network; its own buckets, so a flood of other requests cannot
    /// crowd its entries out.
    public let pushQuota: IPRateLimiter
    let configuration: ServiceConfiguration
    let log: @Sendable (String) -> Void
    let router: Router<PatchService>
    let cachedRoutes: CachedRoutes
    private let lastDataVersion = AtomicCounter(-1)
    /// When the last reload of the registry began (monotonic microseconds; written under the
    /// registry lock): what `catchUp` asks to know whether a reload already covers a miss.
    private let lastReloadStarted = AtomicCounter(-1)
    var lastReloadStartedForTests: Int { lastReloadStarted.load }
    /// On a PostgreSQL registry, wakes `Upkeep` as soon as any instance commits (nil on SQLite).
    public let changeFeed: RegistryChangeFeed?
    private let loggedOnce = Locked<Set<String>>([])
    /// Device reports waiting to be counted, the worker that counts them, and what it counted
    /// (PatchService+Reports.swift).
    let reportQueue: WriteQueue<DeviceReport>
    let reportTally = ReportTally()
    /// Report bodies waiting to be parsed, off the request threads (PatchService+Reports.swift).
    let reportIntake: WriteQueue<RawReport>
    /// Device-token registrations waiting to be written, each answered once it is
    /// (PatchService+Push.swift), and the tokens written recently enough that a refresh of
    /// them is answered at once.
    let pushRegistrations: WriteQueue<PendingRegistration>
    let recentRegistrations: RecentRegistrations
    /// The registry's data version `recentRegistrations` was last checked against (from the
    /// start: the first reload is no reason to forget what was remembered before it).
    private let registrationsVersion: AtomicCounter
    /// The receipt secret (`X-Patch-Receipt`), read or made on first need: patchd must start,
    /// and serve, on a registry it cannot write (a full disk), only without receipts then.
    private let receiptSecret = Locked<(receipts: ReportReceipt?, failedAt: Double)>((nil, -1_000))
    /// Push rounds a guard started, one at a time, off the request threads and the registry lock.
    let pushQueue = DispatchQueue(label: "hotpatch.push")
    /// When `/healthz` last read the registry successfully (monotonic seconds), and what it read.
    let lastHealthyRead = Locked<(at: Double, apps: Int)?>(nil)
    /// When `reloadChanged` (patchd's upkeep, every second) last read the registry, and what it
    /// found: `/healthz` answers from it while it is fresh.
    let lastReload = Locked<(at: Double, result: Result<Int, RegistryError>)?>(nil)
    /// What the last upkeep pass found: the lease, each role's expiry, re-sign failures
    /// (`/metrics`, and `/healthz` once a timestamp is within the margin).
    let upkeepStatus: UpkeepStatus
    /// The webhook outbox's figures per app, as the last delivery pass read them (`/metrics`).
    let webhookStatus = WebhookStatus()
    /// The app versions devices check for, counted in `throttleDevice` and flushed by the
    /// upkeep pass (PatchService+AskedVersions.swift).
    public let askedVersions = AskedVersions()

    public init(registry: sending Registry, configuration: ServiceConfiguration = ServiceConfiguration(),
                devices: DeviceThrottle? = nil, ipLimiter: IPRateLimiter? = nil, pushQuota: IPRateLimiter? = nil,
                log: @escaping @Sendable (String) -> Void = { writeLine("patchd: " + $0) }) throws(RegistryError) {
        self.devices = devices ?? DeviceThrottle(capacity: configuration.maxTrackedDevices)
        self.ipLimiter = ipLimiter ?? IPRateLimiter()
        self.pushQuota = pushQuota ?? IPRateLimiter(maxEntries: 100_000)
        self.configuration = configuration
        self.log = log
        // Only the names at start-up: every app's catalog is built on its first request.
        catalog.noteKnown(try registry.apps().map(\.name))
        changeFeed = registry.changeFeed()
        reportQueue = WriteQueue(name: "patchd-reports", capacity: configuration.reportQueueEvents, groupUnits: 1_000) { $0.events.count }
        reportIntake = WriteQueue(name: "patchd-intake", capacity: configuration.reportIntakeBytes, groupUnits: 256 << 10) { $0.body.count }
        pushRegistrations = WriteQueue(name: "patchd-devices", capacity: configuration.pushRegistrationQueue,
                                       groupUnits: PatchService.pushRegistrationGroup)
        recentRegistrations = RecentRegistrations(capacity: configuration.recentPushRegistrations)
        registrationsVersion = AtomicCounter((try? registry.dataVersion()) ?? -1)
        upkeepStatus = UpkeepStatus(margin: configuration.expiryMargin ?? registry.expiry.timestamp / 4)
        registry.webhookAddresses = configuration.webhooks.denyPrivate ? .publicOnly : .any
        self.registry = Locked(registry)
        self.router = PatchService.routes()
        self.cachedRoutes = CachedRoutes(router)
    }

    /// Answers one whole request in process (tests, fuzzing): the same admission the
    /// transport runs on the head, then the handler with the body.
    public func respond(to request: HTTPRequest) -> HTTPResponse {
        switch admit(request) {
        case .answer(let response): return response
        case .later(let promise): return promise.wait()
        case .readBody(let limit, _, let finish):
            guard request.body.count <= limit else { return HTTPError.tooLarge(limit).response }
            return finish(request).wait()
        }
    }

    /// Decides a request from its head alone: route, per-IP limit, the route's access rule
    /// (the token is checked before a body byte is read) and its body limit. A request
    /// without a body is answered here; one with a body that passed is read, then finished.
    public func admit(_ request: HTTPRequest) -> HTTPAdmission {
        let started = IPRateLimiter.monotonicTime()
        let match = route(request)
        switch match.result {
        case .failure(let error):
            // 404 and 405 cost a token of the global bucket like any other request: answering
            // them is work, and free answers let one connection hold its event loop.
            let response: HTTPResponse
            do throws(HTTPError) {
                try limitIP(request, app: nil)
                response = error.response
            } catch {
                response = error.response
            }
            return .answer(record(response, route: match.metric, since: started))
        case .success(let (route, found)):
            var params = found
            do throws(HTTPError) {
                let app = params.file?.app ?? params.values["app"].flatMap { try? AppName($0) }.flatMap { servedApp($0) }
                try limitIP(request, app: app)
                params.caller = try admitCaller(request, route.access, app: params.values["app"], route: route.metric)
                // An unknown or malformed app is refused from the head too, not after its body.
                if params.file == nil, let app = params.values["app"] { _ = try appCatalog(app) }
                try refuseBody(request, limit: route.bodyLimit)
                try route.headCheck?(self, request)
                if request.declaredBody == .none {
                    switch record(try route.handler(self, request, params), route: match.metric, since: started) {
                    case .now(let response): return .answer(response)
                    case .later(let promise): return .later(promise)
                    }
                }
            } catch {
                return .answer(record(error.response, route: match.metric, since: started))
            }
            let admitted = params, metric = match.metric
            return .readBody(limit: route.bodyLimit, charge: bodyCharge(request, caller: params.caller)) { [self] whole in
                let reply: HTTPReply
                do throws(HTTPError) { reply = try route.handler(self, whole, admitted) } catch { reply = .now(error.response) }
                return record(reply, route: metric, since: started)
            }
        }
    }

    /// The route of a request and its parameters. The TUF files and the simple check, the bulk
    /// of traffic, are found by one lookup of the whole path in the prepared catalog (an
    /// exact-path cache in front of the route table): the match is their operation's own
    /// route, with the file in its parameters, so they are admitted like every other request.
    func route(_ request: HTTPRequest) -> Router<PatchService>.Match {
        if request.method == "GET" || request.method == "HEAD", let file = catalog.file(at: request.path) {
            var params = PathParameters()
            params.file = file
            return Router.Match(metric: file.metric, result: .success((cachedRoutes.route(for: file), params)))
        }
        return router.match(method: request.method, path: request.path)
    }

    /// A request the transport refused (bad framing, a head too large, a deadline) takes a
    /// token of the sender's global bucket, as a 404 does. A trusted proxy is not charged:
    /// its clients' refusals would spend one bucket for all of them.
    public func refused(peer: IPAddress) {
        let rate = configuration.globalIPRatePerMinute
        guard rate > 0, !configuration.trustedProxies.trusts(peer) else { return }
        _ = ipLimiter.take(scope: "*", ip: peer.limitKey(ipv6Prefix: configuration.ipv6Prefix), ratePerMinute: rate)
    }

    private func record(_ response: HTTPResponse, route: Metrics.Route, since started: Double) -> HTTPResponse {
        metrics.record(route: route, status: response.status, bodyBytes: response.body.count,
                       seconds: IPRateLimiter.monotonicTime() - started)
        return response
    }

    /// Whom a body is charged to in the transport's body budget: a token's line of issue (so
    /// issuing children does not multiply its share, as with its change budget), or else the
    /// client, whose address and network each hold a share of the anonymous pool. A trusted
    /// proxy that names no client is charged to that pool alone: its clients are many.
    func bodyCharge(_ request: HTTPRequest, caller: TokenRecord?) -> BodyCharge {
        if let caller { return .token(holder: caller.tree) }
        let client = self.client(of: request)
        return .anonymous(client: configuration.trustedProxies.trusts(client) ? nil : client)
    }

    /// The client a request speaks for: the TCP peer, or the one a trusted proxy names
    /// (`[IPNetwork].client`). What every per-client limit counts under.
    func client(of request: HTTPRequest) -> IPAddress {
        configuration.trustedProxies.client(peer: request.peer, forwardedFor: request.joinedHeader(.forwardedFor))
    }

    /// A promised answer is recorded when it is kept, its time in the queue included.
    private func record(_ reply: HTTPReply, route: Metrics.Route, since started: Double) -> HTTPReply {
        switch reply {
        case .now(let response): .now(record(response, route: route, since: started))
        case .later(let promise): .later(promise.map { [self] in record($0, route: route, since: started) })
        }
    }

    /// A declared body the route cannot take is refused from the head; it is never read.
    private func refuseBody(_ request: HTTPRequest, limit: Int) throws(HTTPError) {
        switch request.declaredBody {
        case .none: return
        case .length(let n) where n <= limit: return
        case .chunked where limit > 0: return
        default:
            if limit == 0 { throw HTTPError(413, "too_large", "\(request.method) \(request.path.debugSanitized) takes no request body") }
            throw .tooLarge(limit)
        }
    }

    /// The token a route's access rule requires, checked before anything else of the request
    /// is read: 401 without a known token, 403 when it may not act on this app.
    private func admitCaller(_ request: HTTPRequest, _ access: RouteAccess, app rawApp: String?, route: Metrics.Route) throws(HTTPError) -> TokenRecord? {
        switch access {
        case .anyone:
            return nil
        case .token:
            return try authenticate(request)
        case .role(let role):
            let record = try authenticate(request)
            // A route with no app in its path (POST /v1/tokens) needs the role on some app;
            // its handler holds what it acts on to the token's scope.
            guard let rawApp else {
                guard record.acts(as: role) else { throw .forbidden(record, needs: role, for: route.action) }
                return record
            }
            let app = try? AppName(rawApp)
            guard record.allows(role, app: app) else { throw .forbidden(record, needs: role, app: app, for: route.action) }
            return record
        }
    }

    /// The per-IP bucket of the app (its own rate), or the global one for other routes. The
    /// key is the parsed address, IPv6 grouped by `ipv6Prefix` bits.
    private func limitIP(_ request: HTTPRequest, app: AppCatalog?) throws(HTTPError) {
        let scope = app?.app.rawValue ?? "*"
        let rate = app?.rules.ipRatePerMinute ?? configuration.globalIPRatePerMinute
        guard rate > 0 else { return }
        if let wait = ipLimiter.take(scope: scope, ip: client(of: request).limitKey(ipv6Prefix: configuration.ipv6Prefix), ratePerMinute: rate) {
            throw .throttled(retryAfter: wait, "too many requests from this address; retry in \(wait) s")
        }
    }

    /// What receipts are made with, or nil while the registry cannot give its secret (tried
    /// again at most every 10 s; the bundle is then served without one, and logged once).
    func receipts() -> ReportReceipt? {
        let now = IPRateLimiter.monotonicTime()
        let known = receiptSecret.withLock { $0 }
        if let receipts = known.receipts { return receipts }
        guard now - known.failedAt >= 10 else { return nil }
        let result = registry.withLock { registry in Result { () throws(RegistryError) in try registry.reportReceipts() } }
        switch result {
        case .success(let receipts):
            receiptSecret.withLock { $0.receipts = receipts }
            return receipts
        case .failure(let error):
            receiptSecret.withLock { $0.failedAt = now }
            logOnce("bundles are served without report receipts: the receipt secret cannot be read or made: \(error)")
            return nil
        }
    }

    // MARK: Helpers for handlers

    func appCatalog(_ raw: String) throws(HTTPError) -> AppCatalog {
        let name: AppName
        do { name = try AppName(raw) } catch { throw error.httpError }
        guard let catalog = servedApp(name) else { throw .notFound("unknown app \"\(raw.debugSanitized)\"") }
        return catalog
    }

    /// The app's prepared catalog, built on its first request. Only names the registry
    /// has are looked up, so a flood of made-up names never reaches SQLite.
    func servedApp(_ name: AppName) -> AppCatalog? {
        if let built = catalog.app(name) { return built }
        guard catalog.isKnown(name) else { return nil }
        return registry.withLock { registry in
            if let built = catalog.app(name) { return built }  // another request built it meanwhile
            guard let refresh = try? catalog.build(name, from: registry) else { return nil }
            report(refresh)
            return catalog.app(name)
        }
    }

    func appVersion(_ raw: String) throws(HTTPError) -> AppVersion {
        do { return try AppVersion(raw) } catch { throw error.httpError }
    }

    /// The request's X-Device-ID, if any, checked wherever the header is documented (every
    /// metadata file, not only the ones it throttles): 1 to 256 bytes.
    /// Sent on two lines, which one counts would depend on who reads it (a proxy hashing the
    /// first for affinity, this server another): refused.
    func deviceID(_ request: HTTPRequest) throws(HTTPError) -> String? {
        guard let (device, repeated) = request.singleHeader(.deviceID) else { return nil }
        guard !repeated else { throw .badRequest("X-Device-ID must be sent once") }
        guard !device.isEmpty, device.utf8.count <= 256 else { throw .badRequest("X-Device-ID must be 1 to 256 bytes") }
        return device
    }

    /// The request's X-Device-Secret, if any (`DeviceSecret`: 32 to 128 characters of
    /// A–Z a–z 0–9 - _, sent once), checked wherever X-Device-ID is on the check path. It only
    /// ever picks the device's throttle slot; without X-Device-ID there is no slot to pick,
    /// and it changes nothing.
    static func deviceSecret(_ request: HTTPRequest) throws(HTTPError) -> DeviceSecret? {
        guard let (raw, repeated) = request.singleHeader(.deviceSecret) else { return nil }
        guard !repeated else { throw .badRequest("\(DeviceSecret.header) must be sent once") }
        do { return try DeviceSecret(raw) } catch { throw error.httpError }
    }

    /// The per-device minimum interval, applied to checks that carry X-Device-ID, in the
    /// slot of the device ID and its X-Device-Secret (`DeviceThrottle`): a request naming a
    /// device without its secret spends none of that device's checks.
    /// `scope`: the app version and channel the check is for, when the route or the request
    /// says (`X-App-Version`, `X-Channel` on timestamp.json); it picks which revoke lifts the
    /// interval (DeviceThrottle.lift). Returns the device ID it read (`deviceID`), for the
    /// caller's rules of the same request: rollout buckets and allow-lists stay on the ID.
    @discardableResult
    func throttleDevice(_ request: HTTPRequest, catalog: AppCatalog, scope: (appVersion: String, channel: ChannelName)? = nil) throws(HTTPError) -> String? {
        let declared = scope == nil ? try PatchService.declaredScope(request) : nil
        let secret = try PatchService.deviceSecret(request)
        // Which versions devices ask for (issue 44): one count in memory, kept off the request path.
        if let asked = scope ?? declared { askedVersions.note(app: catalog.app.rawValue, version: asked.appVersion) }
        guard let device = try deviceID(request) else { return nil }
        let scope = scope ?? declared
        if case .throttled(let wait) = devices.check(app: catalog.app.rawValue, device: device, secret: secret, interval: catalog.rules.minInterval,
                                                     scope: scope.map { ($0.appVersion, $0.channel.rawValue) },
                                                     announced: try PatchService.pushAnnounced(request)) {
            // Scoped to the device: its interval, which a revoke lifts (a forced check may try).
            throw HTTPError(429, "throttled", "this device checked less than \(catalog.rules.minInterval) s ago; retry in \(wait) s",
                            headers: [("Retry-After", String(max(1, wait))), ("X-Throttle-Scope", "device")])
        }
        return device
    }

    /// `X-Push-Timestamp`: the timestamp version a push announced (PatchClient.handlePush);
    /// nil without it, 400 when it is not a positive decimal.
    static func pushAnnounced(_ request: HTTPRequest) throws(HTTPError) -> Int64? {
        guard let raw = request.header(.pushTimestamp) else { return nil }
        guard let n = Int64(raw), n >= 1, String(n) == raw else { throw .badRequest("X-Push-Timestamp must be a positive integer") }
        return n
    }

    /// What a metadata request other than timestamp.json may carry is checked as on
    /// timestamp.json (a client sends the same headers on every metadata fetch).
    func checkMetadataHeaders(_ request: HTTPRequest) throws(HTTPError) {
        _ = try deviceID(request)
        _ = try PatchService.deviceSecret(request)
        _ = try PatchService.declaredScope(request)
    }

    /// The app version and channel a TUF client declares on timestamp.json (`X-App-Version`,
    /// `X-Channel`, default production); nil without `X-App-Version`. Malformed is 400.
    static func declaredScope(_ request: HTTPRequest) throws(HTTPError) -> (appVersion: String, channel: ChannelName)? {
        guard let raw = request.header(.appVersion) else { return nil }
        let version: AppVersion
        do { version = try AppVersion(raw) } catch { throw .badRequest("X-App-Version: \(error.message)") }
        let channel = try request.header(.channel).map { raw throws(HTTPError) in try PatchService.channel(raw) } ?? .production
        return (version.rawValue, channel)
    }

    /// The token the route's access rule admitted (see `admitCaller`).
    func caller(_ p: PathParameters) throws(HTTPError) -> TokenRecord {
        guard let token = p.caller else { throw .unauthorized }
        return token
    }

    /// The token of the request, whatever it may do: 401 without a known token.
    func authenticate(_ request: HTTPRequest) throws(HTTPError) -> TokenRecord {
        guard let presented = request.bearerToken else { throw .unauthorized }
        let record: TokenRecord?
        do { record = try registry.withLock { registry throws(RegistryError) in try registry.token(presented: presented) } } catch {
            log("token lookup failed: \(error)")
            throw error.httpError
        }
        guard let record else { throw HTTPError(401, "unauthorized", "unknown or revoked token", headers: [("WWW-Authenticate", "Bearer")]) }
        return record
    }

    /// Runs a registry change made with `token`, then rebuilds the app's catalog before the
    /// answer goes out, so a client that changed something sees it on its next request.
    /// `app` nil: a change that serves nothing new (a token issued).
    func change<T: Sendable>(app: AppName?, by token: TokenRecord, _ body: (Registry) throws(RegistryError) -> T) throws(HTTPError) -> T {
        // One budget per line of issue: a token's children spend their ancestors' (issue 43).
        if let wait = ipLimiter.take(scope: "token", ip: token.tree, ratePerMinute: configuration.changesPerTokenPerMinute) {
            throw .throttled(retryAfter: wait, "this token and the tokens issued from the same one made more than \(configuration.changesPerTokenPerMinute) changes in a minute; retry in \(wait) s")
        }
        do {
            return try registry.withLock { registry throws(RegistryError) -> T in
                let result = try body(registry)
                if let app { report(try catalog.build(app, from: registry)) }
                return result
            }
        } catch {
            if !error.isCallerError { log("change to \(app.map(\.rawValue) ?? "the registry") failed: \(error)") }
            throw error.httpError
        }
    }

    func read<T: Sendable>(_ body: (Registry) throws(RegistryError) -> T) throws(HTTPError) -> T {
        do { return try registry.withLock { registry throws(RegistryError) -> T in try body(registry) } } catch {
            if !error.isCallerError { log("read failed: \(error)") }
            throw error.httpError
        }
    }

    // MARK: Background work

    /// Picks up changes other processes (patchctl, other patchd on the same registry)
    /// committed. SQLite's data_version moves only when another connection commits, so an idle
    /// poll is one pragma; on PostgreSQL it is one row (`registry_changes`), and `changeFeed`
    /// says when to look without waiting for the next poll.
    public func reloadChanged() {
        registry.withLock { reload($0) }
    }

    /// `reloadChanged`'s work, under the registry lock.
    private func reload(_ registry: Registry) {
        lastReloadStarted.store(Int(IPRateLimiter.monotonicTime() * 1_000_000))
        let version: Int
        do throws(RegistryError) {
            version = try registry.dataVersion()
            // What /healthz answers for the next few seconds, so a health check (one a
            // second from every proxy) costs the worker thread that takes it no database
            // round trip and no wait for the registry lock.
            let apps = try registry.checkReadable()
            lastReload.withLock { $0 = (IPRateLimiter.monotonicTime(), .success(apps)) }
        } catch {
            lastReload.withLock { $0 = (IPRateLimiter.monotonicTime(), .failure(error)) }
            logOnce("reload failed: \(error)")
            return
        }
        // Another process or instance committed since the tokens were remembered: they may
        // no longer be what the registry holds (a token deleted or re-pointed there).
        if registrationsVersion.exchange(version) != version { recentRegistrations.removeAll() }
        guard lastDataVersion.load != version else { return }
        do {
            lastDataVersion.store(version)
            let refresh = try catalog.refresh(from: registry)
            if !refresh.rebuilt.isEmpty { log("reloaded \(refresh.rebuilt.map(\.rawValue).sorted().joined(separator: ", "))") }
            report(refresh)
        } catch { log("reload failed: \(error)") }
    }

    /// For a request that missed what another instance may have committed a moment ago
    /// (several patchd on one registry; the device's metadata came from there): returns once a
    /// reload that began at or after `missedAt` has run, so whatever was committed before the
    /// miss is in the catalog when the caller looks again. Misses coalesce on the registry
    /// lock: every request that missed while one reload ran is answered by the next, so a
    /// burst costs one reload (one data-version read when nothing changed) per reload's time,
    /// never one per request. Only misses a newer state could fill ask
    /// (`AppCatalog.mayBeNewer`); a made-up name is a 404 at once.
    func catchUp(missedAt: Double) {
        let missed = Int(missedAt * 1_000_000)
        registry.withLock { registry in
            guard lastReloadStarted.load < missed else { return }
            reload(registry)
        }
    }

    /// A push can reach a device before this instance has reloaded the change it announces
    /// (patchctl sends it the moment its commit lands). For a timestamp request carrying
    /// `X-Push-Timestamp` of a version this instance does not serve yet: the app's catalog
    /// after catching up, so the device's one pass through its interval gets the new timestamp,
    /// not a 429 or the old one. nil otherwise (the common case costs one header lookup).
    func caughtUpForPush(_ request: HTTPRequest, _ catalog: AppCatalog) throws(HTTPError) -> AppCatalog? {
        guard let announced = try PatchService.pushAnnounced(request),
              devices.servedSince(app: catalog.app.rawValue, announced: announced) == nil else { return nil }
        catchUp(missedAt: IPRateLimiter.monotonicTime())
        return servedApp(catalog.app)
    }

    /// Logs what a catalog refresh could not prepare: an app left on its previous state
    /// (or unserved), or served without its JSPatch packages.
    func report(_ refresh: Catalog.Refresh) {
        for app in refresh.rebuilt {
            if let built = catalog.app(app) { devices.noteTimestamp(app: app.rawValue, version: built.timestampVersion) }
        }
        for (app, version, channel) in refresh.withdrawn {
            devices.lift(app: app.rawValue, appVersion: version, channel: channel.rawValue)
        }
        for (app, error) in refresh.failed { log("not serving the new state of \(app): \(error)") }
        for (app, error) in refresh.withoutJSPatch { logOnce("serving \(app) without its JSPatch packages: \(error)") }
    }

    func logOnce(_ message: String) {
        if loggedOnce.withLock({ $0.insert(message).inserted }) { log(message) }
    }
}

/// The routes a published file is answered by: its operation's own (access, body limit and
/// handler from the route table), looked up once.
struct CachedRoutes: Sendable {
    let metadata: Router<PatchService>.Route
    let target: Router<PatchService>.Route
    let check: Router<PatchService>.Route

    init(_ router: Router<PatchService>) {
        guard let metadata = router.route(.getMetadata), let target = router.route(.getTarget), let check = router.route(.checkPatch) else {
            preconditionFailure("the route table lacks a published file's operation")
        }
        self.metadata = metadata
        self.target = target
        self.check = check
    }

    func route(for file: PublishedFile) -> Router<PatchService>.Route {
        switch file.kind {
        case .metadata: return metadata
        case .target: return target
        case .simpleCheck: return check
        }
    }
}
