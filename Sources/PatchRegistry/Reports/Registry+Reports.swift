import Foundation
import PatchCore

extension Registry {
    /// How a device is kept in the registry: the first 128 bits of the SHA-256 of its ID (32
    /// hex characters), never the ID. 128 bits keep a billion devices apart with room to
    /// spare, in half the space of the whole digest.
    public static func deviceHash(_ deviceID: String) -> String { String(Digest.sha256Hex(Array(deviceID.utf8)).prefix(32)) }

    /// The hour of the server's clock an event is counted in: `YYYY-MM-DDTHH:00:00Z`.
    public static func hourBucket(_ date: Date) -> String { String(TUFTime.format(date).prefix(13)) + ":00:00Z" }

    /// Counts one device's report in one transaction (see `ingestReports(_:)`).
    public func ingestReports(app: AppName, deviceID: String, events: [ReportEvent], origin: ReportOrigin,
                              rules: ReportRules = ReportRules(), now: Date = Date()) throws(RegistryError) -> ReportOutcome {
        try ingestReports([DeviceReport(app: app, deviceID: deviceID, events: events, origin: origin)], rules: rules, now: now)[0]
    }

    /// Counts the reports of many devices in one transaction, whatever their number: patchd's
    /// report counter takes every report queued while one group commits, so a flood costs one
    /// commit (one fsync) per group, not per request. Per report, under `rules`
    /// (`ReportRules`): a device not seen this month must be admitted by the hour's device
    /// budgets of its network, block and app, or the whole report is dropped; then per event,
    /// one naming a patch (version, channel, number) the registry does not have, or a version
    /// and channel without patches, is dropped; one that needs a receipt and has none valid
    /// for this device is dropped; one past the hour's event budget of its network or app is
    /// dropped; an event id this device sent before is a duplicate; the rest count once each
    /// in the hourly series and once per distinct device (and block) in the figures. One
    /// outcome per report, in order.
    public func ingestReports(_ reports: [DeviceReport], rules: ReportRules = ReportRules(), now: Date = Date()) throws(RegistryError) -> [ReportOutcome] {
        let hour = Registry.hourBucket(now)
        let receipts = try reportReceipts()
        return try write { () throws -> [ReportOutcome] in
            var known: [AppName: Set<PatchKey>?] = [:]
            let seen = try db.prepare("INSERT INTO report_events(app, event_key, received_hour) VALUES (?,?,?) ON CONFLICT DO NOTHING")
            let hourly = try db.prepare("""
                INSERT INTO report_hourly(app, app_version, channel, patch, hour, event, events) VALUES (?,?,?,?,?,?,1)
                ON CONFLICT(app, app_version, channel, patch, hour, event) DO UPDATE SET events = report_hourly.events + 1
                """)
            let distinct = try db.prepare("INSERT INTO report_devices(app, app_version, channel, patch, event, reason, device) VALUES (?,?,?,?,?,?,?) ON CONFLICT DO NOTHING")
            let count = try db.prepare("""
                INSERT INTO report_counts(app, app_version, channel, patch, event, reason, devices) VALUES (?,?,?,?,?,?,1)
                ON CONFLICT(app, app_version, channel, patch, event, reason) DO UPDATE SET devices = report_counts.devices + 1
                """)
            let block = try db.prepare("INSERT INTO report_blocks(app, app_version, channel, patch, event, block) VALUES (?,?,?,?,?,?) ON CONFLICT DO NOTHING")
            var budget = ReportBudget(db: db, hour: hour)
            var outcomes: [ReportOutcome] = []
            for report in reports {
                let app = report.app.rawValue
                let device = Registry.deviceHash(report.deviceID)
                if known[report.app] == nil { known[report.app] = .some(try reportablePatchesIfApp(report.app)) }
                var outcome = ReportOutcome()
                guard let patches = known[report.app] ?? nil else {
                    outcome.drop(.invalid, report.events.count)
                    outcomes.append(outcome)
                    continue
                }
                guard try admitSender(app: app, device: device, origin: report.origin, rules: rules, budget: &budget) else {
                    outcome.drop(.devices, report.events.count)
                    outcomes.append(outcome)
                    continue
                }
                let versions = Set(patches.map { "\($0.appVersion)|\($0.channel)" })
                for event in report.events {
                    let isKnown = event.patch.map { patches.contains(PatchKey(appVersion: event.appVersion, channel: event.channel, patch: $0)) }
                        ?? versions.contains("\(event.appVersion)|\(event.channel)")
                    guard isKnown else { outcome.drop(.invalid); continue }
                    if event.type.needsReceipt {
                        guard let patch = event.patch, receipts.verify(event.receipt, app: app, appVersion: event.appVersion.rawValue,
                                                                       channel: event.channel.rawValue, patch: patch, deviceID: report.deviceID) else {
                            outcome.drop(.receipt)
                            continue
                        }
                    }
                    guard try budget.take(app: app, kind: "events", scopes: [("*", rules.eventsPerApp), (report.origin.network, rules.eventsPerNetwork)]) else {
                        outcome.drop(.events)
                        continue
                    }
                    try seen.run([.text(app), .text(Registry.eventKey(device: device, id: event.id)), .text(hour)])
                    guard db.changes == 1 else { outcome.duplicates += 1; continue }
                    outcome.accepted += 1
                    let group: [SQLValue] = [.text(app), .text(event.appVersion.rawValue), .text(event.channel.rawValue), .int(Int64(event.patch ?? 0))]
                    try hourly.run(group + [.text(hour), .text(event.type.rawValue)])
                    // Reason '' counts the device once for the event whatever its reasons; a
                    // refusal also counts under its reason.
                    for reason in [""] + (event.reason.map { [$0] } ?? []) {
                        try distinct.run(group + [.text(event.type.rawValue), .text(reason), .text(device)])
                        guard db.changes == 1 else { continue }
                        try count.run(group + [.text(event.type.rawValue), .text(reason)])
                        guard reason.isEmpty else { continue }
                        try block.run(group + [.text(event.type.rawValue), .text(report.origin.block)])
                        if event.type == .installed || event.type == .rolledBack, let patch = event.patch {
                            outcome.touched.insert(PatchKey(appVersion: event.appVersion, channel: event.channel, patch: patch))
                        }
                    }
                }
                outcomes.append(outcome)
            }
            try budget.flush()
            return outcomes
        }
    }

