import Foundation
internal import CNetwork
import PatchRegistry

/// Device reports are answered `202` the moment they are queued here and counted off the
/// request threads (`PatchService.countReports`): counting takes the registry's write lock
/// and an fsync, and a flood of reports that did that on the transport threads held up the
/// check path behind it (timestamp.json went from 0.6 ms to p50 1.4 s).
///
/// - The queue is bounded in events (`capacity`); past it a report is refused with 503 and
///   Retry-After, and PatchClient keeps its events for the next sync. A group leaves the queue
///   only once the counter holds the registry lock, so what waits still counts against it.
/// - The counter is a thread of its own, started when the queue goes from empty to not, at a
///   lower priority than the transport threads (`hp_lower_thread_priority`), ending when the
///   queue is empty.
/// - It takes at most `groupEvents` events per transaction and after each group leaves the
///   lock free for as long as the group held it, so a publish waits behind one group at most
///   and the counter holds the lock at most half the time, however long the flood.
final class ReportQueue: @unchecked Sendable {
    // @unchecked: every field is read and written under `condition`.
    private let condition = NSCondition()
    private var pending: [DeviceReport] = []
    private var events = 0
    private var draining = false

    /// Events queued, at most.
    let capacity: Int

    init(capacity: Int) { self.capacity = max(1, capacity) }

    /// Events per group, at most (a report's events are never split: a group of one report
    /// may hold up to 100).
    static let groupEvents = 1_000

    /// Queues `report` unless that would pass `capacity` events (false); starts a counter
    /// running `count` when none is.
    func enqueue(_ report: DeviceReport, count: @escaping @Sendable () -> Void) -> Bool {
        condition.lock()
        guard events + report.events.count <= capacity else { condition.unlock(); return false }
        pending.append(report)
        events += report.events.count
        let start = !draining
        draining = true
        condition.unlock()
        if start {
            let thread = Thread {
                _ = hp_lower_thread_priority(10)
                count()
            }
            thread.name = "hotpatch-reports"
            thread.start()
        }
        return true
    }

    /// The oldest queued reports, up to `groupEvents` events; nil when none is left, and then
    /// the counter is done (the next enqueue starts another).
    func nextGroup() -> [DeviceReport]? {
        condition.lock()
        defer { condition.unlock() }
        guard !pending.isEmpty else {
            draining = false
            condition.broadcast()
            return nil
        }
        var taken = 0, size = 0
        while taken < pending.count, taken == 0 || size + pending[taken].events.count <= ReportQueue.groupEvents {
            size += pending[taken].events.count
            taken += 1
        }
        let group = Array(pending.prefix(taken))
        pending.removeFirst(taken)
        events -= size
        return group
    }

    /// Returns once every report queued before the call is counted.
    func waitUntilIdle() {
        condition.lock()
        while draining { condition.wait() }
        condition.unlock()
    }

    /// Events waiting to be counted (`hotpatch_report_queue_events`).
    var queuedEvents: Int {
        condition.lock()
        defer { condition.unlock() }
        return events
    }
}

/// What the report counter counted since start, for `/metrics`.
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
