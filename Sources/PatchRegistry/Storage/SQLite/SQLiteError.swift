/// A failed SQLite call, with everything needed to debug it. It never leaves `SQLiteStore`:
/// `storageError` is the one mapping to the seam's error.
struct SQLiteError: Error, Sendable, CustomStringConvertible {
    let code: Int32
    let message: String
    let sql: String?

    var description: String {
        if let sql { return "SQLite error \(code): \(message) (in: \(sql.prefix(120)))" }
        return "SQLite error \(code): \(message)"
    }

    var storageError: StorageError {
        let kind: StorageError.Kind
        switch code & 0xFF {
        case 13: kind = .diskFull           // SQLITE_FULL
        case 5, 6: kind = .busy             // SQLITE_BUSY, SQLITE_LOCKED
        case 19: kind = .constraint         // SQLITE_CONSTRAINT (also RAISE(ABORT) in a trigger)
        case 14, 10, 26: kind = .unavailable // SQLITE_CANTOPEN, SQLITE_IOERR, SQLITE_NOTADB
        default: kind = .other
        }
        return StorageError(kind: kind, code: "SQLite error \(code)", message: message, sql: sql)
    }
}
