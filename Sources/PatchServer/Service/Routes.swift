import Foundation
import HTTPTransport
import PatchCore
import PatchRegistry

extension PatchService {
    /// Every route of the v1 API (documented in docs/openapi.yaml and docs/PROTOCOL.md).
    static func routes() -> Router<PatchService> {
        var r = Router<PatchService>()
        r.add(.health, metric: .health) { s, _, _ throws(HTTPError) in try s.health() }
        r.add(.metrics, metric: .metrics) { s, _, _ in s.renderMetrics() }
        r.add(.getMetadata, metric: .metadata) { s, q, p throws(HTTPError) in try s.metadata(q, p) }
        r.add(.getTarget, metric: .target) { s, q, p throws(HTTPError) in try s.target(q, p, conditional: false) }
        r.add(.getChannelTarget, metric: .target) { s, q, p throws(HTTPError) in try s.target(q, p, conditional: false) }
        r.add(.getConditionalTarget, metric: .target) { s, q, p throws(HTTPError) in try s.target(q, p, conditional: true) }
        r.add(.getChannelConditionalTarget, metric: .target) { s, q, p throws(HTTPError) in try s.target(q, p, conditional: true) }
        r.add(.checkPatch, metric: .check) { s, q, p throws(HTTPError) in try s.check(q, p) }
        // Release operations (Sources/PatchRegistry/Operations): decode, execute, encode, one
        // handler for all of them (OperationRoutes.swift).
        for operation in ReleaseOperations.all { r.add(operation) }
        r.add(.listChannels, metric: .list) { s, q, p throws(HTTPError) in try s.channels(q, p) }
        r.add(.listAppVersions, metric: .list) { s, q, p throws(HTTPError) in try s.askedVersionList(q, p) }
        r.add(.listPatches, metric: .list) { s, q, p throws(HTTPError) in try s.list(q, p) }
        r.add(.appStatus, metric: .list) { s, q, p throws(HTTPError) in try s.status(q, p) }
        // Device reports, their figures and the guards that act on them (PatchService+Reports.swift).
        r.add(.postReports, metric: .report, body: PatchService.reportsBodyLimit, head: { s, q throws(HTTPError) in try s.reportQueueHasRoom(q) },
              replying: { s, q, p throws(HTTPError) in try s.reports(q, p) })
        r.add(.registerDevice, metric: .devices, body: PatchService.devicesBodyLimit, replying: { s, q, p throws(HTTPError) in try s.registerDevice(q, p) })
        r.add(.appStats, metric: .list) { s, q, p throws(HTTPError) in try s.stats(q, p) }
        // Throttling rules and tokens (PatchService+Access.swift), a push round (PatchService+Push.swift).
        r.add(.getThrottle, metric: .list) { s, q, p throws(HTTPError) in try s.throttle(q, p) }
        // Webhook subscriptions, listed (adding, removing and testing are operations): PatchService+Webhooks.swift.
        r.add(.listWebhooks, metric: .list) { s, q, p throws(HTTPError) in try s.webhookList(q, p) }
        r.add(.notifyDevices, metric: .push) { s, q, p throws(HTTPError) in try s.notify(q, p) }
        // The two-person rule (PatchService+Pending.swift).
        r.add(.listPending, metric: .list) { s, q, p throws(HTTPError) in try s.pendingList(q, p) }
        r.add(.getPending, metric: .list) { s, q, p throws(HTTPError) in try s.pendingOne(q, p) }
        r.add(.approvePending, metric: .publish, body: PatchService.approvalBodyLimit) { s, q, p throws(HTTPError) in try s.approvePending(q, p) }
        r.add(.rejectPending, metric: .publish) { s, q, p throws(HTTPError) in try s.rejectPending(q, p) }
        r.add(.getAudit, metric: .audit) { s, q, p throws(HTTPError) in try s.audit(q, p) }
        // Listings for any token, each filtered to what the token may read (PatchService+Listings.swift).
        r.add(.listApps, metric: .list) { s, q, p throws(HTTPError) in try s.apps(q, p) }
        r.add(.listTokens, metric: .list) { s, q, p throws(HTTPError) in try s.tokens(q, p) }
        r.add(.whoami, metric: .list) { s, q, p throws(HTTPError) in try s.whoami(q, p) }
        r.add(.patchScript, metric: .list) { s, q, p throws(HTTPError) in try s.script(q, p) }
        // The web console (PatchService+Console.swift): static files, and `/` sends a browser there.
        r.add(.rootRedirect, metric: .console) { _, _, _ in ConsoleSite.redirect }
        r.add(.consoleRedirect, metric: .console) { _, _, _ in ConsoleSite.redirect }
        r.add(.consoleIndex, metric: .console) { s, q, p throws(HTTPError) in try s.consoleFile(q, p) }
        r.add(.consoleFile, metric: .console) { s, q, p throws(HTTPError) in try s.consoleFile(q, p) }
        // JSPatch Loader compatibility (PatchService+JSPatch.swift), counted as a download and a check.
        r.add(.getJSPatchPackage, metric: .target) { s, q, p throws(HTTPError) in try s.jspatchPackage(q, p) }
        r.add(.getJSPatchLatest, metric: .check) { s, q, p throws(HTTPError) in try s.jspatchLatest(q, p) }
        return r
    }

