import HTTPTransport
import PatchRegistry

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
