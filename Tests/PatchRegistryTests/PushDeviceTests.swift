import Foundation
import PatchCore
import PatchPush
import Testing
@testable import PatchRegistry
import HotpatchTestSupport

/// Issue 20, item 5: what an anonymous registration can do to the token table — and what
/// it cannot (re-point another device's token, outlive its device, crowd out real installs).
@Suite("Push tokens: binding, expiry, order and eviction")
struct PushDeviceTests {
    static func token(_ n: Int) -> String { String(repeating: "cd", count: 28) + String(format: "%08x", n) }
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    static let day: TimeInterval = 86_400

    /// A registry with app demo and a 2.3 production patch.
    static func fixture() throws -> (TempRegistry, AppName) {
        let t = try TempRegistry()
        let app = try t.app("demo")
        try t.publish(app, "2.3", "one()")
        return (t, app)
    }

    @discardableResult
    static func register(_ t: TempRegistry, _ app: AppName, _ n: Int, device: String = "device-1", version: String = "2.3",
                         channel: ChannelName = .production, environment: PushEnvironment = .production, limit: Int = 100,
                         at now: Date = t0) throws -> PushRegistration {
        try t.registry.registerPushDevice(app: app, token: token(n), deviceID: device, environment: environment,
                                          appVersion: try AppVersion(version), channel: channel, limit: limit, now: now)
    }

    static func rows(_ t: TempRegistry, _ table: String) throws -> [String] {
        try t.registry.db.query("SELECT token FROM \(table) ORDER BY token") { $0.text(0) }
    }

    @Test("a token is bound to the device that first registered it: another device ID cannot re-point it (conflict, nothing changed); its own can")
    func boundToItsDevice() throws {
        let (t, app) = try Self.fixture()
        try t.publish(app, "2.4", "two()")
        #expect(try Self.register(t, app, 1, device: "device-1") == .stored)
        #expect(throws: RegistryError.self) { try Self.register(t, app, 1, device: "device-2", version: "2.4", environment: .sandbox, at: Self.t0 + 60) }
        let kept = try #require(try t.registry.pushDevices(app: app, now: Self.t0).first)
        #expect(kept.appVersion.rawValue == "2.3" && kept.environment == .production && kept.registeredAt == TUFTime.format(Self.t0))
        #expect(try Self.register(t, app, 1, device: "device-1", version: "2.4", at: Self.t0 + 60) == .refreshed)
        #expect(try t.registry.pushDevices(app: app, now: Self.t0).first?.appVersion.rawValue == "2.4")
    }

    @Test("the binding keeps a hash of the device ID (Registry.deviceHash), never the ID")
    func storesTheHash() throws {
        let (t, app) = try Self.fixture()
        try Self.register(t, app, 1, device: "raw-device-id-42")
        let stored = try t.registry.db.query("SELECT device FROM push_device_owners") { $0.text(0) }
        #expect(stored == [Registry.deviceHash("raw-device-id-42")])
    }

    @Test("a token stored before bindings existed is bound by its next registration, then held to that device")
    func legacyTokenIsBoundOnRefresh() throws {
        let (t, app) = try Self.fixture()
        try t.registry.db.run("INSERT INTO push_devices(app, token, environment, app_version, channel, registered_at) VALUES ('demo', ?, 'production', '2.3', 'production', ?)",
                              [.text(Self.token(1)), .text(TUFTime.format(Self.t0))])
        #expect(try Self.register(t, app, 1, device: "device-9", at: Self.t0 + 1) == .refreshed)
        #expect(throws: RegistryError.self) { try Self.register(t, app, 1, device: "device-1", at: Self.t0 + 2) }
        #expect(try Self.rows(t, "push_device_owners") == [Self.token(1)])
    }

    @Test("a version or channel the app has no patch for is refused, nothing stored; a revoked or promoted patch's counts")
    func versionAndChannelMustExist() throws {
        let (t, app) = try Self.fixture()
        #expect(throws: RegistryError.self) { try Self.register(t, app, 1, version: "9.9") }
        #expect(throws: RegistryError.self) { try Self.register(t, app, 1, channel: try ChannelName("staging")) }
        #expect(try Self.rows(t, "push_devices").isEmpty && Self.rows(t, "push_device_owners").isEmpty)
        // A stored token cannot be re-pointed to one either.
        try Self.register(t, app, 2)
        #expect(throws: RegistryError.self) { try Self.register(t, app, 2, version: "9.9") }
        #expect(try t.registry.pushDevices(app: app, now: Self.t0).first?.appVersion.rawValue == "2.3")
        _ = try t.registry.publish(app: app, appVersion: try AppVersion("2.5"), bundle: Array("x()".utf8), channel: try ChannelName("beta"), newChannel: true, actor: t.actor)
        _ = try t.registry.revoke(app: app, appVersion: try AppVersion("2.5"), number: 1, actor: t.actor)
        #expect(try Self.register(t, app, 3, version: "2.5", channel: try ChannelName("beta")) == .stored)
    }

