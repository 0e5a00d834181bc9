/// What a device reports of a patch (docs/PROTOCOL.md, "Device reports"): the one list of
/// event types and their rules, which PatchClient writes and the registry reads.
public enum ReportEventType: String, Sendable, Codable, CaseIterable {
    case downloaded, installed, launched, confirmed, rolledBack, refused, syncFailed

    /// Refusals and sync failures say why, in a short code; the other events never do.
    public var takesReason: Bool { self == .refused || self == .syncFailed }
    /// Every event names its patch except a sync failure, which may have none.
    public var needsPatch: Bool { self != .syncFailed }
    /// Counts only with the patch's receipt (patchd's `X-Patch-Receipt`, got with the bundle):
    /// every event about a patch but a refusal, which may follow a download that failed
    /// before its receipt was kept.
    public var needsReceipt: Bool { needsPatch && self != .refused }
}
