import Foundation
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
        var configuration = try fixture.configuration(fixture.demo, server: mirror.url)
        configure(&configuration)
        let client = PatchClient(configuration: configuration)
        let good = try await installGood(client, number: 1, script: ClientFixture.script(fixture.demo, 1))
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
    @Test("a server that answers after 3 s with requestTimeout 1 s → .timeout (or .network)")
    func slowServerTimesOut() async throws {
        let scene = try await Self.scene { $0.requestTimeout = 1 }
        scene.mirror.delay = 3
        let started = Date()
        let outcome = await scene.client.sync(force: true)
        let elapsed = Date().timeIntervalSince(started)
        switch outcome {
        case .failed(.timeout), .failed(.network): break
        default: Issue.record("expected .timeout or .network, got \(outcome)")
        }
        #expect(elapsed < 2.9, "gave up before the 3 s answer came (took \(elapsed) s)")
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

    @Test("syncTimeout bounds a whole sync: five answers of 1 s each with syncTimeout 2 s → .timeout within about 2 s")
    func syncTimeoutBoundsTheWholeSync() async throws {
        let scene = try await Self.scene { $0.requestTimeout = 5; $0.syncTimeout = 2 }
        scene.mirror.delay = 1
        let started = Date()
        let outcome = await scene.client.sync(force: true)
        let elapsed = Date().timeIntervalSince(started)
        withKnownIssue("""
            ClientConfiguration.syncTimeout ("the longest one sync may take, all requests included") is only passed to \
            URLSession as each request's timeoutIntervalForResource: nothing bounds the sync as a whole, and on Linux \
            the resource timeout is not applied at all. Five answers of 1 s each take ~5 s and the sync succeeds.
            """) {
            #expect(outcome == .failed(.timeout), "got \(outcome) after \(elapsed) s")
            #expect(elapsed < 3.5, "took \(elapsed) s with syncTimeout 2 s")
        }
    }

    @Test("a 429's Retry-After is capped: an absurd one (10 years) does not silence the device for 10 years")
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
        let later = await scene.client.sync(force: true, now: now.addingTimeInterval(31 * 86_400))
        withKnownIssue("""
            PatchClient stores any Retry-After of a 429 as is (TimeInterval(header), no upper bound) and honours it even \
            for sync(force: true). One unauthenticated answer — a hostile network or CDN, no key needed — with \
            Retry-After: 315360000 stops the device from checking for 10 years, so it never sees a revocation or a fix, \
            and reports .throttled instead of a failure. patchd itself never asks for more than 30 days (ThrottleRules).
            """) {
            #expect(until.timeIntervalSince(now) <= 30 * 86_400, "throttled for \(until.timeIntervalSince(now) / 86_400) days")
            #expect(later.updatedNumber == 2, "31 days later the device checks again and installs patch 2; got \(later)")
        }
    }
}