    @Test("tokens not registered again for 60 days are never pushed to, and pruning deletes them and their bindings")
    func expiry() throws {
        let (t, app) = try Self.fixture()
        try Self.register(t, app, 1, at: Self.t0)
        try Self.register(t, app, 2, at: Self.t0 + 10 * Self.day)
        let later = Self.t0 + 61 * Self.day
        #expect(try t.registry.pushDevices(app: app, now: later).map(\.token) == [Self.token(2)])
        #expect(try t.registry.prunePushDevices(now: later) == 1)
        #expect(try Self.rows(t, "push_devices") == [Self.token(2)])
        #expect(try Self.rows(t, "push_device_owners") == [Self.token(2)])
        // A refresh keeps a token alive.
        try Self.register(t, app, 2, at: later)
        #expect(try t.registry.prunePushDevices(now: later + 59 * Self.day) == 0)
    }

    @Test("a push round's tokens come most recently refreshed first")
    func freshestFirst() throws {
        let (t, app) = try Self.fixture()
        for n in 1...3 { try Self.register(t, app, n, at: Self.t0 + Double(n)) }
        // Past the refresh interval: a refresh within it changes nothing (next test).
        try Self.register(t, app, 1, at: Self.t0 + Registry.pushRefreshInterval + 10)
        #expect(try t.registry.pushDevices(app: app, now: Self.t0).map(\.token) == [Self.token(1), Self.token(3), Self.token(2)])
    }

    @Test("a refresh within pushRefreshInterval with the same environment, version and channel writes nothing; one that changes them, or comes later, does")
    func refreshesCoalesce() throws {
        let (t, app) = try Self.fixture()
        try Self.register(t, app, 1, at: Self.t0)
        func registeredAt() throws -> String? {
            try t.registry.db.query("SELECT registered_at FROM push_devices WHERE app = 'demo'") { $0.text(0) }.first
        }
        let first = try registeredAt()
        let version = try t.registry.dataVersion()
        for minutes in [1.0, 30, 300] {
            #expect(try Self.register(t, app, 1, at: Self.t0 + minutes * 60) == .refreshed)
        }
        #expect(try registeredAt() == first, "nothing written")
        #expect(try t.registry.dataVersion() == version)
        // A device updated to another version (or environment) is written at once.
        try t.publish(app, "2.4", "two()")
        #expect(try Self.register(t, app, 1, version: "2.4", at: Self.t0 + 600) == .refreshed)
        #expect(try t.registry.pushDevices(app: app, now: Self.t0).map(\.appVersion.rawValue) == ["2.4"])
        #expect(try Self.register(t, app, 1, version: "2.4", environment: .sandbox, at: Self.t0 + 700) == .refreshed)
        #expect(try t.registry.pushDevices(app: app, now: Self.t0).map(\.environment) == [.sandbox])
        let changed = try registeredAt()
        #expect(try Self.register(t, app, 1, version: "2.4", environment: .sandbox, at: Self.t0 + 700 + Registry.pushRefreshInterval + 1) == .refreshed)
        #expect(try registeredAt() != changed, "past the interval a refresh keeps the token alive")
    }

