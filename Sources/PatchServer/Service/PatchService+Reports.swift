import Foundation
import PatchCore
import PatchRegistry

extension PatchService {
    /// The reports route's body, at most (docs/PROTOCOL.md, "Device reports").
    static let reportsBodyLimit = 64 << 10
    /// Events per report, at most.
    static let reportEventLimit = 100
    static let guardBodyLimit = 4096

    /// `POST /v1/apps/{app}/reports`: no token, so bounded like the check path: the per-IP
    /// bucket and the 64 KiB cap applied from the head (`admit`), events naming no patch of
    /// the registry dropped, one transaction per request, counted per distinct device. Then
    /// the guards of the patches whose figures moved, and nothing else, are evaluated.
    func reports(_ request: HTTPRequest, _ p: PathParameters) throws(HTTPError) -> HTTPResponse {
        let app = try appCatalog(p["app"]).app
        guard let device = try deviceID(request) else { throw .badRequest("X-Device-ID is required: reports count per device") }
        let body: JSON
        do { body = try JSONParser.parse(request.body, maxLength: PatchService.reportsBodyLimit) } catch {
            throw .badRequest("body must be JSON like {\"events\": [...]}: \(error)")
        }
        guard let raw = body["events"]?.arrayValue, (1...PatchService.reportEventLimit).contains(raw.count) else {
            throw .badRequest("body must have an \"events\" array of 1 to \(PatchService.reportEventLimit) events")
        }
        let events = raw.compactMap(ReportEvent.init(json:))
        let ticket = reportQueue.enqueue(DeviceReport(app: app, deviceID: device, events: events))
        let result = registry.withLock { registry in
            // Counted by an earlier group, or count groups (oldest first) until this one is.
            while true {
                if let done = reportQueue.take(ticket) { return done }
                guard countQueuedReports(registry) else { return .failure(.internalError("a queued report was not counted")) }
            }
        }
        var outcome: ReportOutcome
        switch result {
        case .success(let counted): outcome = counted
        case .failure(let error):
            if !error.isCallerError { logOnce("cannot count device reports: \(error)") }
            throw error.httpError
        }
        outcome.dropped += raw.count - events.count
        return .json(outcome.json, status: 202)
    }

    /// Counts every queued report in one transaction (under the registry lock), then runs the
    /// guards of the patches the group moved, app by app.
    /// False when nothing was queued.
    private func countQueuedReports(_ registry: Registry) -> Bool {
        let group = reportQueue.drain()
        guard !group.isEmpty else { return false }
        let results: [Result<ReportOutcome, RegistryError>]
        do { results = try registry.ingestReports(group.map(\.report)).map { .success($0) } } catch {
            results = group.map { _ in .failure(error) }
        }
        reportQueue.finish(group.map(\.ticket), results)
        var touched: [AppName: Set<PatchKey>] = [:]
        for (entry, result) in zip(group, results) {
            if case .success(let outcome) = result { touched[entry.report.app, default: []].formUnion(outcome.touched) }
        }
        for (app, patches) in touched.sorted(by: { $0.key < $1.key }) { enforceGuards(registry, app: app, patches: patches) }
        return true
    }

    /// The upkeep loop's part: every guard against every active patch of its channel (a
    /// guard set after the figures passed it acts within a minute), the staged rollout steps
    /// that are due (Registry.advanceSchedules; a schedule needs a guard), then forgetting
    /// (device, event id) pairs older than a week (Registry.pruneReportEvents).
    public func reportUpkeep(now: Date = Date()) {
        registry.withLock { registry in
            guard registry.holdsUpkeepLease() else { return }
            for app in (try? registry.apps()) ?? [] {
                guard let guards = try? registry.guards(app: app.name), !guards.isEmpty else { continue }
                enforceGuards(registry, app: app.name, patches: nil)
                do {
                    let steps = try registry.advanceSchedules(app: app.name, now: now)
                    for step in steps { logOnce("staged rollout of \(app.name): \(step.text) at \(TUFTime.format(now))") }
                    if !steps.isEmpty { report(try catalog.build(app.name, from: registry)) }
                } catch { logOnce("staged rollout of \(app.name) cannot advance: \(error)") }
            }
            do { try registry.pruneReportEvents(before: now.addingTimeInterval(-7 * 86_400)) } catch { logOnce("cannot prune report events: \(error)") }
        }
    }

    /// Halts or revokes what the app's guards say must stop, and serves the result at once.
    /// A guard that cannot act (its targets key is offline, the disk is full) is logged; the
    /// report that triggered it still counts.
    /// `patches` nil: every active patch of a guarded channel.
    private func enforceGuards(_ registry: Registry, app: AppName, patches: Set<PatchKey>?) {
        do {
            let trips = if let patches { try registry.enforceGuards(app: app, patches: patches) } else { try registry.enforceGuards(app: app) }
            guard !trips.isEmpty else { return }
            // A halt takes nothing from the devices that run the patch: only a revoke is pushed.
            pushGuardTrips(registry, app: app, trips: trips.filter { $0.action == .revoke })
            for trip in trips {
                logOnce("guard \(trip.action.rawValue): \(app) \(trip.key.appVersion) \(trip.key.channel) patch \(trip.key.patch): \(trip.rolledBack) of \(trip.installed) installed devices rolled back, lower bound \(WilsonInterval.percentText(ppm: trip.lowerPPM)) > \(WilsonInterval.percentText(ppm: trip.thresholdPPM))")
            }
            report(try catalog.build(app, from: registry))
        } catch {
            logOnce("guard of \(app) cannot act: \(error)")
        }
    }

