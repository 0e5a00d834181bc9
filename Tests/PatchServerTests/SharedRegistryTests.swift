import Foundation
import Synchronization
import Testing
import PatchCore
import Postgres
import HotpatchTestSupport
@testable import PatchRegistry
@testable import HTTPTransport
@testable import PatchServer

/// Several patchd and patchctl on one PostgreSQL registry (issue 13), in process: each
/// `Registry` below is its own connection, as each instance's would be.
// Always on PostgreSQL, so it runs in the first (SQLite) pass of `make test-swift` only.
@Suite("Several instances on one PostgreSQL registry", .enabled(if: SharedDatabase.url != nil, "HOTPATCH_TEST_DATABASE is unset: run `make test`"),
       .enabled(if: !TestBackend.isPostgres, "runs on PostgreSQL in the first pass already"))
struct SharedRegistryTests {
    @Test("a publish committed through one connection is served by two other instances through NOTIFY alone (the poll is off)")
    func notifyReachesEveryInstance() throws {
        let shared = try SharedDatabase()
        let writer = try shared.registry()
        let app = try AppName("demo")
        try writer.createApp(app, encrypted: false, actor: shared.actor)
        let services = try (0..<2).map { _ in try PatchService(registry: try shared.registry(), log: { _ in }) }
        // reloadEvery 1 h: without the change feed neither instance would look again.
        let upkeeps = services.map { Upkeep(service: $0, reloadEvery: 3600, refreshEvery: 3600) }
        defer { upkeeps.forEach { $0.stop() } }
        #expect(services.allSatisfy { $0.changeFeed != nil })
        let before = services.map { timestampVersion($0) }
        // Let each feed connect and LISTEN (its first wait reports "maybe changed").
        Thread.sleep(forTimeInterval: 0.5)

        let clock = ContinuousClock()
        let publishStart = clock.now
        _ = try writer.publish(app: app, appVersion: try AppVersion("2.3"), bundle: Array("fix()".utf8), actor: shared.actor)
        // From the commit's acknowledgement: what a release engineer waits for after "published".
        let start = clock.now
        var latencies: [Duration] = []
        for (index, service) in services.enumerated() {
            while timestampVersion(service) == before[index], clock.now - start < .seconds(10) { Thread.sleep(forTimeInterval: 0.001) }
            latencies.append(clock.now - start)
            #expect(timestampVersion(service) > before[index], "instance \(index) never served the publish")
        }
        func ms(_ d: Duration) -> String { String(format: "%.1f ms", Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15) }
        print("publish took \(ms(start - publishStart)); commit → served by the two other instances: \(latencies.map(ms).joined(separator: ", "))")
    }

    @Test("publishes to one app from several connections at once get consecutive numbers and one linear audit chain")
    func concurrentPublishes() throws {
        let shared = try SharedDatabase()
        let app = try AppName("demo")
        try shared.registry().createApp(app, encrypted: false, actor: shared.actor)
        let failures = Mutex<[String]>([])
        let numbers = Mutex<[Int]>([])
        let writers = 3, each = 6
        let group = DispatchGroup()
        for w in 0..<writers {
            let url = shared.url
            DispatchQueue.global().async(group: group) {
                do {
                    let registry = try Registry(database: .postgres(url), keysDirectory: shared.keys)
                    for i in 0..<each {
                        let published = try registry.publish(app: app, appVersion: try AppVersion("2.3"), bundle: Array("w\(w)i\(i)()".utf8), actor: try Actor(validating: "writer\(w)"))
                        numbers.withLock { $0.append(published.patch.number) }
                    }
                } catch { failures.withLock { $0.append("\(error)") } }
            }
        }
        group.wait()
        #expect(failures.withLock { $0 } == [])
        #expect(numbers.withLock { $0.sorted() } == Array(1...(writers * each)))
        let registry = try shared.registry()
        let verification = try registry.verifyAudit()
        guard case .intact(let events, _) = verification else { Issue.record("audit chain: \(verification)"); return }
        #expect(events == 1 + writers * each)
        let listed = try registry.patches(app: app, appVersion: nil, activeOnly: false).map(\.number)
        #expect(listed.sorted() == Array(1...(writers * each)))
    }

    @Test("one instance at a time holds the upkeep lease; a holder that stops renewing (hung, dead) loses it to the next one to ask after its deadline")
    func upkeepLease() throws {
        let shared = try SharedDatabase()
        let first = try shared.registry(), second = try shared.registry()
        #expect(first.renewUpkeepLease(for: 1, missingKeys: 0))
        #expect(first.renewUpkeepLease(for: 1, missingKeys: 0), "renewed by its holder")
        #expect(first.holdsUpkeepLease())
        #expect(!second.renewUpkeepLease(for: 1, missingKeys: 0))
        #expect(!second.holdsUpkeepLease())
        // The holder stops renewing, as a SIGSTOPped patchd does: its connection (and before,
        // its session lock) stays, but its deadline passes.
        let stopped = ContinuousClock.now
        var taken = false
        while !taken, ContinuousClock.now - stopped < .seconds(5) {
            taken = second.renewUpkeepLease(for: 1, missingKeys: 0)
            if !taken { Thread.sleep(forTimeInterval: 0.05) }
        }
        let waited = ContinuousClock.now - stopped
        #expect(taken)
        #expect(waited >= .milliseconds(900) && waited < .seconds(2), "taken over after \(waited)")
        #expect(!first.holdsUpkeepLease(), "resumed, its own time ran out and the lease is taken")
        #expect(!first.renewUpkeepLease(for: 1, missingKeys: 0))
        // Given back (patchd stopping): the next one to ask takes it at once.
        second.releaseUpkeepLease()
        #expect(first.renewUpkeepLease(for: 1, missingKeys: 0))
        #expect(!second.holdsUpkeepLease())
    }