    /// A boolean query parameter: absent or `false` is false, `true` is true, anything else 400.
    static func flag(_ request: HTTPRequest, _ name: String) throws(HTTPError) -> Bool {
        switch request.query(name) {
        case nil, "false": return false
        case "true": return true
        default: throw .badRequest("\(name) must be true or false")
        }
    }

    /// A JSON object body of at most `limit` bytes holding only `members`: any other member is
    /// 400, so a body its schema allows is one that fits the limit. `what` names it in that
    /// error ("a registration has only …"); `example` shows one in the others.
    static func object(_ request: HTTPRequest, limit: Int, members: [String], what: String, example: String) throws(HTTPError) -> [String: JSON] {
        let body: JSON
        do { body = try JSONParser.parse(request.body, maxLength: limit) } catch { throw .badRequest("body must be JSON like \(example): \(error)") }
        guard let object = body.objectValue else { throw .badRequest("body must be a JSON object like \(example)") }
        if let unknown = object.keys.filter({ !members.contains($0) }).min() {
            let list = members.count > 1 ? members.dropLast().joined(separator: ", ") + " and " + members.last! : members.joined()
            throw .badRequest("unknown member \"\(unknown.debugSanitized)\": \(what) has only \(list)")
        }
        return object
    }

    /// Events per /v1/audit page, at most and by default.
    static let auditPageLimit = 1000

    /// An optional decimal query value within `range` (no sign, no leading zeros).
    static func integer(_ request: HTTPRequest, _ name: String, in range: ClosedRange<Int64>, default value: Int64) throws(HTTPError) -> Int64 {
        guard let raw = request.query(name) else { return value }
        guard let n = Int64(raw), String(n) == raw, range.contains(n) else {
            throw .badRequest("\(name) must be an integer from \(range.lowerBound) to \(range.upperBound)")
        }
        return n
    }

    /// A channel named in a path or query: the channel grammar, else 400.
    static func channel(_ raw: String) throws(HTTPError) -> ChannelName {
        do { return try ChannelName(raw) } catch { throw error.httpError }
    }

    static func patchNumber(_ raw: String) throws(HTTPError) -> Int {
        guard let n = Int(raw), n >= 1, n <= Int(Int32.max), String(n) == raw else { throw .badRequest("patch must be a positive integer") }
        return n
    }

    // MARK: TUF repository

    func metadata(_ request: HTTPRequest, _ p: PathParameters) throws(HTTPError) -> HTTPResponse {
        if let file = p.file { return try answer(request, file) }
        let app = try appCatalog(p["app"])
        if app.metadata[p["file"]] != nil { return try answer(request, PublishedFile(app: app, kind: .metadata(name: p["file"]))) }
        // A versioned file this instance does not have yet may have been committed through
        // another instance a moment ago (the device's timestamp came from there): caught up
        // before the 404, so a sync split across instances does not fail on the one behind.
        try checkMetadataHeaders(request)
        if app.mayBeNewer(metadata: p["file"]) {
            catchUp(missedAt: IPRateLimiter.monotonicTime())
            let now = try appCatalog(p["app"])
            if now.metadata[p["file"]] != nil { return try answer(request, PublishedFile(app: now, kind: .metadata(name: p["file"]))) }
        }
        throw .notFound("no metadata file \"\(p["file"].debugSanitized)\"")
    }

