import Foundation
import PatchRegistry
import Synchronization

/// Device reports are answered `202` the moment they are queued here and counted off the
/// request threads by one worker (`PatchService.countReports`): counting takes the registry's
/// write lock and an fsync, and a flood of reports that did that on the transport threads held
/// up the check path behind it (timestamp.json went from 0.6 ms to p50 1.4 s). The queue is
/// bounded in events (`capacity`); past it a report is refused with 503 and Retry-After, and
/// PatchClient keeps its events for the next sync. The worker takes up to `groupLimit`
/// reports per transaction, so a publish waiting for the lock waits behind one group.
final class ReportQueue: Sendable {
    private struct State {
        var pending: [DeviceReport] = []
        var events = 0
        /// Whether a worker is draining: the enqueue that finds none starts one.
        var draining = false
    }

    /// Events queued, at most.
    let capacity: Int
    private let state = Mutex(State())

    init(capacity: Int) { self.capacity = max(1, capacity) }

    enum Enqueued { case startWorker, queued, full }

    /// Queues `report` unless that would pass `capacity` events; `.startWorker` when no worker
    /// is draining (the caller starts one).
    func enqueue(_ report: DeviceReport) -> Enqueued {
        state.withLock { state in
            guard state.events + report.events.count <= capacity else { return .full }
            state.pending.append(report)
            state.events += report.events.count
            if state.draining { return .queued }
            state.draining = true
            return .startWorker
        }
    }

    /// Reports per group, at most: the lock a publish waits for is held for one group, so
    /// a group's size bounds that wait (32 × 100 events).
    static let groupLimit = 32

    /// The oldest queued reports, at most `groupLimit`; nil when none is left, and then the
    /// worker is done (the next enqueue starts another).
    func nextGroup() -> [DeviceReport]? {
        state.withLock { state in
            guard !state.pending.isEmpty else {
                state.draining = false
                return nil
            }
            let group = Array(state.pending.prefix(ReportQueue.groupLimit))
            state.pending.removeFirst(group.count)
            state.events -= group.reduce(0) { $0 + $1.events.count }
            return group
        }
    }

    /// Events waiting to be counted (`hotpatch_report_queue_events`).
    var queuedEvents: Int { state.withLock { $0.events } }
}

/// What the report worker counted since start, for `/metrics`.
final class ReportTally: Sendable {
    let accepted = AtomicCounter()
    let duplicates = AtomicCounter()
    let dropped = Dictionary(uniqueKeysWithValues: ReportDrop.allCases.map { ($0, AtomicCounter()) })
    /// Reports refused with 503 because the queue was full.
    let refused = AtomicCounter()
    /// Groups that could not be counted at all (the registry failed): their events are lost.
    let failedEvents = AtomicCounter()

    func add(_ outcome: ReportOutcome) {
        accepted.add(outcome.accepted)
        duplicates.add(outcome.duplicates)
        for (reason, count) in outcome.dropped { dropped[reason]?.add(count) }
    }

    func render(queued: Int) -> String {
        var out = "# HELP hotpatch_report_events_total Report events by what counting made of them.\n# TYPE hotpatch_report_events_total counter\n"
        out += "hotpatch_report_events_total{outcome=\"accepted\"} \(accepted.load)\n"
        out += "hotpatch_report_events_total{outcome=\"duplicate\"} \(duplicates.load)\n"
        for reason in ReportDrop.allCases { out += "hotpatch_report_events_total{outcome=\"dropped\",reason=\"\(reason.rawValue)\"} \(dropped[reason]!.load)\n" }
        out += "hotpatch_report_events_total{outcome=\"failed\"} \(failedEvents.load)\n"
        out += "# HELP hotpatch_reports_refused_total Reports refused with 503 because the report queue was full.\n# TYPE hotpatch_reports_refused_total counter\nhotpatch_reports_refused_total \(refused.load)\n"
        out += "# HELP hotpatch_report_queue_events Report events waiting to be counted.\n# TYPE hotpatch_report_queue_events gauge\nhotpatch_report_queue_events \(queued)\n"
        return out
    }
}
