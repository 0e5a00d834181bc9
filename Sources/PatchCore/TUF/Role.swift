/// The four top-level TUF roles.
public enum Role: String, Sendable, CaseIterable, Codable {
    case root, targets, snapshot, timestamp
}
