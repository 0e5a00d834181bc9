import Foundation
import HTTPTransport
import PatchCore
import PatchRegistry

extension PatchService {
    /// The reports route's body, at most (docs/PROTOCOL.md, "Device reports").
    static let reportsBodyLimit = 64 << 10
    /// Events per report, at most.
    static let reportEventLimit = 100

    /// `POST /v1/apps/{app}/reports`: no token, so bounded like the check path: the per-IP
    /// bucket and the 64 KiB cap applied from the head (`admit`, with `reportQueueHasRoom`).
    /// Nothing of the body is parsed on this thread: it goes to the report parser
    /// (`reportIntake`, `parseReports`), which answers 202 `{"queued": N}` once the events are
    /// in the report queue, 400 for a malformed body, 503 with Retry-After when either queue
    /// is full. Parsing on the I/O threads held the check path up behind it (issue 43, row
    /// 11c: stretches of a millisecond and more on an I/O thread, one report after another).
    /// What counts, and what a guard may act on, is decided by `countReports` under
    /// `ReportRules`, from the sender's network and block.
    func reports(_ request: HTTPRequest, _ p: PathParameters) throws(HTTPError) -> HTTPReply {
        let app = try appCatalog(p["app"]).app
        guard let device = try deviceID(request) else { throw .badRequest("X-Device-ID is required: reports count per device") }
        let client = self.client(of: request)
        let promise = HTTPPromise()
        let raw = RawReport(app: app, deviceID: device, body: request.body, origin: ReportOrigin(network: client.network, block: client.block),
                            promise: promise)
        guard reportIntake.enqueue(raw, writer: { [self] in parseReports() }) else { throw reportQueueFull() }
        return .later(promise)
    }

    /// The report parser (the intake queue's thread, no lock): each body parsed, checked and
    /// its events queued for the counter, and its request answered.
    func parseReports() {
        reportIntake.drain(paced: false) { take in
            guard let group = take() else { return false }
            for raw in group {
                let answer: HTTPResponse
                do throws(HTTPError) { answer = try queue(raw) } catch { answer = error.response }
                raw.promise.keep(answer)
            }
            return true
        }
    }

    /// One report's events into the report queue: 202 `{"queued": N}`.
    private func queue(_ raw: RawReport) throws(HTTPError) -> HTTPResponse {
        let body: JSON
        do { body = try JSONParser.parse(raw.body, maxLength: PatchService.reportsBodyLimit) } catch {
            throw .badRequest("body must be JSON like {\"events\": [...]}: \(error)")
        }
        guard let items = body["events"]?.arrayValue, (1...PatchService.reportEventLimit).contains(items.count) else {
            throw .badRequest("body must have an \"events\" array of 1 to \(PatchService.reportEventLimit) events")
        }
        let events = items.compactMap(ReportEvent.init(json:))
        reportTally.dropped[.invalid]?.add(items.count - events.count)
        guard !events.isEmpty else { return .json(["queued": 0], status: 202) }
        let report = DeviceReport(app: raw.app, deviceID: raw.deviceID, events: events, origin: raw.origin)
        guard reportQueue.enqueue(report, writer: { [self] in countReports() }) else { throw reportQueueFull() }
        return .json(["queued": .int(Int64(events.count))], status: 202)
    }

    /// From the head: while the queue has no room for a whole report (`reportEventLimit`
    /// events), or the parser's intake none for the body declared, a report is refused before
    /// its body is read. Under a flood that keeps the queue full, the I/O threads no longer
    /// read 64 KiB only to refuse it (half of the reports of `bench/reports_flood.py` were
    /// refused once read and parsed).
    func reportQueueHasRoom(_ request: HTTPRequest) throws(HTTPError) {
        let room = min(PatchService.reportEventLimit, reportQueue.capacity)
        guard reportQueue.capacity - reportQueue.queuedUnits >= room else { throw reportQueueFull() }
        let declared = switch request.declaredBody {
        case .length(let n): n
        case .chunked: PatchService.reportsBodyLimit
        case .none: 0
        }
        guard reportIntake.capacity - reportIntake.queuedUnits >= declared else { throw reportQueueFull() }
    }

    private func reportQueueFull() -> HTTPError {
        reportTally.refused.add(1)
        return HTTPError(503, "busy", "the report queue is full; send these events again later", headers: [("Retry-After", "30")])
    }