    @Test("instances asking at once for a lapsed lease: exactly one gets it")
    func upkeepLeaseOneWinner() throws {
        let shared = try SharedDatabase()
        let registries = try (0..<4).map { _ in try shared.registry() }
        for round in 0..<5 {
            Thread.sleep(forTimeInterval: round == 0 ? 0 : 0.25)  // the previous winner's 0.2 s lapse
            let wins = Mutex(0)
            let group = DispatchGroup()
            for registry in registries {
                nonisolated(unsafe) let registry = registry
                DispatchQueue.global().async(group: group) {
                    if registry.renewUpkeepLease(for: 0.2, missingKeys: 0) { wins.withLock { $0 += 1 } }
                }
            }
            group.wait()
            #expect(wins.withLock { $0 } == 1, "round \(round)")
        }
    }

    @Test("an instance that cannot re-sign some apps gives the lease to one that can at once, and takes it only when no better one renews")
    func upkeepLeaseKeys() throws {
        let shared = try SharedDatabase()
        let keyless = try shared.registry(), alsoKeyless = try shared.registry(), withKeys = try shared.registry()
        #expect(keyless.renewUpkeepLease(for: 1, missingKeys: 1), "alone, it does the rest of the work (guards, pruning)")
        #expect(!alsoKeyless.renewUpkeepLease(for: 1, missingKeys: 1), "no better: no takeover before the deadline")
        #expect(withKeys.renewUpkeepLease(for: 1, missingKeys: 0), "one with every key takes it at once")
        #expect(!keyless.renewUpkeepLease(for: 1, missingKeys: 1))
        #expect(!keyless.holdsUpkeepLease())
        #expect(withKeys.renewUpkeepLease(for: 1, missingKeys: 0), "kept by renewing")
        Thread.sleep(forTimeInterval: 0.6)
        #expect(!keyless.renewUpkeepLease(for: 1, missingKeys: 1))
        #expect(withKeys.renewUpkeepLease(for: 1, missingKeys: 0))
        Thread.sleep(forTimeInterval: 1.2)  // the one with the keys stops renewing
        #expect(keyless.renewUpkeepLease(for: 1, missingKeys: 1), "no better instance alive: the keyless one takes it again")
    }

    @Test("patchd without the timestamp key does not keep the lease from one with every key, which re-signs; both export the lease and the expiry")
    func upkeepServiceWithoutKeys() throws {
        let shared = try SharedDatabase()
        let app = try AppName("demo")
        try shared.registry().createApp(app, encrypted: false, actor: shared.actor)
        let partial = shared.keys.deletingLastPathComponent().appendingPathComponent(shared.keys.lastPathComponent + "-partial", isDirectory: true)
        try? FileManager.default.removeItem(at: partial)
        try FileManager.default.copyItem(at: shared.keys, to: partial)
        try removeKeys(of: "timestamp", in: partial.appendingPathComponent("demo"))
        var configuration = ServiceConfiguration()
        configuration.upkeepLease = 60
        let without = try PatchService(registry: try Registry(database: .postgres(shared.url), keysDirectory: partial), configuration: configuration, log: { _ in })
        let with = try PatchService(registry: try shared.registry(), configuration: configuration, log: { _ in })
        func metrics(_ service: PatchService) -> String { String(decoding: get(service, "/metrics").body, as: UTF8.self) }

        without.refreshExpiring()
        #expect(metrics(without).contains("hotpatch_upkeep_lease_held 1\n"), "alone")
        #expect(metrics(without).contains("hotpatch_upkeep_apps_without_keys 1\n"))
        with.refreshExpiring()
        without.refreshExpiring()
        #expect(metrics(with).contains("hotpatch_upkeep_lease_held 1\n"))
        #expect(metrics(without).contains("hotpatch_upkeep_lease_held 0\n"))
        // A day on, the timestamp is due: the instance with the key re-signs it.
        let before = timestampVersion(with)
        with.refreshExpiring(now: Date().addingTimeInterval(86_000))
        #expect(timestampVersion(with) > before)
        without.refreshExpiring(now: Date().addingTimeInterval(86_000))
        #expect(!metrics(without).contains("hotpatch_resign_failures_total{"), "it does not hold the lease, so it never tried")
        #expect(metrics(without).contains("hotpatch_metadata_expires_in_seconds{app=\"demo\",role=\"timestamp\"} "))
        try? FileManager.default.removeItem(at: partial)
    }

