import Foundation
import PatchCore
import Testing
@testable import PatchRegistry
import HotpatchTestSupport

/// What a forger must spend before reports move a guard or a staged rollout (issue 20):
/// receipts per device, per-network and per-block admission budgets, and a quorum of blocks.
@Suite("Device reports: evidence that costs real devices")
struct EvidenceTests {
    let v23: AppVersion
    init() throws { v23 = try AppVersion("2.3") }

    /// `count` devices named `prefix-N`, each installing patch `patch` and (the first
    /// `rolledBack` of them) rolling it back, with valid receipts, from `origin(N)`.
    func devices(_ t: TempRegistry, _ app: AppName, _ prefix: String, _ count: Int, rolledBack: Int = 0, patch: Int = 1,
                 origin: (Int) -> ReportOrigin) throws -> [DeviceReport] {
        try (0..<count).map { i in
            var events = [try event("i\(patch)", .installed, patch: patch)]
            if i < rolledBack { events.append(try event("r\(patch)", .rolledBack, patch: patch)) }
            let id = "\(prefix)-\(i)"
            return DeviceReport(app: app, deviceID: id, events: try t.registry.stamped(events, app: app, deviceID: id), origin: origin(i))
        }
    }

    /// A real spread: each device in a /16 of its own (`10.N.0.0/16` then `11.…`).
    static func spread(_ i: Int) -> ReportOrigin {
        ReportOrigin(network: "\(10 + i / 256).\(i % 256).7.0/24", block: "\(10 + i / 256).\(i % 256).0.0/16")
    }

    func feed(_ t: TempRegistry, _ app: AppName, _ reports: [DeviceReport], at now: Date) throws -> [GuardTrip] {
        let outcomes = try t.registry.ingestReports(reports, now: now)
        return try t.registry.enforceGuards(app: app, patches: outcomes.reduce(into: Set<PatchKey>()) { $0.formUnion($1.touched) }, now: now)
    }

