import Foundation

/// The storage seam: what the registry asks of a database, with SQLite (`SQLiteStore`, one
/// file under `--data`) and PostgreSQL (`PostgresStore`, `--database postgres://…`) behind it.
/// The registry writes its SQL once, with `?` placeholders and the types and clauses both
/// databases share (`ON CONFLICT`, `COALESCE`, `||`); the few statements that differ ask
/// `dialect`. Every method throws `StorageError` only: what a failure means to the registry is
/// decided above, in `Registry.write` / `read`.
///
/// Not Sendable: one user at a time (the registry is used under one lock).
protocol SQLStore: AnyObject {
    var dialect: SQLDialect { get }

    /// One or more statements without parameters or rows.
    func execute(_ sql: String) throws(StorageError)
    /// One statement with `?` parameters that returns no rows.
    func run(_ sql: String, _ values: [SQLValue]) throws(StorageError)
    /// All rows of one statement, each mapped by `row`.
    func query<T>(_ sql: String, _ values: [SQLValue], row: (SQLRow) throws(StorageError) -> T) throws(StorageError) -> [T]
    /// One write inside a transaction whose result and error nothing waits on: SQLite runs it
    /// now; PostgreSQL sends it with the transaction's next statement (or its COMMIT), in
    /// that statement's round trip, and its failure is what that statement throws (the
    /// transaction then rolls back as for any error). Not counted by `changes`.
    func runInTransaction(_ sql: String, _ values: [SQLValue]) throws(StorageError)
    /// A statement run many times with different values (a batch of reports).
    func prepare(_ sql: String) throws(StorageError) -> any SQLStatement
    /// Rows changed by the last `run`.
    var changes: Int { get }
    /// Calls made to the database so far: statements on SQLite (each `execute`, `run` and
    /// `query`), round trips to the server on PostgreSQL (a pipeline of several statements is
    /// one). What a publish costs is counted in tests with this, never timed.
    var calls: Int { get }

    /// Runs `body` as the only writer: SQLite's BEGIN IMMEDIATE; on PostgreSQL a transaction
    /// holding the registry's advisory lock, so every read in `body` (the next patch number,
    /// the audit head, the root that signs) stays true until it commits, whichever instance
    /// writes. Any error rolls back and is rethrown as it was.
    func transaction<T>(_ body: () throws -> T) throws -> T
    /// Runs `body` on one consistent snapshot (SQLite's deferred read in WAL mode; PostgreSQL's
    /// REPEATABLE READ READ ONLY).
    func readTransaction<T>(_ body: () throws -> T) throws -> T
    var inTransaction: Bool { get }

    /// A value that moves whenever anything is committed (by this process or another): the
    /// poll patchd makes every second to notice changes it did not make.
    func dataVersion() throws(StorageError) -> Int64

    /// Throws `.replaced` when what this connection writes is no longer what its path names
    /// (a SQLite file deleted, or another file moved over it): every commit from then on
    /// would be acknowledged and lost. One `stat`; `transaction` checks it before COMMIT.
    func checkNotReplaced() throws(StorageError)
}

extension SQLStore {
    /// A database server has no path to lose.
    func checkNotReplaced() throws(StorageError) {}

    func runInTransaction(_ sql: String, _ values: [SQLValue]) throws(StorageError) { try run(sql, values) }

    func run(_ sql: String) throws(StorageError) { try run(sql, []) }
    func query<T>(_ sql: String, row: (SQLRow) throws(StorageError) -> T) throws(StorageError) -> [T] {
        try query(sql, [], row: row)
    }
}

protocol SQLStatement {
    /// Runs the statement with `values`, to the end.
    func run(_ values: [SQLValue]) throws(StorageError)
}

enum SQLDialect: Sendable {
    case sqlite
    case postgres
}

enum SQLValue: Sendable, Equatable {
    case int(Int64)
    case text(String)
    case blob([UInt8])
    case null
}

/// One row, copied out of the database. The accessors read a column as the registry stored
/// it, whichever way the backend hands it back (PostgreSQL returns `SUM` of integers as
/// numeric text, SQLite may hand back an integer for a text column that holds digits).
struct SQLRow {
    let values: [SQLValue]

    func int(_ column: Int) -> Int64 {
        switch values[column] {
        case .int(let v): return v
        case .text(let s): return Int64(s) ?? 0
        case .blob, .null: return 0
        }
    }

    func text(_ column: Int) -> String {
        switch values[column] {
        case .text(let s): return s
        case .int(let v): return String(v)
        case .blob(let b): return String(decoding: b, as: UTF8.self)
        case .null: return ""
        }
    }

    func optionalText(_ column: Int) -> String? {
        values[column] == .null ? nil : text(column)
    }

    func blob(_ column: Int) -> [UInt8] {
        switch values[column] {
        case .blob(let b): return b
        case .text(let s): return Array(s.utf8)
        case .int, .null: return []
        }
    }
}

/// A failed storage call, from either backend, with what the registry decides on.
public struct StorageError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The disk or the database's size limit is full.
        case diskFull
        /// Another writer held the lock past the timeout.
        case busy
        /// The database could not be reached or the connection was lost.
        case unavailable
        /// A constraint refused the change (a unique key, a trigger, a check).
        case constraint
        /// The database file is no longer the one at its path (deleted, or another file
        /// moved over it): nothing more may be written to it.
        case replaced
        case other
    }

    public let kind: Kind
    /// "SQLite 19" or "PostgreSQL 23505": the backend and its own code.
    public let code: String
    public let message: String
    public let sql: String?

    public var description: String {
        if let sql { return "\(code): \(message) (in: \(sql.prefix(120)))" }
        return "\(code): \(message)"
    }

    public var isDiskFull: Bool { kind == .diskFull }
    public var isBusy: Bool { kind == .busy }
}
