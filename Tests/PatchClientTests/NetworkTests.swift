import Foundation
import HTTPTransport
import PatchCore
import Testing
@testable import PatchClient

/// The transport under a hostile or broken network: nothing listening, slow answers,
/// redirects, throttling answers. Patch 1 is installed first and must survive every failure.
@Suite("PatchClient over a failing network")
struct NetworkTests {
    struct Scene {
        let fixture: ClientFixture
        let mirror: Mirror
        let client: PatchClient
        let good: GoodPatch
    }

    /// Patch 1 installed on a device; patch 2 published and served by the mirror.
    static func scene(configure: (inout ClientConfiguration) -> Void = { _ in }) async throws -> Scene {
        let fixture = try ClientFixture()
        try fixture.publish(fixture.demo)
        let mirror = try Mirror()
        mirror.serve(try fixture.exported(fixture.demo))
        // Patch 1 goes in under the default limits (a test's tight syncTimeout is for the
        // failure it sets up, not for this install on a loaded machine); the same device,
        // same cache, then runs with the test's configuration.
        var configuration = try fixture.configuration(fixture.demo, server: mirror.url)
        let good = try await installGood(PatchClient(configuration: configuration), number: 1, script: ClientFixture.script(fixture.demo, 1))
        configure(&configuration)
        let client = PatchClient(configuration: configuration)
        try fixture.publish(fixture.demo)
        mirror.serve(try fixture.exported(fixture.demo))
        return Scene(fixture: fixture, mirror: mirror, client: client, good: good)
    }

    @Test("the server gone (its HTTPServer released) → .network")
    func serverStopped() async throws {
        let scene = try await Self.scene()
        scene.mirror.stop()
        let outcome = await scene.client.sync(force: true)
        guard case .failed(.network) = outcome else {
            Issue.record("expected .network, got \(outcome)")
            return
        }
        expectKept(scene.client, scene.good)
    }

    @Test("a port nothing listens on → .network")
    func nothingListening() async throws {
        let scene = try await Self.scene()
        var configuration = scene.client.configuration
        configuration.server = URL(string: "http://127.0.0.1:\(unusedPort())")!
        let client = PatchClient(configuration: configuration)
        let outcome = await client.sync(force: true)
        guard case .failed(.network) = outcome else {
            Issue.record("expected .network, got \(outcome)")
            return
        }
        expectKept(client, scene.good)
    }

    /// Observed on Linux: `.timeout` (URLError.timedOut) after about one requestTimeout.
    @Test("a server that answers after 40 s with requestTimeout 1 s → .timeout (or .network), well before the answer")
    func slowServerTimesOut() async throws {
        let scene = try await Self.scene { $0.requestTimeout = 1 }
        // The answer is far away, so the bound below tells a request timeout from waiting for
        // the answer even on a loaded machine (6.1 s was seen against the 6 s bound when the
        // answer came at 8 s, with two other test runs beside it); stopping the mirror ends
        // the delay, so the test does not wait it out.
        scene.mirror.delay = 40
        let started = Date()
        let outcome = await scene.client.sync(force: true)
        let elapsed = Date().timeIntervalSince(started)
        switch outcome {
        case .failed(.timeout), .failed(.network): break
        default: Issue.record("expected .timeout or .network, got \(outcome)")
        }
        // A bound with room for a loaded machine, not a benchmark.
        #expect(elapsed < 25, "gave up long before the 40 s answer came (took \(elapsed) s)")
        expectKept(scene.client, scene.good)
    }

    @Test("a 302 to another host is not followed: .server(status: 302), and the other host gets no request")
    func redirectIsNotFollowed() async throws {
        let scene = try await Self.scene()
        let elsewhere = try Mirror(host: "127.0.0.2")
        let timestamp = ClientFixture.metadataPath(scene.fixture.demo, "timestamp.json")
        elsewhere[timestamp] = scene.mirror[timestamp]
        scene.mirror[timestamp] = CannedResponse(status: 302, headers: [("Location", "http://127.0.0.2:\(elsewhere.port)\(timestamp)")], body: [])
        var outcome = await scene.client.sync(force: true)
        #expect(outcome == .failed(.server(status: 302, url: "timestamp.json")))
        #expect(elsewhere.requests.isEmpty, "nothing followed")
        expectKept(scene.client, scene.good)

        // The same for the bundle, and for a redirect to a port nothing listens on.
        scene.mirror[timestamp] = elsewhere[timestamp]
        let patch2 = try #require(try scene.fixture.registry.patches(app: scene.fixture.demo, appVersion: scene.fixture.version, activeOnly: true).first { $0.number == 2 })
        let target = ClientFixture.targetPaths(patch2)[0]
        scene.mirror[target] = CannedResponse(status: 302, headers: [("Location", "http://127.0.0.2:1\(target)")], body: [])
        outcome = await scene.client.sync(force: true)
        #expect(outcome == .failed(.server(status: 302, url: scene.mirror.url.absoluteString + target)))
        expectKept(scene.client, scene.good)
    }

    @Test("syncTimeout bounds a whole sync: five answers of 6 s each (30 s) with syncTimeout 2 s → .timeout long before")
    func syncTimeoutBoundsTheWholeSync() async throws {
        let scene = try await Self.scene { $0.requestTimeout = 10; $0.syncTimeout = 2 }
        // Each answer inside requestTimeout, so only syncTimeout can cut the sync. The bound
        // below is wide: `elapsed` also holds this task's wait to run again on the executor
        // the other tests share, seconds while they all start at once.
        scene.mirror.delay = 6
        let started = Date()
        let outcome = await scene.client.sync(force: true)
        let elapsed = Date().timeIntervalSince(started)
        #expect(outcome == .failed(.timeout), "got \(outcome) after \(elapsed) s")
        // A bound, not a benchmark: generous for a loaded machine, far below the 30 s unbounded.
        #expect(elapsed < 15, "took \(elapsed) s with syncTimeout 2 s")
        expectKept(scene.client, scene.good)
    }

    @Test("a 429's Retry-After is capped at a day: an absurd one (10 years) does not silence the device")
    func retryAfterIsBounded() async throws {
        let scene = try await Self.scene()
        let timestamp = ClientFixture.metadataPath(scene.fixture.demo, "timestamp.json")
        let real = scene.mirror[timestamp]
        scene.mirror[timestamp] = CannedResponse(status: 429, headers: [("Retry-After", "315360000")], body: Array("slow down".utf8))
        let now = Date()
        let outcome = await scene.client.sync(force: true, now: now)
        guard case .throttled(let until) = outcome else {
            Issue.record("expected .throttled, got \(outcome)")
            return
        }
        expectKept(scene.client, scene.good)
        scene.mirror[timestamp] = real
        #expect(until.timeIntervalSince(now) == 86_400, "throttled for \(until.timeIntervalSince(now) / 86_400) days")
        let asked = scene.mirror.requests.count
        let meanwhile = await scene.client.sync(force: true, now: now.addingTimeInterval(3600))
        guard case .throttled(let stillUntil) = meanwhile, abs(stillUntil.timeIntervalSince(until)) < 0.001 else {
            Issue.record("within the capped wait the answer is the remembered Retry-After; got \(meanwhile)")
            return
        }
        #expect(scene.mirror.requests.count == asked)
        let later = await scene.client.sync(force: true, now: now.addingTimeInterval(86_401))
        if case .throttled = later { Issue.record("a day later the device must check again; got \(later)") }
        #expect(scene.mirror.requests.count > asked, "a day later the device asks the server again")
    }
}
