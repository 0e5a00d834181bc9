import Foundation
import Synchronization
import Testing
import Postgres

@Suite("PostgreSQL LISTEN/NOTIFY", .enabled(if: TestDatabase.isAvailable, TestDatabase.skipReason))
struct PostgresNotifyTests {
    @Test("a NOTIFY sent on one connection arrives on another with its channel, payload and sender (latency printed)")
    func notifyArrivesOnAnotherConnection() throws {
        let listener = try TestDatabase.connect()
        let sender = try TestDatabase.connect()
        let channel = TestDatabase.uniqueName("changes")
        try listener.listen(channel)
        var latencies: [Duration] = []
        for i in 0..<20 {
            let start = ContinuousClock.now
            try sender.notify(channel, payload: "demo/\(i)")
            let notification = try #require(try listener.nextNotification(timeout: .seconds(10)), "notification \(i)")
            latencies.append(ContinuousClock.now - start)
            #expect(notification == PostgresNotification(channel: channel, payload: "demo/\(i)", senderPID: sender.backendPID))
        }
        latencies.sort()
        print("NOTIFY → received on another connection, 20 sends: median \(TestDatabase.milliseconds(latencies[10])), max \(TestDatabase.milliseconds(latencies[19]))")
    }

    @Test("a listener blocked in poll wakes when another thread sends; nothing is delivered twice")
    func waitingListenerWakes() throws {
        let listener = try TestDatabase.connect()
        let channel = TestDatabase.uniqueName("wake")
        try listener.listen(channel)
        let url = try #require(TestDatabase.url)
        let sentAt = Mutex<ContinuousClock.Instant?>(nil)
        let failure = Mutex<String?>(nil)
        let thread = Thread {
            do {
                let sender = try PostgresConnection(url)
                Thread.sleep(forTimeInterval: 0.3)
                sentAt.withLock { $0 = .now }
                try sender.notify(channel, payload: "wake up")
            } catch { failure.withLock { $0 = "\(error)" } }
        }
        let waitStart = ContinuousClock.now
        thread.start()
        let notification = try listener.nextNotification(timeout: .seconds(20))
        let received = ContinuousClock.now
        #expect(failure.withLock { $0 } == nil)
        #expect(notification?.payload == "wake up", "arrived before the 20 s timeout")
        if let sent = sentAt.withLock({ $0 }) {
            print("NOTIFY → listener waiting in poll woke after \(TestDatabase.milliseconds(received - sent)) (waited \(TestDatabase.milliseconds(received - waitStart)) in all)")
        }
        #expect(try listener.nextNotification(timeout: .milliseconds(200)) == nil)
    }

    @Test("nothing sent: the wait ends empty once the timeout has passed, not before")
    func timeoutReturnsNil() throws {
        let listener = try TestDatabase.connect()
        try listener.listen(TestDatabase.uniqueName("quiet"))
        let start = ContinuousClock.now
        #expect(try listener.nextNotification(timeout: .milliseconds(300)) == nil)
        #expect(ContinuousClock.now - start >= .milliseconds(300))
        #expect(try listener.nextNotification(timeout: .zero) == nil)
    }

    @Test("a NOTIFY inside a transaction arrives only after COMMIT, and never after ROLLBACK")
    func notifyFollowsTheTransaction() throws {
        let listener = try TestDatabase.connect()
        let sender = try TestDatabase.connect()
        let channel = TestDatabase.uniqueName("tx")
        try listener.listen(channel)

        struct Abandon: Error {}
        #expect(throws: Abandon.self) {
            try sender.transaction {
                try sender.notify(channel, payload: "rolled back")
                throw Abandon()
            }
        }
        try sender.transaction {
            try sender.notify(channel, payload: "committed")
            #expect(try listener.nextNotification(timeout: .milliseconds(300)) == nil, "held until COMMIT")
        }
        #expect(try listener.nextNotification(timeout: .seconds(10))?.payload == "committed")
        #expect(try listener.nextNotification(timeout: .milliseconds(200)) == nil, "the rolled-back one never came")
    }

    @Test("a listener whose server connection is terminated while it waits gets a connection error, not a silent timeout")
    func listenerConnectionLost() throws {
        let listener = try TestDatabase.connect()
        let admin = try TestDatabase.connect()
        try listener.listen(TestDatabase.uniqueName("lost"))
        try admin.query("SELECT pg_terminate_backend($1::int4)", [.int(Int64(listener.backendPID))])
        let error = try #require(throws: PostgresError.self) { try listener.nextNotification(timeout: .seconds(10)) }
        #expect(error.kind == .connection, "\(error)")
    }

    @Test("a listener hears only its channels, names that need quoting work, and UNLISTEN stops delivery")
    func channelsAndUnlisten() throws {
        let listener = try TestDatabase.connect()
        let sender = try TestDatabase.connect()
        let channel = "app \"demo\"; 2.3 " + TestDatabase.uniqueName("q")
        try listener.listen(channel)
        try sender.notify(TestDatabase.uniqueName("other"), payload: "not for us")
        try sender.notify(channel, payload: "for us")
        #expect(try listener.nextNotification(timeout: .seconds(10)) == PostgresNotification(channel: channel, payload: "for us", senderPID: sender.backendPID))
        try listener.unlisten(channel)
        try sender.notify(channel, payload: "after unlisten")
        #expect(try listener.nextNotification(timeout: .milliseconds(300)) == nil)
    }
}