    /// Whether `device` may report this hour: one that reported in the last 30 days may (its
    /// row is refreshed); a new one takes a place of the hour's device budgets of its app,
    /// network and block, all or none.
    private func admitSender(app: String, device: String, origin: ReportOrigin, rules: ReportRules, budget: inout ReportBudget) throws -> Bool {
        try db.run("UPDATE report_senders SET last_hour = ? WHERE app = ? AND device = ?", [.text(budget.hour), .text(app), .text(device)])
        if db.changes == 1 { return true }
        let scopes = [("*", rules.devicesPerApp), (origin.network, rules.devicesPerNetwork), (origin.block, rules.devicesPerBlock)]
        guard try budget.take(app: app, kind: "devices", scopes: scopes) else { return false }
        try db.run("INSERT INTO report_senders(app, device, last_hour) VALUES (?,?,?)", [.text(app), .text(device), .text(budget.hour)])
        return true
    }

    /// What dedupe keeps of (device, event id): 128 bits of SHA-256 over both, a fixed 32
    /// characters per event however long the id, and nothing that names the device.
    static func eventKey(device: String, id: String) -> String {
        String(Digest.sha256Hex(Array("\(device)\u{0}\(id)".utf8)).prefix(32))
    }

    /// Forgets the (device, event id) pairs received before `cutoff`: a device resends only
    /// what is still queued on it, at its next sync, so a week of memory is plenty, and a
    /// flood of made-up ids cannot grow the table without end. Counts are not touched.
    /// With it go the senders that have not reported for 30 days (they are admitted again,
    /// under the budgets, if they come back) and the budgets of hours before the last two.
    @discardableResult
    public func pruneReportEvents(before cutoff: Date, now: Date = Date()) throws(RegistryError) -> Int {
        try write { () throws -> Int in
            try db.run("DELETE FROM report_events WHERE received_hour < ?", [.text(Registry.hourBucket(cutoff))])
            let events = db.changes
            try db.run("DELETE FROM report_senders WHERE last_hour < ?", [.text(Registry.hourBucket(now.addingTimeInterval(-30 * 86_400)))])
            try db.run("DELETE FROM report_budget WHERE hour < ?", [.text(Registry.hourBucket(now.addingTimeInterval(-3_600)))])
            return events
        }
    }

    /// The app's reportable patches, or nil when the registry has no such app (its reports
    /// are dropped; the other reports of the group still count).
    private func reportablePatchesIfApp(_ app: AppName) throws -> Set<PatchKey>? {
        do { _ = try self.app(app) } catch .notFound { return nil }
        return try reportablePatches(app: app)
    }