    /// `GET /v1/apps/{app}/stats?hours=N`: the figures, the hourly series of the last N hours
    /// (default 48, at most 720), the guards and what they did.
    func stats(_ request: HTTPRequest, _ p: PathParameters) throws(HTTPError) -> HTTPResponse {
        let app = try appCatalog(p["app"]).app
        let hours = Int(try PatchService.integer(request, "hours", in: 1...720, default: 48))
        let stats = try read { registry throws(RegistryError) in try registry.reportStats(app: app, hours: hours) }
        return .json(stats.json)
    }

    /// `PUT /v1/apps/{app}/guard`: `{"channel": "production", "maxRollbackRatePpm": 20000,
    /// "minDevices": 50, "action": "halt"}` (channel and action optional).
    func setGuard(_ request: HTTPRequest, _ p: PathParameters) throws(HTTPError) -> HTTPResponse {
        let app = try appCatalog(p["app"]).app
        let token = try caller(p)
        let body: JSON
        do { body = try JSONParser.parse(request.body, maxLength: PatchService.guardBodyLimit) } catch { throw .badRequest("body must be JSON: \(error)") }
        let channel = try body["channel"].map { raw throws(HTTPError) in
            guard let text = raw.stringValue else { throw .badRequest("channel must be a string") }
            return try PatchService.channel(text)
        } ?? .production
        guard let ppm = body["maxRollbackRatePpm"]?.intValue, let minDevices = body["minDevices"]?.intValue else {
            throw .badRequest("body needs integer maxRollbackRatePpm (2 % = 20000) and minDevices")
        }
        let rawAction = body["action"]?.stringValue ?? GuardAction.halt.rawValue
        guard let action = GuardAction(rawValue: rawAction) else { throw .badRequest("action must be halt or revoke") }
        let set = try change(app: app, by: token) { registry throws(RegistryError) in
            (try registry.setGuard(app: app, channel: channel, maxRollbackPPM: Int(ppm), minDevices: Int(minDevices), action: action, actor: token.actor),
             try registry.guards(app: app).first { $0.channel == channel })
        }
        var out = set.1?.json.objectValue ?? [:]
        out["changed"] = .bool(set.0 != nil)
        return .json(.object(out))
    }

    /// `PUT /v1/apps/{app}/versions/{version}/patches/{patch}/schedule`: `{"steps": [25, 50,
    /// 100], "everySeconds": 3600}` (Registry.setSchedule).
    func setSchedule(_ request: HTTPRequest, _ p: PathParameters) throws(HTTPError) -> HTTPResponse {
        let app = try appCatalog(p["app"]).app
        let token = try caller(p)
        let version = try appVersion(p["version"])
        let number = try PatchService.patchNumber(p["patch"])
        let body: JSON
        do { body = try JSONParser.parse(request.body, maxLength: PatchService.guardBodyLimit) } catch { throw .badRequest("body must be JSON: \(error)") }
        guard let steps = body["steps"]?.arrayValue?.compactMap({ $0.intValue }).map({ Int($0) }), steps.count == body["steps"]?.arrayValue?.count,
              steps.count <= 100, let every = body["everySeconds"]?.intValue else {
            throw .badRequest("body must be JSON like {\"steps\": [25, 50, 100], \"everySeconds\": 3600}")
        }
        // Steps are taken in increasing order whatever order they came in (duplicates ignored).
        let ordered = Set(steps).sorted()
        let schedule = try change(app: app, by: token) { registry throws(RegistryError) in
            try registry.setSchedule(app: app, appVersion: version, number: number, steps: ordered, everySeconds: Int(every), actor: token.actor)
        }
        return .json(schedule.json)
    }

    /// `DELETE /v1/apps/{app}/guard?channel=C`.
    func removeGuard(_ request: HTTPRequest, _ p: PathParameters) throws(HTTPError) -> HTTPResponse {
        let app = try appCatalog(p["app"]).app
        let token = try caller(p)
        let channel = try request.query("channel").map { raw throws(HTTPError) in try PatchService.channel(raw) } ?? .production
        let removed = try change(app: app, by: token) { registry throws(RegistryError) in try registry.removeGuard(app: app, channel: channel, actor: token.actor) }
        return .json(["channel": .string(channel.rawValue), "changed": .bool(removed)])
    }

    /// `hotpatch_patch_devices{app,version,channel,patch,event}`: distinct devices per event of
    /// every active patch. Revoked patches are left out, so the series stay as few as the
    /// patches being served (a handful per app version), however long the registry's history.
    func reportGauges() -> String {
        guard let figures = try? registry.withLock({ registry throws(RegistryError) in try registry.reportFigures(app: nil, activeOnly: true) }) else { return "" }
        var out = "# HELP hotpatch_patch_devices Distinct devices that reported each event of an active patch.\n# TYPE hotpatch_patch_devices gauge\n"
        for figure in figures {
            guard let patch = figure.key.patch else { continue }
            for event in ReportEventType.allCases {
                out += "hotpatch_patch_devices{app=\"\(figure.key.app)\",version=\"\(figure.key.appVersion)\",channel=\"\(figure.key.channel)\",patch=\"\(patch)\",event=\"\(event.rawValue)\"} \(figure.count(event))\n"
            }
        }
        return out
    }
}
