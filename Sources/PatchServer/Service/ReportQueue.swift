import PatchRegistry
import Synchronization

/// Group commit for device reports. Every report request waits for the registry lock anyway;
/// whichever gets it first takes every report queued by then and counts them all in one
/// transaction, and the others find their outcome ready when their turn comes (or count the next group). Under a flood
/// the registry sees one commit (one fsync) per group instead of one per request, so a
/// publish waiting for the lock waits behind at most one group. The queue is bounded by the
/// requests in flight: each one holds a transport thread until it is answered.
final class ReportQueue: Sendable {
    private struct State {
        var next = 0
        var pending: [(ticket: Int, report: DeviceReport)] = []
        var done: [Int: Result<ReportOutcome, RegistryError>] = [:]
    }

    private let state = Mutex(State())

    func enqueue(_ report: DeviceReport) -> Int {
        state.withLock { state in
            state.next += 1
            state.pending.append((state.next, report))
            return state.next
        }
    }

    /// The outcome of `ticket` once a group counted it (removed as it is taken).
    func take(_ ticket: Int) -> Result<ReportOutcome, RegistryError>? {
        state.withLock { $0.done.removeValue(forKey: ticket) }
    }

    /// Reports per group, at most: the lock a publish waits for is held for one group, so
    /// a group's size bounds that wait (32 × 100 events).
    static let groupLimit = 32

    /// The oldest queued reports, at most `groupLimit`, to count as one group.
    func drain() -> [(ticket: Int, report: DeviceReport)] {
        state.withLock { state in
            let group = Array(state.pending.prefix(ReportQueue.groupLimit))
            state.pending.removeFirst(group.count)
            return group
        }
    }

    func finish(_ tickets: [Int], _ results: [Result<ReportOutcome, RegistryError>]) {
        state.withLock { state in
            for (ticket, result) in zip(tickets, results) { state.done[ticket] = result }
        }
    }
}
