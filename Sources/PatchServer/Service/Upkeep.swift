import Foundation
import HTTPTransport
import Synchronization

/// patchd's background work on one serial queue: picks up changes another process commits
/// to the registry (every second, and on PostgreSQL as soon as the change feed says so, from
/// a thread of its own that waits on it) and re-signs online roles before they expire (every
/// minute, or a third of the upkeep lease when shorter; the first pass right away so a
/// registry of a thousand apps does not delay start-up), then applies the guards and prunes old report ids (`reportUpkeep`) and expired device
/// tokens (`pushUpkeep`), and adds the app versions devices checked for (`flushAskedVersions`,
/// every instance, and once more at `stop()`). Webhook deliveries run on a queue of their own
/// every `--webhook-interval` s (`deliverWebhooks`).
///
/// `stop()` returns only once no pass is running. That matters at exit: `exit` runs
/// OpenSSL's and SQLite's clean-up handlers, and a re-signing pass still inside OpenSSL on
/// another thread then dereferences freed locks (patchd crashed with SIGSEGV on SIGTERM
/// this way when a pass was under way).
public final class Upkeep: @unchecked Sendable {
    // @unchecked: the timers are only touched by init and stop(), which the stopped flag
    // makes run once.
    private let queue = DispatchQueue(label: "patchd.upkeep")
    /// Webhook deliveries have their own queue: an attempt may wait its whole deadline on a
    /// slow receiver, and re-signing must not wait behind it.
    private let webhookQueue = DispatchQueue(label: "patchd.webhooks")
    private let timers: [DispatchSourceTimer]
    private let stopped = Atomic<Bool>(false)
    /// Signalled when the change-feed thread has returned (or at once when there is none).
    private let feedDone = DispatchSemaphore(value: 0)
    private let feedWait: Duration
    private let service: PatchService

    /// `refreshEvery` nil: every `min(60, upkeepLease / 3)` s, so the lease holder renews
    /// it well before its deadline.
    public init(service: PatchService, reloadEvery: Double = 1, refreshEvery: Double? = nil, feedWait: Duration = .milliseconds(250)) {
        self.feedWait = feedWait
        self.service = service
        let refreshEvery = refreshEvery ?? min(60, service.configuration.upkeepLease / 3)
        let reload = DispatchSource.makeTimerSource(queue: queue)
        reload.schedule(deadline: .now() + reloadEvery, repeating: reloadEvery)
        reload.setEventHandler { service.reloadChanged() }
        let refresh = DispatchSource.makeTimerSource(queue: queue)
        refresh.schedule(deadline: .now(), repeating: refreshEvery)
        let webhooks = DispatchSource.makeTimerSource(queue: webhookQueue)
        webhooks.schedule(deadline: .now() + service.configuration.webhooks.interval, repeating: service.configuration.webhooks.interval)
        timers = [reload, refresh, webhooks]
        webhooks.setEventHandler { [weak self] in service.deliverWebhooks(while: { self?.stopped.load(ordering: .relaxed) == false }) }
        refresh.setEventHandler { [weak self] in
            service.refreshExpiring(while: { self?.stopped.load(ordering: .relaxed) == false })
            service.reportUpkeep()
            service.pushUpkeep()
            service.flushAskedVersions()
        }
        timers.forEach { $0.resume() }
        if let feed = service.changeFeed {
            // Its own thread: the wait blocks in poll(2), and the serial queue must stay free
            // for the re-signing pass. The reload runs on the queue, so it never overlaps the
            // timer's; `feedWait` bounds how long stop() waits for this thread.
            let thread = Thread { [self] in
                while !stopped.load(ordering: .relaxed) {
                    if feed.wait(timeout: feedWait), !stopped.load(ordering: .relaxed) {
                        queue.async { service.reloadChanged() }
                    }
                }
                feedDone.signal()
            }
            thread.name = "patchd.changes"
            thread.start()
        } else {
            feedDone.signal()
        }
    }

    /// Cancels the timers, cuts a re-signing pass short after the app it is on, and waits
    /// for the pass under way (if any) to return. Idempotent.
    public func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        timers.forEach { $0.cancel() }
        feedDone.wait()
        // The queue is serial: this block runs after whatever handler is executing now.
        queue.sync {}
        webhookQueue.sync {}
        // What this instance counted since the last pass is kept, not lost with the process.
        service.flushAskedVersions()
        // No pass runs any more: another instance may take the lease at its next pass.
        service.releaseUpkeepLease()
    }
}
