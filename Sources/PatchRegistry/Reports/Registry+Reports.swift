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
    public func ingestReports(app: AppName, deviceID: String, events: [ReportEvent], now: Date = Date()) throws(RegistryError) -> ReportOutcome {
        try ingestReports([DeviceReport(app: app, deviceID: deviceID, events: events)], now: now)[0]
    }

    /// Counts the reports of many devices in one transaction, whatever their number: patchd
    /// groups the reports that arrive while one group commits, so a flood costs one commit
    /// (one fsync) per group, not per request. Per report: events naming a patch (version,
    /// channel, number) the registry does not have, or a version and channel without
    /// patches, or an app it does not have, are dropped; an event id this device sent before
    /// is a duplicate; the rest count once each in the hourly series and once per distinct
    /// device in the figures. One outcome per report, in order.
    public func ingestReports(_ reports: [DeviceReport], now: Date = Date()) throws(RegistryError) -> [ReportOutcome] {
        let hour = Registry.hourBucket(now)
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
            var outcomes: [ReportOutcome] = []
            for report in reports {
                let app = report.app.rawValue
                let device = Registry.deviceHash(report.deviceID)
                if known[report.app] == nil { known[report.app] = .some(try reportablePatchesIfApp(report.app)) }
                var outcome = ReportOutcome()
                guard let patches = known[report.app] ?? nil else {
                    outcome.dropped = report.events.count
                    outcomes.append(outcome)
                    continue
                }
                let versions = Set(patches.map { "\($0.appVersion)|\($0.channel)" })
                for event in report.events {
                    let isKnown = event.patch.map { patches.contains(PatchKey(appVersion: event.appVersion, channel: event.channel, patch: $0)) }
                        ?? versions.contains("\(event.appVersion)|\(event.channel)")
                    guard isKnown else { outcome.dropped += 1; continue }
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
                        if reason.isEmpty, event.type == .installed || event.type == .rolledBack, let patch = event.patch {
                            outcome.touched.insert(PatchKey(appVersion: event.appVersion, channel: event.channel, patch: patch))
                        }
                    }
                }
                outcomes.append(outcome)
            }
            return outcomes
        }
    }

    /// What dedupe keeps of (device, event id): 128 bits of SHA-256 over both, a fixed 32
    /// characters per event however long the id, and nothing that names the device.
    static func eventKey(device: String, id: String) -> String {
        String(Digest.sha256Hex(Array("\(device)\u{0}\(id)".utf8)).prefix(32))
    }

    /// Forgets the (device, event id) pairs received before `cutoff`: a device resends only
    /// what is still queued on it, at its next sync, so a week of memory is plenty, and a
    /// flood of made-up ids cannot grow the table without end. Counts are not touched.
    @discardableResult
    public func pruneReportEvents(before cutoff: Date) throws(RegistryError) -> Int {
        try write { () throws -> Int in
            try db.run("DELETE FROM report_events WHERE received_hour < ?", [.text(Registry.hourBucket(cutoff))])
            return db.changes
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
