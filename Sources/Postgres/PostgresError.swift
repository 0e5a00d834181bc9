/// A failed PostgreSQL call, with everything needed to debug it. The database layer throws
/// only this; what a failure means to the registry is decided above it.
public struct PostgresError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The connection could not be made or was lost (bad connection string, no server,
        /// authentication refused, the server went away): only a new connection helps.
        /// `sqlState` is set when the server said why (57P01: terminated by an administrator).
        case connection
        /// The server refused a statement; `sqlState` says why.
        case server
        /// libpq or this wrapper refused before or after the server answered (a result it did
        /// not expect, a value that does not convert, a transaction already open).
        case client
    }

    public let kind: Kind
    /// The five-character SQLSTATE the server sent, e.g. "23505" for a unique violation.
    public let sqlState: String?
    public let message: String
    public let detail: String?
    public let sql: String?

    public init(kind: Kind, sqlState: String? = nil, message: String, detail: String? = nil, sql: String? = nil) {
        self.kind = kind
        self.sqlState = sqlState
        self.message = message
        self.detail = detail
        self.sql = sql
    }

    public var description: String {
        var text = "PostgreSQL \(kind) error"
        if let sqlState { text += " \(sqlState)" }
        text += ": \(message)"
        if let detail { text += " (\(detail))" }
        if let sql { text += " (in: \(sql.prefix(120)))" }
        return text
    }

    /// 23505: a row with that key exists (the twin of SQLite's constraint error).
    public var isUniqueViolation: Bool { sqlState == "23505" }
}