    /// Every patch of the app (active or revoked: devices still roll revoked ones back), as
    /// reports name them. One light query per batch, inside its transaction.
    func reportablePatches(app: AppName) throws(StorageError) -> Set<PatchKey> {
        let rows = try db.query("""
            SELECT p.app_version, COALESCE(r.channel, 'production'), p.number FROM patches p
            LEFT JOIN patch_releases r ON r.app = p.app AND r.app_version = p.app_version AND r.number = p.number WHERE p.app = ?
            """, [.text(app.rawValue)]) { s -> PatchKey? in
            guard let version = try? AppVersion(s.text(0)), let channel = try? ChannelName(s.text(1)) else { return nil }
            return PatchKey(appVersion: version, channel: channel, patch: Int(s.int(2)))
        }
        return Set(rows.compactMap { $0 })
    }

    /// Distinct devices per event (and per reason) of each patch of `app` (nil: every app),
    /// only patches still active with `activeOnly` (what /metrics exports).
    public func reportFigures(app: AppName?, activeOnly: Bool = false) throws(RegistryError) -> [PatchFigures] {
        var sql = """
            SELECT c.app, c.app_version, c.channel, c.patch, c.event, c.reason, c.devices FROM report_counts c
            """
        if activeOnly { sql += " JOIN patches p ON p.app = c.app AND p.app_version = c.app_version AND p.number = c.patch AND p.state = 'active'" }
        var values: [SQLValue] = []
        if let app { sql += " WHERE c.app = ?"; values.append(.text(app.rawValue)) }
        let rows = try read { () throws(StorageError) in
            try db.query(sql, values) { s in (s.text(0), s.text(1), s.text(2), Int(s.int(3)), s.text(4), s.text(5), Int(s.int(6))) }
        }
        var figures: [PatchFigures.Key: PatchFigures] = [:]
        for (rawApp, rawVersion, rawChannel, patch, rawEvent, reason, devices) in rows {
            guard let app = try? AppName(rawApp), let version = try? AppVersion(rawVersion), let channel = try? ChannelName(rawChannel),
                  let event = ReportEventType(rawValue: rawEvent) else { throw .internalError("a corrupt row in report_counts") }
            let key = PatchFigures.Key(app: app, appVersion: version, channel: channel, patch: patch == 0 ? nil : patch)
            if reason.isEmpty { figures[key, default: PatchFigures(key: key)].devices[event] = devices }
            else { figures[key, default: PatchFigures(key: key)].reasons[event, default: [:]][reason] = devices }
        }
        return figures.values.sorted { $0.key < $1.key }
    }

    /// Events per type per hour for the last `hours` hours (server time) of `app`.
    public func reportHourly(app: AppName, hours: Int, now: Date = Date()) throws(RegistryError) -> [HourlyFigures] {
        let since = Registry.hourBucket(now.addingTimeInterval(-Double(max(hours - 1, 0)) * 3600))
        let rows = try read { () throws(StorageError) in
            try db.query("SELECT hour, app_version, channel, patch, event, events FROM report_hourly WHERE app = ? AND hour >= ?",
                         [.text(app.rawValue), .text(since)]) { s in (s.text(0), s.text(1), s.text(2), Int(s.int(3)), s.text(4), Int(s.int(5))) }
        }
        var series: [HourlyFigures.Key: HourlyFigures] = [:]
        for (hour, rawVersion, rawChannel, patch, rawEvent, events) in rows {
            guard let version = try? AppVersion(rawVersion), let channel = try? ChannelName(rawChannel),
                  let event = ReportEventType(rawValue: rawEvent) else { throw .internalError("a corrupt row in report_hourly") }
            let key = HourlyFigures.Key(hour: hour, appVersion: version, channel: channel, patch: patch == 0 ? nil : patch)
            series[key, default: HourlyFigures(key: key)].events[event] = events
        }
        return series.values.sorted { $0.key < $1.key }
    }

    /// What `GET /v1/apps/{app}/stats` answers: the figures, the hourly series, the guards,
    /// what they did, and the staged rollouts still under way.
    public func reportStats(app: AppName, hours: Int = 48, now: Date = Date()) throws(RegistryError) -> ReportStats {
        _ = try self.app(app)
        return ReportStats(app: app, patches: try reportFigures(app: app), hourly: try reportHourly(app: app, hours: hours, now: now),
                           guards: try guards(app: app), trips: try guardTrips(app: app), schedules: try schedules(app: app))
    }
}
