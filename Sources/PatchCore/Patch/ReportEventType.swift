/// What a device reports of a patch (docs/PROTOCOL.md, "Device reports"): the one list of
/// event types and their rules, which PatchClient writes and the registry reads.
public enum ReportEventType: String, Sendable, Codable, CaseIterable {
    case downloaded, installed, launched, confirmed, rolledBack, refused, syncFailed

    /// Refusals and sync failures say why, in a short code; the other events never do.
    public var takesReason: Bool { self == .refused || self == .syncFailed }
    /// Every event names its patch except a sync failure, which may have none.
    public var needsPatch: Bool { self != .syncFailed }
}