    @Test("an event about a patch counts only with this device's receipt for that patch; refusals and sync failures need none")
    func receipts() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        try t.publish(app, "2.3", "one()")
        try t.publish(app, "2.3", "two()")
        let origin = ownOrigin("d1")
        let receipts = try t.registry.reportReceipts()
        let forOther = receipts.receipt(app: "demo", appVersion: "2.3", channel: "production", patch: 1, deviceID: "d2")
        let forPatch2 = receipts.receipt(app: "demo", appVersion: "2.3", channel: "production", patch: 2, deviceID: "d1")
        let right = receipts.receipt(app: "demo", appVersion: "2.3", channel: "production", patch: 1, deviceID: "d1")
        let outcome = try t.registry.ingestReports(app: app, deviceID: "d1", events: [
            ReportEvent(id: "1", type: .installed, appVersion: v23, patch: 1),
            ReportEvent(id: "2", type: .installed, appVersion: v23, patch: 1, receipt: forOther),
            ReportEvent(id: "3", type: .rolledBack, appVersion: v23, patch: 1, receipt: forPatch2),
            ReportEvent(id: "4", type: .installed, appVersion: v23, patch: 1, receipt: right),
            ReportEvent(id: "5", type: .refused, appVersion: v23, patch: 2, reason: "hashMismatch"),
            ReportEvent(id: "6", type: .syncFailed, appVersion: v23, patch: nil, reason: "network"),
        ], origin: origin)
        #expect(outcome.accepted == 3 && outcome.dropped == [.receipt: 3])
        #expect(try t.registry.reportFigures(app: app).first { $0.key.patch == 1 }?.count(.rolledBack) == 0)
        // The secret is the registry's: the same after reopening, so receipts outlive a restart.
        let reopened = try TestBackend.registry(dataDirectory: t.root.appendingPathComponent("data"), keysDirectory: t.root.appendingPathComponent("keys"))
        #expect(try reopened.reportReceipts().receipt(app: "demo", appVersion: "2.3", channel: "production", patch: 1, deviceID: "d1") == right)
    }

    @Test("the receipt vector of docs/PROTOCOL.md, and HMAC-SHA256 against RFC 4231 test case 2")
    func receiptVector() {
        let receipts = ReportReceipt(key: Array(0..<32))
        #expect(receipts.receipt(app: "demo", appVersion: "2.3", channel: "production", patch: 1, deviceID: "device-0001") == "69d4b3ac97cf9d279a07dd55931bb028")
        #expect(receipts.verify("69d4b3ac97cf9d279a07dd55931bb028", app: "demo", appVersion: "2.3", channel: "production", patch: 1, deviceID: "device-0001"))
        #expect(!receipts.verify("69d4b3ac97cf9d279a07dd55931bb029", app: "demo", appVersion: "2.3", channel: "production", patch: 1, deviceID: "device-0001"))
        #expect(Hex.encode(Digest.hmacSHA256(key: Array("Jefe".utf8), Array("what do ya want for nothing?".utf8)))
                == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    @Test("one address cannot trip a default guard: 200 forged devices an hour for two days, 20 an hour admitted, all from one block")
    func oneAddress() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        try t.publish(app, "2.3", "fix()")
        try t.registry.setGuard(app: app, maxRollbackPPM: 20_000, minDevices: 50, action: .halt, actor: t.actor)
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let one = ReportOrigin(network: "198.51.100.0/24", block: "198.51.0.0/16")
        for hour in 0..<48 {
            let reports = try devices(t, app, "forged-\(hour)", 200, rolledBack: 200) { _ in one }
            #expect(try feed(t, app, reports, at: start.addingTimeInterval(Double(hour) * 3600)).isEmpty)
        }
        let figures = try #require(try t.registry.reportFigures(app: app).first)
        #expect(figures.count(.installed) == 48 * 20 && figures.count(.rolledBack) == 48 * 20, "20 new devices an hour from one network")
        #expect(try t.registry.serving(app: app, appVersion: v23).delivery[1] == .live)
        #expect(try t.registry.guardTrips(app: app).isEmpty)
    }

    @Test("100 addresses in one /16 cannot trip it either: 100 networks, 200 devices an hour from the block, one block of the five needed")
    func oneBlock() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        try t.publish(app, "2.3", "fix()")
        try t.registry.setGuard(app: app, maxRollbackPPM: 20_000, minDevices: 50, action: .halt, actor: t.actor)
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        for hour in 0..<24 {
            let reports = try devices(t, app, "forged-\(hour)", 400, rolledBack: 400) { i in
                ReportOrigin(network: "203.0.\(i % 100).0/24", block: "203.0.0.0/16")
            }
            #expect(try feed(t, app, reports, at: start.addingTimeInterval(Double(hour) * 3600)).isEmpty)
        }
        #expect(try t.registry.reportFigures(app: app).first?.count(.rolledBack) == 24 * 200)
        #expect(try t.registry.guardTrips(app: app).isEmpty)
        #expect(try t.registry.reportBlocks(app: app, key: PatchKey(appVersion: v23, channel: .production, patch: 1), event: .rolledBack) == 1)
    }

    @Test("a real spread still trips it: rollbacks from the block quorum do (7 of 55 install blocks), from one block fewer do not")
    func realSpread() throws {
        // 48 devices in blocks of their own install and do not roll back; with the 12 that do,
        // in `blocks` blocks, the installs span 48 + blocks blocks: one in eight is 7 (issue 43).
        #expect(ReportRules().rollbackQuorum(installBlocks: 48 + 6) == 7 && ReportRules().rollbackQuorum(installBlocks: 48 + 7) == 7)
        for blocks in [6, 7] {
            let t = try TempRegistry()
            let app = try t.app("demo")
            try t.publish(app, "2.3", "fix()")
            try t.registry.setGuard(app: app, maxRollbackPPM: 20_000, minDevices: 50, action: .halt, actor: t.actor)
            // 60 devices, each its own block; the 12 that roll back sit in `blocks` blocks.
            let reports = try devices(t, app, "phone", 60, rolledBack: 12) { i in
                i < 12 ? ReportOrigin(network: "100.\(i % blocks).\(i).0/24", block: "100.\(i % blocks).0.0/16") : EvidenceTests.spread(i)
            }
            let trips = try feed(t, app, reports, at: Date())
            #expect(trips.count == (blocks >= 7 ? 1 : 0), "\(blocks) blocks")
        }
    }

    @Test("forged installs from one /16 cannot dilute real rollbacks: at most 200 of them count in the hour")
    func noDilution() throws {
        func run(_ rules: ReportRules) throws -> [GuardTrip] {
            let t = try TempRegistry()
            let app = try t.app("demo")
            try t.publish(app, "2.3", "fix()")
            try t.registry.setGuard(app: app, maxRollbackPPM: 20_000, minDevices: 50, action: .halt, actor: t.actor)
            let forged = try devices(t, app, "forged", 5_000) { i in ReportOrigin(network: "203.0.\(i % 250).0/24", block: "203.0.0.0/16") }
            let real = try devices(t, app, "phone", 60, rolledBack: 20, origin: EvidenceTests.spread)
            let outcomes = try t.registry.ingestReports(forged + real, rules: rules)
            return try t.registry.enforceGuards(app: app, patches: outcomes.reduce(into: Set<PatchKey>()) { $0.formUnion($1.touched) }, rules: rules)
        }
        let trip = try #require(try run(ReportRules()).first)
        #expect(trip.installed == 260 && trip.rolledBack == 20)
        var unbounded = ReportRules()
        unbounded.devicesPerNetwork = 100_000
        unbounded.devicesPerBlock = 100_000
        #expect(try run(unbounded).isEmpty, "without the budgets 5,000 forged installs hide 20 real rollbacks")
    }

    @Test("a due schedule does not step on installs from one block, and does on installs from five")
    func schedules() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        try t.publish(app, "2.3", "fix()", rollout: 5)
        try t.registry.setGuard(app: app, maxRollbackPPM: 20_000, minDevices: 50, action: .halt, actor: t.actor)
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        try t.registry.setSchedule(app: app, appVersion: v23, number: 1, steps: [25, 100], everySeconds: 3600, actor: t.actor, now: start)
        let forged = try devices(t, app, "forged", 1_000) { i in ReportOrigin(network: "203.0.\(i % 250).0/24", block: "203.0.0.0/16") }
        _ = try t.registry.ingestReports(forged, now: start)
        #expect(try t.registry.reportFigures(app: app).first?.count(.installed) == 200)
        #expect(try t.registry.advanceSchedules(app: app, now: start.addingTimeInterval(3601)).isEmpty, "200 installs, one block")
        let real = try devices(t, app, "phone", 4, origin: EvidenceTests.spread)
        _ = try t.registry.ingestReports(real, now: start.addingTimeInterval(3602))
        let steps = try t.registry.advanceSchedules(app: app, now: start.addingTimeInterval(3603))
        #expect(steps == [.advanced(PatchKey(appVersion: v23, channel: .production, patch: 1), from: 5, to: 25)])
    }

    @Test("the hour's budgets: new devices per app, network and block, events per network and app; admitted devices go on; the next hour admits again")
    func budgets() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        try t.publish(app, "2.3", "fix()")
        var rules = ReportRules()
        rules.devicesPerApp = 10
        rules.eventsPerNetwork = 25
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        func send(_ device: String, _ ids: [String], network: String = "n1", at: Date = start) throws -> ReportOutcome {
            try t.registry.report(app: app, deviceID: device, events: try ids.map { try event($0, .launched) },
                                  origin: ReportOrigin(network: network, block: "b-" + network), rules: rules, now: at)
        }
        for i in 0..<10 { #expect(try send("d\(i)", ["a"], network: "n\(i)").accepted == 1) }
        #expect(try send("d10", ["a"], network: "n10").dropped == [.devices: 1], "the app's 10 new devices this hour are spent")
        #expect(try send("d0", ["b"], network: "n0").accepted == 1, "an admitted device goes on")
        // One network's events: 25 an hour, whatever the devices.
        let many = try send("d1", (0..<30).map { "e\($0)" }, network: "n1")
        #expect(many.accepted == 24 && many.dropped == [.events: 6], "d1 spent one of its network's 25 already")
        let later = start.addingTimeInterval(3600)
        #expect(try send("d10", ["a"], network: "n10", at: later).accepted == 1, "a new hour, a new budget")
        #expect(try send("d1", ["late"], network: "n1", at: later).accepted == 1)
        // The default per-network and per-block budgets.
        let t2 = try TempRegistry()
        let app2 = try t2.app("demo")
        try t2.publish(app2, "2.3", "fix()")
        let crowd = try (0..<300).map { i in
            DeviceReport(app: app2, deviceID: "c\(i)", events: [try event("x", .syncFailed, patch: nil, reason: "network")],
                         origin: ReportOrigin(network: "203.0.\(i % 30).0/24", block: "203.0.0.0/16"))
        }
        let outcomes = try t2.registry.ingestReports(crowd, now: start)
        #expect(outcomes.filter { $0.accepted == 1 }.count == 200, "a block admits 200 an hour")
        let oneNetwork = try (0..<50).map { i in
            DeviceReport(app: app2, deviceID: "m\(i)", events: [try event("x", .syncFailed, patch: nil, reason: "network")], origin: ReportOrigin(network: "198.51.100.0/24", block: "198.51.0.0/16"))
        }
        #expect(try t2.registry.ingestReports(oneNetwork, now: start).filter { $0.accepted == 1 }.count == 20, "a network admits 20 an hour")
    }

    @Test("pruning ages out senders after 30 days without a report and budgets after an hour")
    func aging() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        try t.publish(app, "2.3", "fix()")
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        _ = try t.registry.report(app: app, deviceID: "old", events: [try event("1", .launched)], now: start)
        _ = try t.registry.report(app: app, deviceID: "recent", events: [try event("1", .launched)], now: start.addingTimeInterval(29 * 86_400))
        try t.registry.pruneReportEvents(before: start, now: start.addingTimeInterval(31 * 86_400))
        #expect(try t.registry.db.query("SELECT count(*) FROM report_senders") { $0.int(0) }.first == 1)
        #expect(try t.registry.db.query("SELECT count(*) FROM report_budget") { $0.int(0) }.first == 0)
    }
}
