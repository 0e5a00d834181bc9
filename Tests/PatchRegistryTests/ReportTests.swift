import Foundation
import PatchCore
import Testing
@testable import PatchRegistry
import HotpatchTestSupport

/// One event as a device sends it.
func event(_ id: String, _ type: ReportEventType, _ version: String = "2.3", patch: Int? = 1, channel: ChannelName = .production,
           reason: String? = nil) throws -> ReportEvent {
    ReportEvent(id: id, type: type, appVersion: try AppVersion(version), channel: channel, patch: patch, reason: reason)
}

/// The network and block of a device's own, so tests of the counting rules are not limited
/// by the per-network budgets (the budget tests give theirs).
func ownOrigin(_ deviceID: String) -> ReportOrigin {
    let h = Registry.deviceHash(deviceID)
    return ReportOrigin(network: "net-\(h.prefix(12))", block: "block-\(h.prefix(12))")
}

extension Registry {
    /// `events` with the receipt `deviceID` got with each patch (as PatchClient sends them).
    func stamped(_ events: [ReportEvent], app: AppName, deviceID: String) throws -> [ReportEvent] {
        let receipts = try reportReceipts()
        return events.map { e in
            guard e.type.needsReceipt, let patch = e.patch else { return e }
            return ReportEvent(id: e.id, type: e.type, appVersion: e.appVersion, channel: e.channel, patch: patch, reason: e.reason,
                               receipt: receipts.receipt(app: app.rawValue, appVersion: e.appVersion.rawValue, channel: e.channel.rawValue,
                                                         patch: patch, deviceID: deviceID))
        }
    }

    /// One device's report as patchd passes it on: events stamped with their receipts
    /// (`stamped: false`: as sent without), from `origin` (default: the device's own network).
    @discardableResult
    func report(app: AppName, deviceID: String, events: [ReportEvent], stamped: Bool = true, origin: ReportOrigin? = nil,
                rules: ReportRules = ReportRules(), now: Date = Date()) throws -> ReportOutcome {
        let sent = stamped ? try self.stamped(events, app: app, deviceID: deviceID) : events
        return try ingestReports(app: app, deviceID: deviceID, events: sent, origin: origin ?? ownOrigin(deviceID), rules: rules, now: now)
    }

    func deviceReport(_ app: AppName, _ deviceID: String, _ events: [ReportEvent]) throws -> DeviceReport {
        DeviceReport(app: app, deviceID: deviceID, events: try stamped(events, app: app, deviceID: deviceID), origin: ownOrigin(deviceID))
    }
}

