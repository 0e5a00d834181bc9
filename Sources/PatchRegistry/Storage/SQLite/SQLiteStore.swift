import Foundation
internal import CSQLite3

typealias SQLiteConnection = OpaquePointer
typealias SQLiteStatementHandle = OpaquePointer

/// One SQLite connection (the registry file under `--data`), owned by this object and closed
/// in `deinit`. Its own calls fail with `SQLiteError`; `mapped` turns that into the seam's
/// `StorageError` at every method the registry calls.
final class SQLiteStore: SQLStore {
    private let handle: SQLiteConnection
    let path: String
    let dialect = SQLDialect.sqlite
    /// The file this connection opened: while the path names another file or none (deleted,
    /// or another moved over it), a commit here would be acknowledged and then lost.
    private let opened: FileNode

    /// `create: false` opens only a file that is there (SQLite would create a missing one).
    init(path: String, synchronous: String = "FULL", create: Bool = true) throws(StorageError) {
        if create { SQLiteStore.createPrivately(path) }
        var handle: SQLiteConnection?
        let flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &handle, flags, nil)
        guard rc == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            if let handle { sqlite3_close_v2(handle) }
            throw SQLiteError(code: rc, message: "\(message): \(path)", sql: nil).storageError
        }
        // The identity is read from the path after the open: SQLite's own check (against the
        // inode of the descriptor it holds) proves they are the same file.
        var moved: Int32 = 0
        let identity = FileNode(path: path)
        if identity != nil { sqlite3_file_control(handle, "main", SQLITE_FCNTL_HAS_MOVED, &moved) }
        guard let identity, moved == 0 else {
            sqlite3_close_v2(handle)
            throw SQLiteStore.replaced(path)
        }
        self.handle = handle
        self.path = path
        self.opened = identity
        sqlite3_extended_result_codes(handle, 1)
        // Another process (patchctl beside patchd) may hold the write lock for the length of
        // one publish; wait for it rather than failing.
        sqlite3_busy_timeout(handle, 10_000)
        try execute("PRAGMA journal_mode=WAL")
        // FULL: a publish that was acknowledged survives power loss, not only a process crash.
        try execute("PRAGMA synchronous=\(synchronous)")
        try execute("PRAGMA foreign_keys=ON")
    }

    /// Statements prepared once and run again (`cached`): a publish runs a dozen statements,
    /// and preparing each afresh cost more than running it. Bounded; emptied when full.
    private var statements: [String: SQLiteStatement] = [:]
    private static let cachedStatements = 64

    deinit {
        statements.removeAll()
        sqlite3_close_v2(handle)
    }

    /// SQLite creates a new database file 0644 (less the umask), and gives the -wal and -shm
    /// files it makes later the main file's mode. Creating the empty main file 0600 first
    /// (SQLite takes an empty file as a new database) makes all three private to the owner,
    /// whatever the umask. An existing file keeps the mode its owner gave it.
    private static func createPrivately(_ path: String) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        if fd >= 0 { close(fd) }
    }

    func error(_ code: Int32, sql: String?) -> SQLiteError {
        SQLiteError(code: code, message: String(cString: sqlite3_errmsg(handle)), sql: sql)
    }

    private(set) var calls = 0

    func execute(_ sql: String) throws(StorageError) {
        calls += 1
        var errorMessage: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &errorMessage)
        if rc != SQLITE_OK {
            let message = errorMessage.map { String(cString: $0) } ?? "unknown error"
            sqlite3_free(errorMessage)
            throw SQLiteError(code: rc, message: message, sql: sql).storageError
        }
    }

    func prepare(_ sql: String) throws(StorageError) -> any SQLStatement {
        try statement(sql)
    }

    private func statement(_ sql: String) throws(StorageError) -> SQLiteStatement {
        do { return try SQLiteStatement(database: self, handle: handle, sql: sql) } catch { throw error.storageError }
    }

    /// The prepared statement for `sql`, ready to bind: the cached one unless it is in use
    /// (a statement run from inside another's rows), else a new one, cached when there is none.
    private func cached(_ sql: String) throws(StorageError) -> SQLiteStatement {
        if let statement = statements[sql], !statement.inUse {
            statement.inUse = true
            return statement
        }
        let statement = try self.statement(sql)
        if statements[sql] == nil {
            if statements.count >= Self.cachedStatements { statements.removeAll() }
            statements[sql] = statement
        }
        statement.inUse = true
        return statement
    }

    func run(_ sql: String, _ values: [SQLValue]) throws(StorageError) {
        calls += 1
        let statement = try cached(sql)
        defer { statement.finish() }
        try statement.run(values)
    }

    func query<T>(_ sql: String, _ values: [SQLValue], row: (SQLRow) throws(StorageError) -> T) throws(StorageError) -> [T] {
        calls += 1
        let statement = try cached(sql)
        defer { statement.finish() }
        do {
            try statement.bind(values)
            var out: [T] = []
            while try statement.step() { out.append(try row(statement.row())) }
            return out
        } catch let error as SQLiteError { throw error.storageError } catch let error as StorageError { throw error } catch {
            throw StorageError(kind: .other, code: "SQLite", message: "\(error)", sql: sql)
        }
    }

    /// BEGIN IMMEDIATE: the write lock is taken before `body` reads anything. The file is
    /// checked last, before COMMIT, so no change is acknowledged into a file that is no longer
    /// at its path (`rm registry.sqlite*` under a running patchd).
    func transaction<T>(_ body: () throws -> T) throws -> T {
        try inTransaction("BEGIN IMMEDIATE") {
            let result = try body()
            try checkNotReplaced()
            return result
        }
    }

    /// One stat of the path, compared with the file opened.
    func checkNotReplaced() throws(StorageError) {
        guard FileNode(path: path) != opened else { return }
        throw SQLiteStore.replaced(path)
    }

    private static func replaced(_ path: String) -> StorageError {
        StorageError(kind: .replaced, code: "SQLite", message: "\(path) was deleted or replaced by another file since it was opened", sql: nil)
    }

    /// BEGIN DEFERRED: in WAL mode every read in it sees the one state the first read saw,
    /// whatever other connections commit meanwhile (they are not blocked).
    func readTransaction<T>(_ body: () throws -> T) throws -> T { try inTransaction("BEGIN DEFERRED", body) }

    private func inTransaction<T>(_ begin: String, _ body: () throws -> T) throws -> T {
        try execute(begin)
        let result: T
        do {
            result = try body()
            try execute("COMMIT")
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
        return result
    }

    var inTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    var changes: Int { Int(sqlite3_changes(handle)) }

    /// PRAGMA data_version moves when another connection commits; this connection's own
    /// commits are known to its caller already.
    func dataVersion() throws(StorageError) -> Int64 {
        try query("PRAGMA data_version") { $0.int(0) }.first ?? 0
    }
}

