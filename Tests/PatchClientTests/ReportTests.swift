import Foundation
import HTTPTransport
import PatchCore
import PatchServer
import Testing
@testable import PatchClient

/// Device reports, client side (docs/PROTOCOL.md "Device reports", the reports contract):
/// what is queued, what one sync sends over real loopback HTTP, and when the queue empties.
@Suite("PatchClient device reports")
struct ReportTests {
    static let reportsPath = "/v1/apps/demo/reports"
    static let accepted = CannedResponse(status: 202, headers: [("Content-Type", "application/json")],
                                         body: Array(#"{"accepted":2,"duplicates":0,"dropped":0}"#.utf8))

    /// A demo device with patch 1 published and served, reports answered by `answer`.
    static func scene(answer: CannedResponse? = accepted, change: (inout ClientConfiguration) -> Void = { _ in }) throws -> (ClientFixture, Mirror, PatchClient) {
        let fixture = try ClientFixture()
        try fixture.publish(fixture.demo)
        let mirror = try Mirror()
        mirror.serve(try fixture.exported(fixture.demo))
        mirror[reportsPath] = answer
        var configuration = try fixture.configuration(fixture.demo, server: mirror.url)
        change(&configuration)
        return (fixture, mirror, PatchClient(configuration: configuration))
    }

    /// The events of one reports request body, as JSON objects.
    static func events(_ request: HTTPRequest) throws -> [[String: JSON]] {
        let body = try JSONParser.parse(request.body)
        let events = try #require(body["events"]?.arrayValue)
        return try events.map { try #require($0.objectValue) }
    }

    static func ids(_ request: HTTPRequest) throws -> [String] {
        try events(request).map { try #require($0["id"]?.stringValue) }
    }

    @Test("a sync that installs sends one POST: downloaded and installed, in the contract's JSON, with X-Device-ID; a 202 empties the queue")
    func installIsReported() async throws {
        let (_, mirror, client) = try Self.scene()
        let now = try #require(TUFTime.parse("2026-12-01T10:00:00Z"))
        #expect(await client.sync(force: true, now: now).updatedNumber == 1)
        let posts = mirror.posts
        #expect(posts.count == 1)
        let post = try #require(posts.first)
        #expect(post.path == Self.reportsPath)
        #expect(post.header("X-Device-ID") == "device-0001")
        #expect(post.header("Content-Type") == "application/json")
        #expect(post.body.count <= 64 * 1024)
        let events = try Self.events(post)
        #expect(events.map { $0["type"]?.stringValue } == ["downloaded", "installed"])
        for event in events {
            #expect(Set(event.keys) == ["id", "type", "appVersion", "channel", "patch", "at"], "no reason outside refused/syncFailed")
            #expect(event["appVersion"] == .string("2.3"))
            #expect(event["channel"] == .string("production"))
            #expect(event["patch"] == .int(1))
            #expect(event["at"] == .string("2026-12-01T10:00:00Z"))
            let id = try #require(event["id"]?.stringValue)
            #expect((1...64).contains(id.count) && id.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") })
        }
        #expect(Set(try Self.ids(post)).count == 2, "each event has its own ID")
        #expect(client.pendingReports.isEmpty, "a 202 takes the events off the queue")
        // The queue is `{cache}/{app}/reports.json`, written by rename, beside the install's
        // secret, linked into place: no temporary file is left.
        let entries = try FileManager.default.contentsOfDirectory(atPath: client.configuration.appDirectory.path).sorted()
        #expect(entries == ["2.3", "device-secret", "metadata", "reports.json"])
    }

    @Test("the bundle download names the device; the receipt it brings back rides on every event about the patch, across a restart; a malformed one is not kept")
    func receipts() async throws {
        let receipt = "0123456789abcdef0123456789abcdef"
        let (_, mirror, client) = try Self.scene()
        for path in mirror.targetPaths { mirror[path]?.headers.append(("X-Patch-Receipt", receipt)) }
        let now = try #require(TUFTime.parse("2026-12-01T10:00:00Z"))
        #expect(await client.sync(force: true, now: now).updatedNumber == 1)
        #expect(mirror.targetRequests.map { $0.header("X-Device-ID") } == ["device-0001"])
        let sent = try Self.events(try #require(mirror.posts.first))
        #expect(sent.map { $0["type"]?.stringValue } == ["downloaded", "installed"])
        #expect(sent.allSatisfy { $0["receipt"] == .string(receipt) })
        // A launch and its confirmation, by a client started afresh over the same cache.
        let restarted = PatchClient(configuration: client.configuration)
        let launched = try #require(restarted.beginLaunch())
        #expect(restarted.confirmLaunch(launched))
        #expect(restarted.pendingReports.map(\.type) == [.launched, .confirmed])
        #expect(restarted.pendingReports.allSatisfy { $0.receipt == receipt })

        let (_, other, fresh) = try Self.scene()
        for path in other.targetPaths { other[path]?.headers.append(("X-Patch-Receipt", "not a receipt, some text a server made up")) }
        #expect(await fresh.sync(force: true).updatedNumber == 1)
        #expect(try Self.events(try #require(other.posts.first)).allSatisfy { $0["receipt"] == nil })
    }

    @Test("answered 503 or 429 the events stay queued (on disk, across a restart) and the resend carries the same IDs; a 400 drops them")
    func resendKeepsIDs() async throws {
        let (_, mirror, client) = try Self.scene(answer: CannedResponse(status: 503, headers: [], body: []))
        #expect(await client.sync(force: true).updatedNumber == 1)
        let first = try Self.ids(try #require(mirror.posts.first))
        #expect(client.pendingReports.map(\.id) == first)

        // The app restarts: a new client over the same cache finds the queue on disk.
        mirror[Self.reportsPath] = CannedResponse(status: 429, headers: [("Retry-After", "60")], body: [])
        let restarted = PatchClient(configuration: client.configuration)
        #expect(await restarted.sync(force: true) == .unchanged(restarted.currentPatch()))
        #expect(mirror.posts.count == 2, "one reports request per sync")
        #expect(try Self.ids(mirror.posts[1]) == first, "the resend names the same events by the same IDs")

        mirror[Self.reportsPath] = CannedResponse(status: 400, headers: [], body: Array(#"{"error":"bad_request","message":"no events"}"#.utf8))
        #expect(await restarted.sync(force: true) == .unchanged(restarted.currentPatch()))
        #expect(try Self.ids(mirror.posts[2]) == first)
        #expect(restarted.pendingReports.isEmpty, "a 400 will never be accepted: dropped")
    }

    @Test("a throttled sync sends nothing; a sync that could not reach the server queues syncFailed(network) and sends nothing")
    func noRequestNoReport() async throws {
        let (_, mirror, client) = try Self.scene(answer: CannedResponse(status: 503, headers: [], body: [])) { $0.minimumInterval = 3600 }
        let now = Date()
        #expect(await client.sync(now: now).updatedNumber == 1)
        #expect(mirror.posts.count == 1)
        if case .throttled = await client.sync(now: now.addingTimeInterval(60)) {} else { Issue.record("expected .throttled") }
        #expect(mirror.posts.count == 1, "a throttled sync made no request, so it sends no report")

        mirror.stop()
        let outcome = await client.sync(force: true, now: now.addingTimeInterval(120))
        if case .failed(.network) = outcome {} else { Issue.record("expected .network, got \(outcome)") }
        #expect(mirror.posts.count == 1)
        let last = try #require(client.pendingReports.last)
        #expect(last.type == .syncFailed)
        #expect(last.reason == "network")
        #expect(last.patch == nil)
        #expect(client.pendingReports.count == 3, "downloaded, installed (not taken by the 503) and the failure")
    }

    @Test("a bundle refused on its hash is reported as refused(hashMismatch) naming the patch, and sent by that sync")
    func refusalIsReported() async throws {
        let (fixture, mirror, client) = try Self.scene()
        #expect(await client.sync(force: true).updatedNumber == 1)
        let patch2 = try fixture.publish(fixture.demo)
        mirror.serve(try fixture.exported(fixture.demo))
        for path in ClientFixture.targetPaths(patch2) {
            var bytes = mirror.bytes(path)
            bytes[bytes.count / 2] ^= 0x01
            mirror.serve([path: bytes])
        }
        #expect(isHashMismatch(await client.sync(force: true).verificationError, what: "target 2.3/2/main.js"))
        let events = try Self.events(try #require(mirror.posts.last))
        #expect(events.count == 1)
        #expect(events.first?["type"] == .string("refused"))
        #expect(events.first?["patch"] == .int(2))
        #expect(events.first?["reason"] == .string("hashMismatch"))
    }

    @Test("a reports request still unanswered at the sync deadline does not turn an install into .timeout; the events stay queued")
    func slowReportsKeepTheOutcome() async throws {
        let (_, mirror, client) = try Self.scene { $0.syncTimeout = 15 }
        // The answer comes 300 s late (the mirror ends the wait when it stops); a sync bounded
        // by its 15 s deadline ends long before. The deadline is a dispatch timer, which fires
        // on time even when the suite's other tests keep Swift concurrency's pool busy, so it
        // must leave the install itself room on a loaded machine (a debug build beside the
        // whole suite took over 2 s to install). Generous, not a benchmark: 90 s still tells
        // a bounded sync from one waiting the 300 s.
        mirror.delay(Self.reportsPath, by: 300)
        let started = Date()
        let outcome = await client.sync(force: true)
        #expect(outcome.updatedNumber == 1, "got \(outcome)")
        #expect(Date().timeIntervalSince(started) < 90, "the deadline still bounds the sync")
        #expect(client.pendingReports.map(\.type) == [.downloaded, .installed])
        #expect(client.lastError == nil)
    }

    @Test("reporting off: nothing is recorded, queued or sent")
    func reportingOff() async throws {
        let (_, mirror, client) = try Self.scene { $0.reporting = false }
        #expect(await client.sync(force: true).updatedNumber == 1)
        let patch = try #require(client.beginLaunch())
        #expect(client.confirmLaunch(patch))
        #expect(mirror.posts.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: client.configuration.reportsURL.path))
    }

    @Test("the queue holds 500 events, oldest dropped first, and one request carries the oldest 100")
    func queueIsBounded() async throws {
        let (_, mirror, client) = try Self.scene()
        let queue = ReportQueue(url: client.configuration.reportsURL)
        let start = Date(timeIntervalSince1970: 1_700_000_000)
        // 500 at once, then 10 one at a time: the 10
        // oldest go either way. (510 single appends re-encode the whole queue 510 times, a
        // CPU-bound stretch that starved other tests' timers in a parallel run.)
        queue.append(contentsOf: (0..<500).map { n in
            ReportEvent(.launched, configuration: client.configuration, patch: 1, at: start.addingTimeInterval(TimeInterval(n)))
        })
        for n in 500..<510 {
            queue.append(ReportEvent(.launched, configuration: client.configuration, patch: 1, at: start.addingTimeInterval(TimeInterval(n))))
        }
        let all = ReportQueue(url: client.configuration.reportsURL).all
        #expect(all.count == 500)
        #expect(all.first?.at == TUFTime.format(start.addingTimeInterval(10)), "the 10 oldest were dropped")
        #expect(all.last?.at == TUFTime.format(start.addingTimeInterval(509)))

        // The sync's downloaded + installed push the two oldest out, then the oldest 100 go.
        #expect(await client.sync(force: true).updatedNumber == 1)
        let sent = try Self.ids(try #require(mirror.posts.first))
        #expect(sent == all.dropFirst(2).prefix(100).map(\.id))
        let left = client.pendingReports
        #expect(left.count == 400)
        #expect(left.suffix(2).map(\.type) == [.downloaded, .installed])
        #expect(Set(left.map(\.id)).isDisjoint(with: sent))
    }
}