    /// One file of the catalog, found by the fast path's lookup or by a route: the per-device
    /// interval and a push's catch-up for timestamp.json (the device's check), the metadata
    /// headers for the other metadata, a receipt with a target.
    func answer(_ request: HTTPRequest, _ file: PublishedFile) throws(HTTPError) -> HTTPResponse {
        switch file.kind {
        case .metadata(let name):
            var app = file.app
            if name == "timestamp.json" {
                app = try caughtUpForPush(request, app) ?? app
                try throttleDevice(request, catalog: app)
            } else {
                try checkMetadataHeaders(request)
            }
            guard let response = app.metadata[name] ?? file.app.metadata[name] else { throw .notFound("no metadata file \"\(name)\"") }
            return response
        case .target(let target):
            return try receipted(target, of: file.app.app, request)
        case .simpleCheck(let version):
            return try check(request, app: file.app, version: version)
        }
    }

    /// A target the catalog's prepared paths (the fast path in `admit`) did not have: one
    /// committed through another instance a moment ago is caught up on before the 404.
    /// `conditional`: a `….main.conditional.js` target (a patch with delivery conditions).
    func target(_ request: HTTPRequest, _ p: PathParameters, conditional: Bool) throws(HTTPError) -> HTTPResponse {
        if let file = p.file { return try answer(request, file) }
        let app = try appCatalog(p["app"])
        let version = try appVersion(p["appVersion"])
        let number = try PatchService.patchNumber(p["patch"])
        let channel = try p.values["channel"].map { raw throws(HTTPError) in try PatchService.channel(raw) } ?? .production
        // Production targets have no channel component (PatchTargetInfo): one URL per bundle.
        if p.values["channel"] != nil, channel == .production { throw .notFound("no such target (production targets have no channel in their path)") }
        let file = conditional ? PatchTargetInfo.conditionalFileName : "main.js"
        let path = PatchTargetInfo.path(appVersion: version.rawValue, channel: channel, patch: number, conditional: conditional)
        let name = String(path.dropLast(file.count)) + "\(p["hash"]).\(file)"
        if let target = app.targets[name] { return try answer(request, PublishedFile(app: app, kind: .target(target))) }
        if app.mayBeNewer(patch: number, of: version) {
            catchUp(missedAt: IPRateLimiter.monotonicTime())
            let now = try appCatalog(p["app"])
            if let target = now.targets[name] { return try answer(request, PublishedFile(app: now, kind: .target(target))) }
        }
        throw .notFound("no such target (revoked, or never published)")
    }

    // MARK: The simple check

    func check(_ request: HTTPRequest, _ p: PathParameters) throws(HTTPError) -> HTTPResponse {
        if let file = p.file { return try answer(request, file) }
        let app = try appCatalog(p["app"])
        return try answer(request, PublishedFile(app: app, kind: .simpleCheck(version: try appVersion(p["appVersion"]).rawValue)))
    }

    /// The simple check once app and version are known (routed, or found by path in the catalog).
    func check(_ request: HTTPRequest, app: AppCatalog, version: String) throws(HTTPError) -> HTTPResponse {
        let channel = try request.query("channel").map { raw throws(HTTPError) in try PatchService.channel(raw) } ?? .production
        let device = try throttleDevice(request, catalog: app, scope: (version, channel))
        let tags = EntityTags(request)
        guard let entry = app.patch(for: version, channel: channel, deviceID: device,
                                    osVersion: request.header(.osVersion), etags: tags) else {
            return PatchService.noPatch
        }
        if tags.contains(entry.etag) { return entry.notModified }
        // The receipt only when asked for: the prepared answer costs no work per request, and
        // the JSPatch-style apps the simple check serves mostly do not report.
        guard request.header(.wantReceipt) == "1", let device, let version = try? AppVersion(version),
              let receipts = receipts() else { return entry.ok }
        return entry.ok.adding(("X-Patch-Receipt", receipts.receipt(app: app.app.rawValue, appVersion: version.rawValue, channel: entry.channel.rawValue,
                                                                    patch: entry.number, deviceID: device)))
    }

