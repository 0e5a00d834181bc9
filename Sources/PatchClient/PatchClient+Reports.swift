import Foundation
import PatchCore

/// Device reports (docs/PROTOCOL.md, "Device reports"): events are queued on disk as they
/// happen and sent at most once per sync, removed only once the server took them.
extension PatchClient {
    /// The events waiting to be sent, oldest first.
    public var pendingReports: [ReportEvent] { reports.all }

    /// `receipt`: the server's receipt for `patch`, which events about a patch need to count
    /// (the caller has it: the state is locked where most events happen).
    func record(_ type: ReportEvent.Kind, patch: Int?, reason: String? = nil, receipt: String? = nil, now: Date) {
        guard configuration.reporting else { return }
        reports.append(ReportEvent(type, configuration: configuration, patch: patch, reason: reason, receipt: receipt, at: now))
    }

    func record(failure error: PatchClientError, patch: Int?, now: Date) {
        guard let (type, reason) = ReportReason.event(for: error, patch: patch) else { return }
        record(type, patch: patch, reason: reason, now: now)
    }

    /// One request with the oldest events. A 202 takes them; a 400 will never take them, so
    /// they are dropped too; anything else (no answer, 429, a 503 from a full report queue,
    /// 5xx) leaves them for the next sync.
    func sendReports() async {
        guard configuration.reporting else { return }
        let batch = reports.pending()
        guard !batch.isEmpty, let body = try? ReportQueue.encode(batch) else { return }
        guard let answer = try? await repository.post(DeviceRoutes.reports, Array(body), headers: ["X-Device-ID": configuration.deviceID]) else { return }
        if answer.head.status == 202 || answer.head.status == 400 { reports.remove(Set(batch.map(\.id))) }
    }

    /// The `message` of patchd's JSON error body (`{"error": …, "message": …}`), without
    /// control characters and at most `PatchClientError.maxServerMessage` characters: it is
    /// shown to people, and a hostile server must not fill a log with it.
    static func serverMessage(_ body: [UInt8]) -> String? {
        guard !body.isEmpty, let json = try? JSONParser.parse(body, maxDepth: 4, maxLength: 64 * 1024),
            let message = json["message"]?.stringValue else { return nil }
        let printable = String(String.UnicodeScalarView(message.unicodeScalars.filter { !$0.properties.isNoncharacterCodePoint && $0.value >= 0x20 && $0.value != 0x7F }))
        let bounded = String(printable.prefix(PatchClientError.maxServerMessage))
        return bounded.isEmpty ? nil : bounded
    }
}