    @Test("a connection the server drops fails the call under way as unreachable (503, nothing changed) and is replaced on the next call")
    func reconnects() throws {
        let shared = try SharedDatabase()
        let registry = try shared.registry()
        let app = try AppName("demo")
        try registry.createApp(app, encrypted: false, actor: shared.actor)
        let pid = try #require(try registry.db.query("SELECT pg_backend_pid()") { $0.int(0) }.first)
        _ = try PostgresConnection(shared.url).query("SELECT pg_terminate_backend($1::int4)", [.int(pid)])
        Thread.sleep(forTimeInterval: 0.2)
        let error = try #require(throws: RegistryError.self) { try registry.apps() }
        guard case .storage(let storage) = error else { Issue.record("\(error)"); return }
        #expect(storage.kind == .unavailable, "\(storage)")
        #expect(error.httpError.status == 503 && error.description.contains("nothing was changed"))
        #expect(try registry.apps().map(\.name) == [app], "a new connection, at once")
        let published = try registry.publish(app: app, appVersion: try AppVersion("2.3"), bundle: Array("x()".utf8), actor: shared.actor)
        #expect(published.patch.number == 1)
    }

    @Test("with the database unreachable an instance keeps serving what it prepared: /healthz says degraded (200, so haproxy keeps it), writes are 503")
    func databaseDown() throws {
        let shared = try SharedDatabase()
        let admin = try PostgresConnection(shared.url)
        let role = "r_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(12)
        try admin.execute("CREATE ROLE \(role) LOGIN; GRANT ALL ON SCHEMA \(shared.schema) TO \(role)")
        let url = shared.url.replacingOccurrences(of: "://hotpatch@", with: "://\(role)@")
        let registry = try Registry(database: .postgres(url), keysDirectory: shared.keys, create: true)
        let app = try AppName("demo")
        try registry.createApp(app, encrypted: false, actor: shared.actor)
        _ = try registry.publish(app: app, appVersion: try AppVersion("2.3"), bundle: Array("x()".utf8), actor: shared.actor)
        let token = try registry.createToken(app: app, role: .publisher, name: "ci", actor: shared.actor).secret
        let service = try PatchService(registry: registry, log: { _ in })
        let version = timestampVersion(service)
        #expect(version > 0)

        try admin.execute("ALTER ROLE \(role) NOLOGIN")
        _ = try admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1", [.text(role)])
        Thread.sleep(forTimeInterval: 0.2)
        service.reloadChanged()  // patchd's upkeep, every second: it finds the database gone
        let health = get(service, "/healthz")
        #expect(health.status == 200)
        #expect(String(decoding: health.body, as: UTF8.self).contains("\"degraded\""))
        #expect(timestampVersion(service) == version, "served from memory")
        let publish = service.respond(to: HTTPRequest(method: "POST", path: "/v1/apps/demo/patches", headers: ["Authorization": "Bearer \(token)"],
                                                      query: ["appVersion": "2.3"], body: Array("y()".utf8), remoteAddress: "127.0.0.1"))
        #expect(publish.status == 503 && publish.header("Retry-After") == "1", "\(publish.status) \(String(decoding: publish.body, as: UTF8.self))")

        try admin.execute("ALTER ROLE \(role) LOGIN")
        service.reloadChanged()
        #expect(String(decoding: get(service, "/healthz").body, as: UTF8.self).contains("\"ok\""))
    }

    private func get(_ service: PatchService, _ path: String) -> HTTPResponse {
        service.respond(to: HTTPRequest(method: "GET", path: path, headers: [:], query: [:], remoteAddress: "127.0.0.1"))
    }

    private func timestampVersion(_ service: PatchService) -> Int64 {
        let response = service.respond(to: HTTPRequest(method: "GET", path: "/v1/apps/demo/metadata/timestamp.json", headers: [:], query: [:], remoteAddress: "127.0.0.1"))
        guard response.status == 200, let json = try? JSONParser.parse(response.body) else { return -1 }
        return json["signed"]?["version"]?.intValue ?? -1
    }
}

/// A new schema in the test cluster's database, and registries on it (one connection each).
struct SharedDatabase {
    static let url = ProcessInfo.processInfo.environment["HOTPATCH_TEST_DATABASE"].flatMap { $0.isEmpty ? nil : $0 }
    let url: String
    let schema: String
    let keys: URL
    let actor = Actor("tester")

    init() throws {
        let base = try #require(Self.url)
        let schema = "shared_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
        self.schema = schema
        _ = try PostgresConnection(base).execute("CREATE SCHEMA \(schema)")
        url = base + (base.contains("?") ? "&" : "?") + "options=-csearch_path%3D\(schema)"
        keys = FileManager.default.temporaryDirectory.appendingPathComponent("hotpatch-shared-\(schema)", isDirectory: true)
    }

    func registry() throws -> Registry { try Registry(database: .postgres(url), keysDirectory: keys, create: true) }
}