    /// A bundle download: as prepared (public, immutable, the same bytes for everyone) unless
    /// it names a device the rollout and conditions give the patch to, which then gets the
    /// patch's receipt for its reports (`ReportReceipt`) and an answer no shared cache may keep
    /// for another device. Any other device ID gets the public bytes and no receipt: receipts
    /// stop being free evidence (issue 43).
    func receipted(_ target: ServedTarget, of app: AppName, _ request: HTTPRequest) throws(HTTPError) -> HTTPResponse {
        guard let device = try deviceID(request), target.delivers(to: device, osVersion: request.header(.osVersion), app: app),
              let receipts = receipts() else { return target.response }
        let key = target.key
        let receipt = receipts.receipt(app: app.rawValue, appVersion: key.appVersion.rawValue, channel: key.channel.rawValue, patch: key.patch, deviceID: device)
        let headers = target.response.headers.filter { $0.0 != "Cache-Control" } + [
            ("Cache-Control", "private, max-age=31536000, immutable"), ("Vary", "X-Device-ID"), ("X-Patch-Receipt", receipt),
        ]
        return HTTPResponse(status: target.response.status, headers: headers, body: target.response.body)
    }

    /// 204: nothing is active for this version; the app must drop any cached patch.
    static let noPatch = HTTPResponse(status: 204, headers: [("Cache-Control", "private, no-cache"), checkVary], prepared: true)

    /// The check's answer depends on who asks: the device (rollout, allow-lists) and its OS (ranges).
    static let checkVary = ("Vary", "X-Device-ID, X-OS-Version")

    // MARK: Audit listing

    func list(_ request: HTTPRequest, _ p: PathParameters) throws(HTTPError) -> HTTPResponse {
        let app = try appCatalog(p["app"]).app
        // `active=true`: served now (delivery live), as `patchctl list --active` means it.
        let activeOnly = try PatchService.flag(request, "active")
        let patches = try read { registry throws(RegistryError) in
            try registry.listing(activeOnly ? try registry.servedPatches(app: app) : try registry.patches(app: app, appVersion: nil, activeOnly: false))
        }
        return .json(.array(patches))
    }

    func audit(_ request: HTTPRequest, _ p: PathParameters) throws(HTTPError) -> HTTPResponse {
        var app: AppName?
        if let raw = request.query("app") { app = try appCatalog(raw).app }
        let token = try caller(p)
        // A token scoped to one app sees only that app's events.
        if app == nil { app = token.app }
        guard token.allows(.auditor, app: app) else {
            throw .forbidden(token, needs: .auditor, app: app, for: "reading the audit log of \(app.map(\.rawValue) ?? "every app")")
        }
        let verify = try PatchService.flag(request, "verify")
        let after = try PatchService.integer(request, "after", in: 0...Int64.max, default: 0)
        // `before` pages backwards, newest first (what the console shows); `next` is then the
        // seq to pass as the next `before`, and an `after` with it bounds the walk from below.
        let before: Int64? = if request.query("before") != nil {
            try PatchService.integer(request, "before", in: 1...Int64.max, default: Int64.max)
        } else { nil }
        let limit = Int(try PatchService.integer(request, "limit", in: 1...Int64(PatchService.auditPageLimit), default: Int64(PatchService.auditPageLimit)))
        let filter = app
        // One more than the page: whether it exists decides `next`, with no count query.
        var (events, chain) = try read { registry throws(RegistryError) in
            let page = if let before { try registry.auditEvents(app: filter, before: before, after: after, limit: limit + 1) }
                       else { try registry.auditEvents(app: filter, after: after, limit: limit + 1) }
            return (page, verify ? try registry.verifyAudit() : nil)
        }
        let more = events.count > limit
        if more { events.removeLast() }
        var out: [String: JSON] = ["events": .array(events.map(\.json))]
        // A page that is not the last says where the next one starts (in either direction, the
        // last seq it holds), so a listing that stops early can never pass for the whole log.
        if more, let last = events.last { out["next"] = .int(last.seq) }
        // The chain spans every app: a token scoped to one app learns only whether it is intact.
        if let chain { out["chain"] = chain.json(global: token.app == nil) }
        return .json(.object(out))
    }