    @Test("a full table takes a new token in place of the stalest one (its binding too); refreshing never evicts")
    func fullEvictsStalest() throws {
        let (t, app) = try Self.fixture()
        for n in 1...3 { #expect(try Self.register(t, app, n, limit: 3, at: Self.t0 + Double(n)) == .stored) }
        let later = Self.t0 + Registry.pushRefreshInterval
        #expect(try Self.register(t, app, 1, limit: 3, at: later + 10) == .refreshed)
        #expect(try Self.register(t, app, 4, limit: 3, at: later + 11) == .stored)
        #expect(try Self.rows(t, "push_devices") == [Self.token(1), Self.token(3), Self.token(4)])
        #expect(try Self.rows(t, "push_device_owners") == [Self.token(1), Self.token(3), Self.token(4)])
        // Another device can now take the evicted token: its binding went with it.
        #expect(try Self.register(t, app, 2, device: "device-2", limit: 3, at: later + 12) == .stored)
        #expect(try Self.rows(t, "push_devices").count == 3)
    }

    @Test("the per-app count a new token reads instead of counting rows stays exact through stores, evictions, removals and pruning, and starts from the rows of a registry that had none")
    func countStaysExact() throws {
        let (t, app) = try Self.fixture()
        func exact() throws -> Bool {
            let kept = try t.registry.db.query("SELECT stored FROM push_device_counts WHERE app = 'demo'") { $0.int(0) }.first
            let rows = try t.registry.db.query("SELECT count(*) FROM push_devices WHERE app = 'demo'") { $0.int(0) }.first
            return kept == rows
        }
        // Rows from before the count existed: the first new token counts them.
        for n in 1...2 {
            try t.registry.db.run("INSERT INTO push_devices(app, token, environment, app_version, channel, registered_at) VALUES ('demo', ?, 'production', '2.3', 'production', ?)",
                                  [.text(Self.token(n)), .text(TUFTime.format(Self.t0 + Double(n)))])
        }
        #expect(try Self.register(t, app, 3, limit: 3, at: Self.t0 + 3) == .stored)
        #expect(try exact())
        #expect(try Self.register(t, app, 4, limit: 3, at: Self.t0 + 4) == .stored)
        #expect(try Self.rows(t, "push_devices") == [Self.token(2), Self.token(3), Self.token(4)], "the stalest (1) evicted")
        #expect(try exact())
        #expect(try t.registry.removePushDevices(app: app, tokens: [Self.token(3), Self.token(9)]) == 1)
        #expect(try exact())
        #expect(try t.registry.prunePushDevices(now: Self.t0 + 61 * Self.day) == 2)
        #expect(try exact())
        #expect(try Self.register(t, app, 5, limit: 3, at: Self.t0 + 62 * Self.day) == .stored)
        #expect(try exact() && Self.rows(t, "push_devices") == [Self.token(5)])
    }

    @Test("a new token the caller's quota refuses is not stored and writes nothing (no change announced); a stored one is refreshed without asking it")
    func quotaAskedForNewTokensOnly() throws {
        let (t, app) = try Self.fixture()
        var asked = 0
        let refuse = { () -> Bool in asked += 1; return false }
        try Self.register(t, app, 1)
        #expect(try t.registry.registerPushDevice(app: app, token: Self.token(1), deviceID: "device-1", environment: .production,
                                                  appVersion: try AppVersion("2.3"), channel: .production, admitNew: refuse) == .refreshed)
        #expect(asked == 0)
        let version = try t.registry.db.dataVersion()
        #expect(try t.registry.registerPushDevice(app: app, token: Self.token(2), deviceID: "device-1", environment: .production,
                                                  appVersion: try AppVersion("2.3"), channel: .production, admitNew: refuse) == .overQuota)
        #expect(asked == 1)
        #expect(try t.registry.db.dataVersion() == version, "a refusal is no transaction")
        #expect(try Self.rows(t, "push_devices") == [Self.token(1)])
    }
    @Test("a group of registrations is decided and written in one pass: each refusal is its own, a token stored earlier in the group binds a later one, a refresh within the interval writes nothing, and the tokens evicted are named")
    func groupOfRegistrations() throws {
        let (t, app) = try Self.fixture()
        try Self.register(t, app, 1, device: "device-1", limit: 2)
        try Self.register(t, app, 2, device: "device-2", limit: 2, at: Self.t0 + 1)
        func registration(_ n: Int, _ device: String, version: String = "2.3") throws -> PushDeviceRegistration {
            try PushDeviceRegistration(app: app, token: Self.token(n), deviceID: device, environment: .production,
                                       appVersion: try AppVersion(version), channel: .production)
        }
        var asked: [Int] = []
        let batch = t.registry.registerPushDevices([
            try registration(1, "device-1"),                // a refresh within the interval: nothing written
            try registration(1, "device-9"),                // another device's token: 409
            try registration(3, "device-3", version: "9.9"), // no patch for 9.9: 404
            try registration(4, "device-4"),                // new, past the limit of 2: evicts the stalest (1)
            try registration(4, "device-5"),                // bound a moment ago in this very group: 409
            try registration(5, "device-6"),                // new, refused by the caller's quota
        ], limit: 2, now: Self.t0 + 60) { i in
            asked.append(i)
            return i != 5
        }
        func outcome(_ i: Int) -> String {
            switch batch.results[i] {
            case .success(let (registration, _)): registration.rawValue
            case .failure(.conflict): "conflict"
            case .failure(.notFound): "notFound"
            case .failure(let error): "\(error)"
            }
        }
        #expect((0..<6).map(outcome) == ["refreshed", "conflict", "notFound", "stored", "conflict", "overQuota"])
        #expect(asked == [3, 4, 5], "the quota is asked for tokens not stored when the group is read")
        #expect(batch.evicted.map(\.token) == [Self.token(1)])
        #expect(try Self.rows(t, "push_devices") == [Self.token(2), Self.token(4)])
        #expect(try Self.rows(t, "push_device_owners") == [Self.token(2), Self.token(4)])
        guard case .success(let (_, record)) = batch.results[0], let record else { Issue.record("no record of the refresh"); return }
        #expect(record.registeredAt == Self.t0, "the refresh wrote nothing: the record is the stored one")
        #expect(record.coalesces(try registration(1, "device-1"), now: Self.t0 + Registry.pushRefreshInterval))
        #expect(!record.coalesces(try registration(1, "device-1"), now: Self.t0 + Registry.pushRefreshInterval + 1))
        #expect(!record.coalesces(try registration(1, "device-2"), now: Self.t0))
    }
}