@Suite("Device reports: counting rules")
struct ReportTests {
    @Test("one device reporting the same event many times is one device; another device makes two")
    func distinctDevices() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        try t.publish(app, "2.3", "one()")
        for i in 0..<20 { _ = try t.registry.report(app: app, deviceID: "device-a", events: [try event("a\(i)", .installed)]) }
        _ = try t.registry.report(app: app, deviceID: "device-b", events: [try event("b1", .installed), try event("b2", .confirmed)])
        let figures = try #require(try t.registry.reportFigures(app: app).first)
        #expect(figures.count(.installed) == 2)
        #expect(figures.count(.confirmed) == 1)
        #expect(figures.count(.rolledBack) == 0)
        // The hourly series counts events, not devices.
        let hourly = try t.registry.reportHourly(app: app, hours: 1)
        #expect(hourly.count == 1)
        #expect(hourly.first?.events[.installed] == 21)
    }

    @Test("a resend of the same (device, event id) counts once, also inside one batch; the same id from another device counts")
    func duplicates() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        try t.publish(app, "2.3", "one()")
        let first = try t.registry.report(app: app, deviceID: "d1", events: [try event("x", .installed), try event("x", .installed)])
        #expect(first.accepted == 1 && first.duplicates == 1 && first.droppedCount == 0)
        let again = try t.registry.report(app: app, deviceID: "d1", events: [try event("x", .installed)])
        #expect(again.accepted == 0 && again.duplicates == 1)
        let other = try t.registry.report(app: app, deviceID: "d2", events: [try event("x", .installed)])
        #expect(other.accepted == 1)
        #expect(try t.registry.reportHourly(app: app, hours: 1).first?.events[.installed] == 2)
    }

    @Test("events naming an unknown version, channel or patch are dropped and count nowhere; revoked patches still count")
    func unknownDropped() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        try t.publish(app, "2.3", "one()")
        try t.publish(app, "2.3", "two()")
        _ = try t.registry.revoke(app: app, appVersion: try AppVersion("2.3"), number: 1, actor: t.actor)
        let staging = try ChannelName("staging")
        let outcome = try t.registry.report(app: app, deviceID: "d1", events: [
            try event("1", .installed, "9.9"), try event("2", .installed, patch: 7), try event("3", .installed, channel: staging),
            try event("4", .syncFailed, "9.9", patch: nil, reason: "network"),
            try event("5", .rolledBack, patch: 1),
        ])
        #expect(outcome.droppedCount == 4 && outcome.accepted == 1)
        let figures = try t.registry.reportFigures(app: app)
        #expect(figures.map(\.key.patch) == [1])
        #expect(figures.first?.count(.rolledBack) == 1)
        // A dropped event's id was not spent: once the patch exists it counts.
        try t.publish(app, "2.3", "three()")
        #expect(try t.registry.report(app: app, deviceID: "d1", events: [try event("2", .installed, patch: 3)]).accepted == 1)
    }

    @Test("refusals count per device overall and per reason; a sync failure may name no patch")
    func reasons() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        try t.publish(app, "2.3", "one()")
        _ = try t.registry.report(app: app, deviceID: "d1", events: [
            try event("1", .refused, reason: "hashMismatch"), try event("2", .refused, reason: "signature"),
            try event("3", .syncFailed, patch: nil, reason: "network"),
        ])
        _ = try t.registry.report(app: app, deviceID: "d2", events: [try event("1", .refused, reason: "hashMismatch")])
        let figures = try t.registry.reportFigures(app: app)
        let patch = try #require(figures.first { $0.key.patch == 1 })
        #expect(patch.count(.refused) == 2, "d1 refused twice for two reasons: one device")
        #expect(patch.reasons[.refused] == ["hashMismatch": 2, "signature": 1])
        let none = try #require(figures.first { $0.key.patch == nil })
        #expect(none.count(.syncFailed) == 1 && none.reasons[.syncFailed] == ["network": 1])
    }

    @Test("devices are stored as 128 bits of the SHA-256 of their ID, never the ID; counts survive reopening the registry")
    func storedHashedAndDurable() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        try t.publish(app, "2.3", "one()")
        let id = "device-7f3a-secret-identifier"
        _ = try t.registry.report(app: app, deviceID: id, events: [try event("1", .installed)])
        let reopened = try TestBackend.registry(dataDirectory: t.root.appendingPathComponent("data"), keysDirectory: t.root.appendingPathComponent("keys"))
        #expect(try reopened.reportFigures(app: app).first?.count(.installed) == 1)
        let rows = try reopened.db.query("SELECT device FROM report_devices") { $0.text(0) }
        #expect(rows == [Registry.deviceHash(id)])
        let keys = try reopened.db.query("SELECT event_key FROM report_events") { $0.text(0) }
        #expect(keys == [Registry.eventKey(device: Registry.deviceHash(id), id: "1")] && keys[0].count == 32)
        #expect(Registry.deviceHash(id) == String(Digest.sha256Hex(Array(id.utf8)).prefix(32)))
        let stored = try TestBackend.storedBytes(dataDirectory: t.root.appendingPathComponent("data"))
        #expect(!stored.isEmpty && stored.range(of: Data(id.utf8)) == nil, "the registry holds the raw device ID")
    }

    @Test("a group of reports from several devices and apps counts in one transaction, each with its own outcome; an unknown app's are dropped")
    func groups() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        let other = try t.app("other")
        try t.publish(app, "2.3", "one()")
        try t.publish(other, "2.3", "one()")
        let outcomes = try t.registry.ingestReports([
            try t.registry.deviceReport(app, "d1", [try event("1", .installed)]),
            try t.registry.deviceReport(app, "d1", [try event("1", .installed)]),
            try t.registry.deviceReport(other, "d1", [try event("1", .installed)]),
            try t.registry.deviceReport(try AppName("gone"), "d1", [try event("1", .installed)]),
        ])
        #expect(outcomes.map(\.accepted) == [1, 0, 1, 0])
        #expect(outcomes.map(\.duplicates) == [0, 1, 0, 0])
        #expect(outcomes.map(\.droppedCount) == [0, 0, 0, 1])
    }

    @Test("pruning forgets old event ids (a resend after that counts again) and never touches the counts")
    func pruning() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        try t.publish(app, "2.3", "one()")
        let then = Date(timeIntervalSince1970: 1_800_000_000)
        _ = try t.registry.report(app: app, deviceID: "d1", events: [try event("old", .installed)], now: then)
        _ = try t.registry.report(app: app, deviceID: "d2", events: [try event("new", .installed)], now: then.addingTimeInterval(8 * 86_400))
        #expect(try t.registry.pruneReportEvents(before: then.addingTimeInterval(7 * 86_400)) == 1)
        #expect(try t.registry.reportFigures(app: app).first?.count(.installed) == 2)
        #expect(try t.registry.report(app: app, deviceID: "d2", events: [try event("new", .installed)]).duplicates == 1)
        #expect(try t.registry.report(app: app, deviceID: "d1", events: [try event("old", .installed)]).accepted == 1)
        #expect(try t.registry.reportFigures(app: app).first?.count(.installed) == 2, "still one device each")
    }

    @Test("the wire grammar: ids, types, reasons only where they belong, positive patches, a dated `at`")
    func grammar() throws {
        func parse(_ text: String) throws -> ReportEvent? { ReportEvent(json: try JSONParser.parse(Array(text.utf8))) }
        #expect(try parse(#"{"id":"a-1_B","type":"installed","appVersion":"2.3","patch":3,"at":"2026-12-01T10:00:00Z"}"#)?.channel == .production)
        #expect(try parse(#"{"id":"a","type":"refused","appVersion":"2.3","channel":"beta","patch":3,"reason":"hashMismatch"}"#)?.reason == "hashMismatch")
        #expect(try parse(#"{"id":"a","type":"syncFailed","appVersion":"2.3","reason":"network"}"#)?.patch == nil)
        for bad in [#"{"id":"a b","type":"installed","appVersion":"2.3","patch":3}"#,
                    #"{"id":"","type":"installed","appVersion":"2.3","patch":3}"#,
                    "{\"id\":\"\(String(repeating: "a", count: 65))\",\"type\":\"installed\",\"appVersion\":\"2.3\",\"patch\":3}",
                    #"{"id":"a","type":"exploded","appVersion":"2.3","patch":3}"#,
                    #"{"id":"a","type":"installed","appVersion":"2.3"}"#,
                    #"{"id":"a","type":"installed","appVersion":"2.3","patch":0}"#,
                    #"{"id":"a","type":"installed","appVersion":"2.3","patch":3,"reason":"x"}"#,
                    #"{"id":"a","type":"refused","appVersion":"2.3","patch":3}"#,
                    #"{"id":"a","type":"refused","appVersion":"2.3","patch":3,"reason":"free text!"}"#,
                    #"{"id":"a","type":"installed","appVersion":"2.3","patch":3,"at":"yesterday"}"#,
                    #"{"id":"a","type":"installed","appVersion":"2.3","channel":"Bad Channel","patch":3}"#,
                    #"["not an object"]"#] {
            #expect(try parse(bad) == nil, "\(bad)")
        }
    }
}