    // MARK: Operations

    /// 200 while the registry can be read; 503 (JSON, Retry-After) when it cannot, so a load
    /// balancer takes this instance out instead of sending devices to a server that 404s;
    /// 200 "degraded" with `reasons` when a timestamp expires within `--expiry-margin`.
    /// While a change holds the registry (a publish, a re-signing pass), a successful read
    /// from the last 10 s answers instead: the probe must not queue behind the change (under a
    /// flood of 10 MB publishes it waited 300–440 ms), and the change is itself a reader.
    func health() throws(HTTPError) -> HTTPResponse {
        let now = IPRateLimiter.monotonicTime()
        let checked: Result<Int, RegistryError>
        if let reload = lastReload.withLock({ $0 }), now - reload.at < 3 {
            checked = reload.result
        } else if let result = registry.withLockIfAvailable({ registry in Result { () throws(RegistryError) in try registry.checkReadable() } }) {
            checked = result
        } else if let recent = lastHealthyRead.withLock({ $0 }), now - recent.at < 10 {
            checked = .success(recent.apps)
        } else {
            checked = registry.withLock { registry in Result { () throws(RegistryError) in try registry.checkReadable() } }
        }
        switch checked {
        case .success(let apps):
            lastHealthyRead.withLock { $0 = (now, apps) }
            // A timestamp about to expire is the same on every instance of the registry: 200,
            // like an unreachable shared database, so haproxy keeps serving; the reasons say why.
            let expiring = upkeepStatus.expiring()
            guard expiring.isEmpty else {
                return .json(["status": "degraded", "apps": .int(Int64(apps)), "reasons": .array(expiring.map { .string($0) })],
                             headers: [("Cache-Control", "no-store")])
            }
            return .json(["status": "ok", "apps": .int(Int64(apps))], headers: [("Cache-Control", "no-store")])
        case .failure(.storage(let error)) where error.kind == .unavailable && changeFeed != nil:
            // A shared (PostgreSQL) database that is down is down for every instance alike:
            // failing the check would take them all out of haproxy and stop devices getting
            // what is prepared in memory. Writes answer 503 meanwhile; re-signing waits.
            lastHealthyRead.withLock { $0 = nil }
            logOnce("health check: the registry's database is unreachable; serving what is prepared: \(error)")
            return .json(["status": "degraded", "database": "unreachable"], headers: [("Cache-Control", "no-store")])
        case .failure(.storage(let error)) where error.kind == .replaced:
            lastHealthyRead.withLock { $0 = nil }
            logOnce("health check: \(RegistryError.storage(error))")
            throw HTTPError(503, "unavailable", "the registry file was deleted or replaced under this server", headers: [("Retry-After", "5")])
        case .failure(let error):
            lastHealthyRead.withLock { $0 = nil }
            logOnce("health check: the registry cannot be read: \(error)")
            throw HTTPError(503, "unavailable", "the registry cannot be read", headers: [("Retry-After", "5")])
        }
    }

    func renderMetrics() -> HTTPResponse {
        .text(metrics.render(gauges: [
            ("hotpatch_tracked_devices", "Devices in the minimum-interval table.", devices.count),
            ("hotpatch_apps", "Apps prepared for serving (built on their first request).", catalog.appCount),
            ("hotpatch_push_queue_registrations", "Device-token registrations waiting to be written.", pushRegistrations.queuedUnits),
            ("hotpatch_push_recent_registrations", "Device tokens remembered as written recently (a refresh of one is answered without the registry).", recentRegistrations.count),
        ]) + upkeepStatus.render() + webhookStatus.render() + reportGauges(), contentType: "text/plain; version=0.0.4; charset=utf-8")
    }
}
