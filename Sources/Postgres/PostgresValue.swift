/// A parameter or a column value. Columns of type int2/int4/int8 read as `.int`, bytea as
/// `.bytes`, SQL NULL as `.null`, and every other type as its text form (`t`/`f` for a
/// boolean, ISO 8601 for a timestamp).
public enum PostgresValue: Sendable, Equatable, Hashable {
    case int(Int64)
    case text(String)
    case bytes([UInt8])
    case null

    public var int: Int64? { if case .int(let v) = self { v } else { nil } }
    public var text: String? { if case .text(let v) = self { v } else { nil } }
    public var bytes: [UInt8]? { if case .bytes(let v) = self { v } else { nil } }
    public var isNull: Bool { self == .null }
}