/// A prepared statement, finalized in `deinit`.
final class SQLiteStatement: SQLStatement {
    private let handle: SQLiteStatementHandle
    private unowned let database: SQLiteStore
    let sql: String

    fileprivate init(database: SQLiteStore, handle connection: SQLiteConnection, sql: String) throws(SQLiteError) {
        var statement: SQLiteStatementHandle?
        let rc = sqlite3_prepare_v2(connection, sql, -1, &statement, nil)
        guard rc == SQLITE_OK, let statement else { throw database.error(rc, sql: sql) }
        self.handle = statement
        self.database = database
        self.sql = sql
    }

    /// Taken by a run or query of the store's cache (`SQLiteStore.cached`).
    fileprivate var inUse = false

    deinit { sqlite3_finalize(handle) }

    /// After a run or query: reset (which ends the statement's read of the database, so it
    /// holds no snapshot open between calls) and its values released (a bundle's bytes).
    fileprivate func finish() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        inUse = false
    }

    fileprivate func bind(_ values: [SQLValue]) throws(SQLiteError) {
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let rc: Int32
            switch value {
            case .int(let v): rc = sqlite3_bind_int64(handle, index, v)
            case .text(let s): rc = hp_sqlite3_bind_text(handle, index, s, Int32(s.utf8.count))
            case .blob(let bytes):
                rc = bytes.withUnsafeBytes { hp_sqlite3_bind_blob(handle, index, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32($0.count)) }
            case .null: rc = sqlite3_bind_null(handle, index)
            }
            guard rc == SQLITE_OK else { throw database.error(rc, sql: sql) }
        }
    }

    /// Runs the statement again with new values (reset, bind, step to the end): one prepare
    /// for the many rows of a batch instead of one per row.
    func run(_ values: [SQLValue]) throws(StorageError) {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        do {
            try bind(values)
            while try step() {}
        } catch { throw error.storageError }
    }

    /// True while a row is available.
    fileprivate func step() throws(SQLiteError) -> Bool {
        let rc = sqlite3_step(handle)
        if rc == SQLITE_ROW { return true }
        if rc == SQLITE_DONE { return false }
        throw database.error(rc, sql: sql)
    }

    fileprivate func row() -> SQLRow {
        SQLRow(values: (0..<sqlite3_column_count(handle)).map(value))
    }

    private func value(_ column: Int32) -> SQLValue {
        switch sqlite3_column_type(handle, column) {
        case SQLITE_NULL: return .null
        case SQLITE_INTEGER: return .int(sqlite3_column_int64(handle, column))
        case SQLITE_BLOB:
            let count = Int(sqlite3_column_bytes(handle, column))
            guard count > 0, let pointer = sqlite3_column_blob(handle, column) else { return .blob([]) }
            return .blob(Array(UnsafeRawBufferPointer(start: pointer, count: count)))
        default:
            guard let pointer = sqlite3_column_text(handle, column) else { return .text("") }
            let count = Int(sqlite3_column_bytes(handle, column))
            return .text(String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self))
        }
    }
}

@available(*, unavailable) extension SQLiteStore: Sendable {}
@available(*, unavailable) extension SQLiteStatement: Sendable {}