    /// The report counter (the queue's writer thread): counts the queued reports group by
    /// group, each in one transaction under the registry lock, then runs the guards of the
    /// patches each group moved, until the queue is empty (`WriteQueue.drain`).
    func countReports() {
        let rules = configuration.reportRules
        reportQueue.drain { take in
            registry.withLock { registry -> Bool in
                guard let group = take() else { return false }
                let outcomes: [ReportOutcome]
                do { outcomes = try registry.ingestReports(group, rules: rules) } catch {
                    reportTally.failedEvents.add(group.reduce(0) { $0 + $1.events.count })
                    logOnce("cannot count device reports: \(error)")
                    return true
                }
                var touched: [AppName: Set<PatchKey>] = [:]
                for (report, outcome) in zip(group, outcomes) {
                    reportTally.add(outcome)
                    touched[report.app, default: []].formUnion(outcome.touched)
                }
                for (app, patches) in touched.sorted(by: { $0.key < $1.key }) where !patches.isEmpty {
                    enforceGuards(registry, app: app, patches: patches)
                }
                return true
            }
        }
    }

    /// Waits until every report queued so far is counted (tests). `stopping`: patchd's stop,
    /// after the last request: the queue is counted back to back.
    public func settleReports(stopping: Bool = false) {
        reportIntake.waitUntilIdle(hurry: stopping)
        reportQueue.waitUntilIdle(hurry: stopping)
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
                    let steps = try registry.advanceSchedules(app: app.name, rules: configuration.reportRules, now: now)
                    for step in steps { logOnce("staged rollout of \(app.name): \(step.text) at \(TUFTime.format(now))") }
                    if !steps.isEmpty { report(try catalog.build(app.name, from: registry)) }
                } catch { logOnce("staged rollout of \(app.name) cannot advance: \(error)") }
            }
            do { try registry.pruneReportEvents(before: now.addingTimeInterval(-7 * 86_400), now: now) } catch { logOnce("cannot prune report events: \(error)") }
        }
    }

    /// Halts what the app's guards say must stop, and serves the result at once.
    /// A guard that cannot act (its targets key is offline, the disk is full) is logged; the
    /// report that triggered it still counts.
    /// `patches` nil: every active patch of a guarded channel.
    private func enforceGuards(_ registry: Registry, app: AppName, patches: Set<PatchKey>?) {
        do {
            let rules = configuration.reportRules
            let trips = if let patches { try registry.enforceGuards(app: app, patches: patches, rules: rules) } else { try registry.enforceGuards(app: app, rules: rules) }
            guard !trips.isEmpty else { return }
            for trip in trips {
                logOnce("guard \(trip.action.rawValue): \(app) \(trip.key.appVersion) \(trip.key.channel) patch \(trip.key.patch): \(trip.rolledBack) of \(trip.installed) installed devices rolled back, lower bound \(WilsonInterval.percentText(ppm: trip.lowerPPM)) > \(WilsonInterval.percentText(ppm: trip.thresholdPPM))")
            }
            // A guard only halts, which takes nothing from the devices that run the patch:
            // nothing to wake them for (a person's rollback --notify is).
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

    /// `hotpatch_patch_devices{app,version,channel,patch,event}`: distinct devices per event of
    /// every active patch. Revoked patches are left out, so the series stay as few as the
    /// patches being served (a handful per app version), however long the registry's history.
    func reportGauges() -> String {
        guard let figures = try? registry.withLock({ registry throws(RegistryError) in try registry.reportFigures(app: nil, activeOnly: true) }) else {
            return reportTally.render(queued: reportQueue.queuedUnits)
        }
        var out = reportTally.render(queued: reportQueue.queuedUnits)
        out += "# HELP hotpatch_patch_devices Distinct devices that reported each event of an active patch.\n# TYPE hotpatch_patch_devices gauge\n"
        for figure in figures {
            guard let patch = figure.key.patch else { continue }
            for event in ReportEventType.allCases {
                out += "hotpatch_patch_devices{app=\"\(figure.key.app)\",version=\"\(figure.key.appVersion)\",channel=\"\(figure.key.channel)\",patch=\"\(patch)\",event=\"\(event.rawValue)\"} \(figure.count(event))\n"
            }
        }
        return out
    }
}

/// A report as it arrived, waiting for the parser (`PatchService.parseReports`), and the request
/// waiting for its answer.
struct RawReport: Sendable {
    let app: AppName
    let deviceID: String
    let body: [UInt8]
    let origin: ReportOrigin
    let promise: HTTPPromise
}
