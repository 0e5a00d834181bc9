import Foundation
@testable import HTTPClientKit
import Locking
import PatchCore
import Testing
@testable import PatchClient

/// `syncBlocking` runs the sync it starts on the caller's thread (`LentThread`), its transfers
/// included: the same deadlines, cancellation and joining as `sync()`, and one client's easy
/// handle still used by one transfer at a time.
@Suite("A blocking sync on the caller's thread")
struct BlockingSyncTests {
    /// `body` on a thread of its own, as patchctl's main thread is (never one of Swift
    /// concurrency's: blocking those could starve the work it waits for).
    static func onOwnThread<Value: Sendable>(_ body: @escaping @Sendable () -> Value) async -> Value {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: body()) }
        }
    }

    /// `body` on a thread of its own, with the seconds it took there: the time its caller
    /// waits, without this test task's own wait to run again on the executor that all the
    /// tests share (seconds, while they all start at once).
    static func timedOnOwnThread<Value: Sendable>(_ body: @escaping @Sendable () -> Value) async -> (Value, TimeInterval) {
        await onOwnThread {
            let started = Date()
            let value = body()
            return (value, Date().timeIntervalSince(started))
        }
    }

    @Test("syncBlocking installs the new patch, as sync() does")
    func installs() async throws {
        let scene = try await NetworkTests.scene()
        let outcome = await Self.onOwnThread { [client = scene.client] in client.syncBlocking(force: true) }
        #expect(outcome.updatedNumber == 2, "got \(outcome)")
        #expect(scene.client.currentPatch()?.number == 2)
    }

    @Test("syncTimeout bounds a blocking sync: answers of 6 s each with syncTimeout 2 s → .timeout long before the 30 s they add up to")
    func syncTimeout() async throws {
        let scene = try await NetworkTests.scene { $0.requestTimeout = 10; $0.syncTimeout = 2 }
        scene.mirror.delay = 6
        let (outcome, elapsed) = await Self.timedOnOwnThread { [client = scene.client] in client.syncBlocking(force: true) }
        #expect(outcome == .failed(.timeout), "got \(outcome) after \(elapsed) s")
        // A bound, not a benchmark: generous for a loaded machine, far below the 30 s unbounded.
        #expect(elapsed < 15, "took \(elapsed) s with syncTimeout 2 s")
        expectKept(scene.client, scene.good)
    }

    @Test("requestTimeout bounds a blocking sync's transfer: an answer after 40 s with requestTimeout 1 s → .timeout (or .network)")
    func requestTimeout() async throws {
        let scene = try await NetworkTests.scene { $0.requestTimeout = 1 }
        scene.mirror.delay = 40
        let (outcome, elapsed) = await Self.timedOnOwnThread { [client = scene.client] in client.syncBlocking(force: true) }
        switch outcome {
        case .failed(.timeout), .failed(.network): break
        default: Issue.record("expected .timeout or .network, got \(outcome)")
        }
        #expect(elapsed < 25, "took \(elapsed) s")
        expectKept(scene.client, scene.good)
    }

    @Test("an async sync() joins the blocking one under way and gets its outcome; cancelling the joiner cancels both")
    func joinedAndCancelled() async throws {
        let scene = try await NetworkTests.scene()
        let client = scene.client
        scene.mirror.delay = 0.3
        async let blocking = Self.onOwnThread { client.syncBlocking(force: true) }
        while client.inFlightSync == nil { try await Task.sleep(nanoseconds: 5_000_000) }
        let joined = await scene.client.sync(force: true)
        #expect(joined.updatedNumber == 2, "got \(joined)")
        #expect(await blocking == joined)

        // A third patch, slow to come: the joiner is cancelled while the blocking sync waits.
        try scene.fixture.publish(scene.fixture.demo)
        scene.mirror.serve(try scene.fixture.exported(scene.fixture.demo))
        scene.mirror.delay = 20
        async let slow = Self.onOwnThread { client.syncBlocking(force: true) }
        while client.inFlightSync == nil { try await Task.sleep(nanoseconds: 5_000_000) }
        let joiner = Task { await client.sync(force: true) }
        try await Task.sleep(nanoseconds: 200_000_000)
        joiner.cancel()
        let started = Date()
        #expect(await joiner.value == .failed(.cancelled))
        #expect(await slow == .failed(.cancelled))
        #expect(Date().timeIntervalSince(started) < 10, "the transfer under way ends when cancelled, not when the answer comes")
        #expect(scene.client.currentPatch()?.number == 2)
        scene.mirror.stop()
    }

    @Test("two transfers on one client at once, one on a lent thread and one through the queue, take turns on its one handle")
    func lentAndQueuedTransfersTakeTurns() async throws {
        let mirror = try Mirror()
        defer { mirror.stop() }
        mirror["/a"] = .ok(Array("first".utf8))
        mirror["/b"] = .ok(Array("second".utf8))
        mirror.delay = 0.3
        // Through a proxy that counts connections: transfers that overlapped would each need one.
        let proxy = try CountingProxy(to: mirror.port)
        let client = HTTPClient()
        let a = DownloadBody(limit: 64), b = DownloadBody(limit: 64)
        let lentURL = proxy.url.appendingPathComponent("a"), queuedURL = proxy.url.appendingPathComponent("b")
        async let lent: (Result<FetchHead, FetchError>, onLent: Bool) = Self.onOwnThread {
            let thread = LentThread()
            let box = Locked<(Result<FetchHead, FetchError>, onLent: Bool)?>(nil)
            _ = thread.start {
                let here = onLentThread()
                let result: Result<FetchHead, FetchError>
                do throws(FetchError) { result = .success(try await client.send("GET", lentURL, into: a)) } catch { result = .failure(error) }
                box.withLock { $0 = (result, here) }
            }
            thread.run()
            return box.withLock { $0 }!
        }
        #expect(!onLentThread())
        let queued = try await client.send("GET", queuedURL, into: b)
        let (result, wasOnLent) = await lent
        let first = try result.get()
        #expect(wasOnLent, "the transfer ran on the lent thread")
        #expect(first.status == 200 && a.received == Array("first".utf8))
        #expect(queued.status == 200 && b.received == Array("second".utf8))
        #expect(proxy.acceptedConnections == 1, "one handle, one transfer at a time, one connection")
    }
}
