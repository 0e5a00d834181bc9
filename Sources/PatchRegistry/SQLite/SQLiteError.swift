/// A failed SQLite call, with everything needed to debug it.
public struct SQLiteError: Error, Sendable, CustomStringConvertible {
    public let code: Int32
    public let message: String
    public let sql: String?

    public var description: String {
        if let sql { return "SQLite error \(code): \(message) (in: \(sql.prefix(120)))" }
        return "SQLite error \(code): \(message)"
    }

    /// SQLITE_FULL: the disk or the file size limit is reached.
    public var isDiskFull: Bool { code & 0xFF == 13 }
    /// SQLITE_BUSY / SQLITE_LOCKED: another process holds the write lock past the timeout.
    public var isBusy: Bool { code & 0xFF == 5 || code & 0xFF == 6 }
}