@Suite("Wilson score interval")
struct WilsonTests {
    @Test("95 % bounds match values computed in python (the published 1 of 10 → 1.79 %…40.4 % among them)")
    func knownValues() {
        // python3: p=k/n; (p+z²/2n ∓ z·sqrt(p(1-p)/n+z²/4n²))/(1+z²/n), z=1.959963984540054
        let cases: [(Int, Int, Double, Double)] = [
            (1, 10, 0.017876213095, 0.404150026795), (10, 60, 0.093131769792, 0.280316131636),
            (2, 50, 0.011038884328, 0.134600906875), (0, 50, 0.0, 0.071347599133),
            (5, 100, 0.021543679154, 0.111750469232), (50, 100, 0.403831530366, 0.596168469634),
            (100, 100, 0.963006501793, 1.0), (3, 1000, 0.001020783881, 0.008783014054),
        ]
        for (k, n, lower, upper) in cases {
            let w = WilsonInterval(successes: k, trials: n)
            #expect(abs(w.lower - lower) < 1e-9, "\(k)/\(n) lower \(w.lower)")
            #expect(abs(w.upper - upper) < 1e-9, "\(k)/\(n) upper \(w.upper)")
        }
    }

    @Test("the Wilson figures docs/PROTOCOL.md gives (1 of 10, 10 of 60, the stats example's 24 of 120, the trip's 10 of 50) are the computed ones")
    func protocolFigures() throws {
        let doc = try String(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/PROTOCOL.md"), encoding: .utf8)
        func ppm(_ k: Int, _ n: Int) -> (Int, Int) {
            let w = WilsonInterval(successes: k, trials: n)
            return (WilsonInterval.ppm(w.lower), WilsonInterval.ppm(w.upper))
        }
        let (a, b) = (ppm(1, 10), ppm(10, 60))
        #expect(doc.contains("For 1 of 10 that\nis \(a.0)…\(a.1) ppm; for 10 of 60, \(b.0)…\(b.1)."))
        let c = ppm(24, 120)
        #expect(doc.contains("\"rollbackRatePpm\": {\"observed\": 200000, \"lower\": \(c.0), \"upper\": \(c.1)}"))
        #expect(doc.contains("\"installed\": 50, \"rolledBack\": 10,\n   \"lowerBoundPpm\": \(ppm(10, 50).0),"))
    }

    @Test("no trials is [0, 1]; more successes than trials (forged) is clamped to all")
    func edges() {
        #expect(WilsonInterval(successes: 0, trials: 0) == WilsonInterval(successes: 5, trials: 0))
        #expect(WilsonInterval(successes: 0, trials: 0).lower == 0 && WilsonInterval(successes: 0, trials: 0).upper == 1)
        #expect(WilsonInterval(successes: 500, trials: 100) == WilsonInterval(successes: 100, trials: 100))
        #expect(WilsonInterval.percentText(ppm: 20000) == "2%" && WilsonInterval.percentText(ppm: 93132) == "9.3132%")
    }
}
