import Foundation
import HTTPTransport

/// Work an anonymous peer causes, taken off the event loops: device reports (issue 20,
/// parsed by one thread and answered `202` once queued, counted by another) and device-token
/// registrations (issue 43, answered once written: `HTTPPromise`). A write under the registry
/// lock, with its commit and fsync, on a transport thread held up every request of that
/// thread behind it (a report flood took timestamp.json from 0.6 ms to p50 1.4 s; token
/// refreshes its p99 from 1.5 to 215 ms), and so, less, did parsing a report there.
///
/// - The queue is bounded in `capacity` units (a report counts its events, a registration
///   one); past it `enqueue` says no and the route answers 503 with Retry-After. A group
///   leaves the queue only once the writer holds the registry lock (`drain`'s `take`), so
///   what waits for the lock still counts against it.
/// - The writer is a thread of its own, started when the queue goes from empty to not, at a
///   lower priority than the transport threads and with a short scheduler slice
///   (`ThreadTuning.lowerPriority`), ending when the queue is empty. The short slice is what
///   keeps the check path's tail beside a flood: at nice 10 alone, a transport thread woken
///   while the writer ran waited out the writer's default slice (perf sched on patchd's one
///   CPU in bench/reports_flood.py: p99 0.93 ms of such waits; 0.3–0.5 ms with a 100 µs slice).
/// - It takes at most `groupUnits` units per transaction and after each group leaves the
///   lock free for as long as the group held it, so a publish waits behind one group at most
///   and a writer holds the lock at most half the time, however long the flood.
final class WriteQueue<Item: Sendable>: @unchecked Sendable {
    // @unchecked: every field below is read and written under `condition`. A condition, not
    // `Locked`: `waitUntilIdle` sleeps on it until the writer has drained the queue.
    private let condition = NSCondition()
    private var pending: [Item] = []
    private var units = 0
    private var draining = false
    private var hurrying = false

    /// The writer thread's name (15 bytes at most reach the kernel).
    let name: String
    /// The scheduler slice a writer asks for, in nanoseconds (`ThreadTuning.lowerPriority`).
    static var slice: UInt64 { 100_000 }

    /// Units queued, at most.
    let capacity: Int
    /// Units per group, at most (an item is never split: a group of one may hold more).
    let groupUnits: Int
    private let unitsOf: @Sendable (Item) -> Int

    init(name: String, capacity: Int, groupUnits: Int, unitsOf: @escaping @Sendable (Item) -> Int = { _ in 1 }) {
        self.name = name
        self.capacity = max(1, capacity)
        self.groupUnits = max(1, groupUnits)
        self.unitsOf = unitsOf
    }

    /// Queues `item` unless that would pass `capacity` (false); starts a writer thread
    /// running `writer` when none is. `writer` writes by `drain`.
    func enqueue(_ item: Item, writer: @escaping @Sendable () -> Void) -> Bool {
        let size = unitsOf(item)
        condition.lock()
        guard units + size <= capacity else { condition.unlock(); return false }
        pending.append(item)
        units += size
        let start = !draining
        draining = true
        condition.unlock()
        if start {
            let thread = Thread { [name] in
                ThreadTuning.name(name)
                ThreadTuning.lowerPriority(nice: 10, sliceNanoseconds: WriteQueue.slice)
                writer()
            }
            thread.name = name
            thread.start()
        }
        return true
    }

    /// The writer's loop: `write` is called with `take`, which it calls once it holds the lock
    /// the group is written under, and returns whether `take` gave a group; nil from `take`
    /// means the queue is empty and this writer is done (the next enqueue starts another).
    /// `paced`: between groups the lock is left free for as long as the group held it (a
    /// writer that takes no lock, the report parser, does not pause).
    func drain(paced: Bool = true, _ write: (_ take: () -> [Item]?) -> Bool) {
        while true {
            let started = IPRateLimiter.monotonicTime()
            guard write({ nextGroup() }) else { return }
            let held = IPRateLimiter.monotonicTime() - started
            if paced, held > 0, !isHurrying { usleep(UInt32(min(held, 0.5) * 1_000_000)) }
        }
    }

    /// The oldest queued items, up to `groupUnits` units; nil when none is left, and then the
    /// writer is done.
    private func nextGroup() -> [Item]? {
        condition.lock()
        defer { condition.unlock() }
        guard !pending.isEmpty else {
            draining = false
            condition.broadcast()
            return nil
        }
        var taken = 0, size = 0
        while taken < pending.count, taken == 0 || size + unitsOf(pending[taken]) <= groupUnits {
            size += unitsOf(pending[taken])
            taken += 1
        }
        let group = Array(pending.prefix(taken))
        pending.removeFirst(taken)
        units -= size
        return group
    }

    /// Returns once every item queued before the call is written. `hurry`: the writer stops
    /// leaving the lock free between groups (patchd's stop: no request waits any more).
    func waitUntilIdle(hurry: Bool = false) {
        condition.lock()
        if hurry { hurrying = true }
        while draining { condition.wait() }
        condition.unlock()
    }

    /// Whether the writer should write back to back (`waitUntilIdle(hurry: true)`).
    private var isHurrying: Bool {
        condition.lock()
        defer { condition.unlock() }
        return hurrying
    }

    /// Units waiting to be written (`/metrics`).
    var queuedUnits: Int {
        condition.lock()
        defer { condition.unlock() }
        return units
    }
}
