import Foundation
import Postgres

/// The registry on PostgreSQL (`--database postgres://…`): several patchd and patchctl on
/// several hosts share it. The registry's SQL is SQLite's with `?` placeholders; `postgresSQL`
/// numbers them. Every write transaction takes the registry's advisory lock first, which makes
/// it the only writer as BEGIN IMMEDIATE does on SQLite: publishes to one app from several
/// instances get consecutive numbers and one linear audit chain. Before it commits it bumps
/// `registry_changes` and NOTIFYs the registry's channel (delivered on COMMIT only), which is
/// how every other instance learns of the change within milliseconds (`PostgresChangeListener`).
///
/// A lost connection (the server restarted, a failover) is replaced on the next call made
/// outside a transaction; a call that was under way fails with `.unavailable` and is never
/// retried here, since its COMMIT may have landed.
final class PostgresStore: SQLStore {
    let dialect = SQLDialect.postgres
    let conninfo: String
    private var connection: PostgresConnection
    private(set) var changes = 0
    /// The NOTIFY channel and the advisory lock keys of this registry, derived from its name:
    /// database and schema (a `search_path` in the connection string puts several registries
    /// in one database, as the tests do).
    let channel: String
    private let lockKey: Int32

    /// The advisory-lock class of the writer lock ('hp' + 1), so it never meets another
    /// application's advisory locks on a shared database. (0x6870_0002 was the session lock
    /// of the upkeep lease before it became a row with a deadline: PostgresStore+Lease.swift.)
    static let writerLockClass: Int32 = 0x6870_0001
    /// This process in the `upkeep_lease` row, and until when (monotonic) it may act as the
    /// holder without asking again (PostgresStore+Lease.swift).
    let leaseHolder = PostgresStore.holderName()
    var leaseValidUntil: ContinuousClock.Instant?
    /// What the last renewal asked for; before any, 180 s and "cannot re-sign anything".
    var leaseTerms = (seconds: 180.0, missingKeys: Int(Int64.max))

    init(conninfo: String) throws(StorageError) {
        self.conninfo = conninfo
        let connection = try Self.connect(conninfo)
        self.connection = connection
        let where_ = try Self.mapped(nil) { () throws(PostgresError) in
            try connection.query("SELECT current_database() || '.' || current_schema()")
        }
        guard let name = where_.scalar?.text else {
            throw StorageError(kind: .unavailable, code: "PostgreSQL", message: "the connection has no current schema (is search_path empty?)", sql: nil)
        }
        lockKey = Self.key(name)
        channel = "hotpatch_" + String(UInt32(bitPattern: lockKey), radix: 16)
    }

    static func connect(_ conninfo: String) throws(StorageError) -> PostgresConnection {
        do {
            let connection = try PostgresConnection(boundedConnect(conninfo))
            // A statement stuck behind another writer waits at most this long, then fails as
            // busy (SQLite's busy timeout is the same 10 s).
            _ = try connection.execute("SET lock_timeout = '10s'")
            // libpq prints notices on stderr ("relation … already exists, skipping" from every
            // CREATE TABLE IF NOT EXISTS); the registry has nothing to learn from them.
            _ = try connection.execute("SET client_min_messages = warning")
            return connection
        } catch { throw error.storageError }
    }

    /// `conninfo` with `connect_timeout=5` unless it names one: libpq's default is to wait
    /// for the operating system (minutes, for a host that drops packets), and a patchd that
    /// reconnects while holding the registry lock would stall every request behind it.
    static func boundedConnect(_ conninfo: String) -> String {
        guard !conninfo.contains("connect_timeout") else { return conninfo }
        if conninfo.contains("://") { return conninfo + (conninfo.contains("?") ? "&" : "?") + "connect_timeout=5" }
        return conninfo + " connect_timeout=5"
    }

    /// FNV-1a of the registry's name: a stable 32-bit key (`hashtext` is PostgreSQL-internal).
    static func key(_ name: String) -> Int32 {
        var hash: UInt32 = 0x811c_9dc5
        for byte in name.utf8 { hash = (hash ^ UInt32(byte)) &* 0x0100_0193 }
        return Int32(bitPattern: hash)
    }

    /// Round trips made (`use`: one each).
    private(set) var calls = 0

    /// Runs `body` (one round trip) on the connection, replacing a lost one first when no
    /// transaction is open.
    private func use<T>(_ sql: String?, _ body: (PostgresConnection) throws(PostgresError) -> T) throws(StorageError) -> T {
        calls += 1
        if !connection.isConnected, !inTransactionFlag {
            connection = try Self.connect(conninfo)
        }
        let connection = self.connection
        return try Self.mapped(sql) { () throws(PostgresError) in try body(connection) }
    }

    private static func mapped<T>(_ sql: String?, _ body: () throws(PostgresError) -> T) throws(StorageError) -> T {
        do { return try body() } catch { throw error.storageError }
    }

    /// Writes of the open transaction not sent yet (`runInTransaction`): they go ahead of the
    /// next statement, in one pipeline with it.
    private var pending: [(sql: String, parameters: [PostgresValue])] = []

    /// `sql` with `values`, after whatever is pending, in one round trip; its result.
    private func send(_ text: String, _ values: [PostgresValue]) throws(StorageError) -> PostgresResult {
        guard !pending.isEmpty else { return try use(text) { c throws(PostgresError) in try c.query(text, values) } }
        let batch = pending + [(text, values)]
        pending = []
        return try use(text) { c throws(PostgresError) in try c.pipeline(batch) }.last!
    }

    func execute(_ sql: String) throws(StorageError) {
        try flush()
        try use(sql) { c throws(PostgresError) in _ = try c.execute(sql) }
    }

    private func flush() throws(StorageError) {
        guard !pending.isEmpty else { return }
        let batch = pending
        pending = []
        try use(batch[0].sql) { c throws(PostgresError) in _ = try c.pipeline(batch) }
    }

    func run(_ sql: String, _ values: [SQLValue]) throws(StorageError) {
        let text = Self.postgresSQL(sql)
        let result = try send(text, values.map(\.postgres))
        changes = result.affectedRows
    }

    func runInTransaction(_ sql: String, _ values: [SQLValue]) throws(StorageError) {
        guard inTransactionFlag else { return try run(sql, values) }
        pending.append((Self.postgresSQL(sql), values.map(\.postgres)))
    }

    func query<T>(_ sql: String, _ values: [SQLValue], row: (SQLRow) throws(StorageError) -> T) throws(StorageError) -> [T] {
        let text = Self.postgresSQL(sql)
        let result = try send(text, values.map(\.postgres))
        var out: [T] = []
        out.reserveCapacity(result.rows.count)
        for values in result.rows { out.append(try row(SQLRow(values: values.map(SQLValue.init)))) }
        return out
    }

    func prepare(_ sql: String) throws(StorageError) -> any SQLStatement { PostgresStatement(store: self, sql: sql) }

    private var inTransactionFlag = false
    var inTransaction: Bool { inTransactionFlag }

    func transaction<T>(_ body: () throws -> T) throws -> T {
        try inTransaction(write: true, announce: true, body)
    }

    func readTransaction<T>(_ body: () throws -> T) throws -> T {
        try inTransaction(write: false, announce: false, body)
    }

    /// Creates or upgrades the tables under the writer lock (two instances starting on a new
    /// database at once must not both create them); before `registry_changes` exists, so
    /// nothing is announced.
    func schemaTransaction(_ body: () throws -> Void) throws {
        try inTransaction(write: true, announce: false, body)
    }

    private func inTransaction<T>(write: Bool, announce: Bool, _ body: () throws -> T) throws -> T {
        guard !inTransactionFlag else {
            throw StorageError(kind: .other, code: "PostgreSQL", message: "a transaction is already open", sql: nil)
        }
        // A writer's BEGIN and its lock in one round trip (both are constants of this store).
        do {
            try execute(write ? "BEGIN; SELECT pg_advisory_xact_lock(\(Self.writerLockClass)::int4, \(lockKey)::int4)"
                              : "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        } catch {
            // BEGIN ran and the lock timed out: the transaction it opened is failed.
            if connection.isConnected, connection.inTransaction { _ = try? connection.execute("ROLLBACK") }
            throw error
        }
        inTransactionFlag = true
        defer {
            inTransactionFlag = false
            pending = []
        }
        let result: T
        do {
            result = try body()
            let commit = try self.commit(announce: announce)
            guard commit.command == "COMMIT" else {
                throw StorageError(kind: .other, code: "PostgreSQL", message: "COMMIT rolled back: a statement in the transaction failed", sql: "COMMIT")
            }
        } catch {
            pending = []
            if connection.isConnected { _ = try? connection.execute("ROLLBACK") }
            throw error
        }
        return result
    }

    /// COMMIT, after the writes still pending and (`announce`) the bump of `registry_changes`
    /// with its NOTIFY, all in one round trip; and the one ambiguous failure: the server may
    /// have committed before the connection went. That is never reported as "unreachable,
    /// nothing was changed" (which a client would retry); the registry's listing and audit log
    /// say what happened.
    private func commit(announce: Bool) throws(StorageError) -> PostgresResult {
        var batch = pending
        pending = []
        if announce {
            batch.append(("WITH bumped AS (UPDATE registry_changes SET version = version + 1 RETURNING version) SELECT pg_notify($1, version::text) FROM bumped",
                          [.text(channel)]))
        }
        batch.append(("COMMIT", []))
        do {
            return try use("COMMIT") { c throws(PostgresError) in try c.pipeline(batch) }.last!
        } catch {
            guard error.kind == .unavailable else { throw error }
            throw StorageError(kind: .other, code: error.code,
                               message: "the connection was lost during COMMIT, so the change may or may not have been made: check `patchctl list` and `patchctl audit` (\(error.message))", sql: "COMMIT")
        }
    }

    func dataVersion() throws(StorageError) -> Int64 {
        try query("SELECT version FROM registry_changes") { $0.int(0) }.first ?? 0
    }

    /// `?` placeholders numbered `$1…$n` for libpq, outside quoted strings, quoted names and
    /// comments (the registry's SQL has `?` nowhere else, but a literal would not be changed).
    static func postgresSQL(_ sql: String) -> String {
        guard sql.contains("?") else { return sql }
        var out = ""
        out.reserveCapacity(sql.utf8.count + 16)
        var number = 0
        var quote: Character?
        var comment = false
        var previous: Character?
        for char in sql {
            if comment {
                if char == "\n" { comment = false }
            } else if let q = quote {
                if char == q { quote = nil }
            } else if char == "'" || char == "\"" {
                quote = char
            } else if char == "-", previous == "-" {
                comment = true
            } else if char == "?" {
                number += 1
                out += "$\(number)"
                previous = char
                continue
            }
            out.append(char)
            previous = char
        }
        return out
    }
}

/// On PostgreSQL a "prepared" statement is its SQL run again: libpq's text protocol with
/// parameters is one round trip either way.
private final class PostgresStatement: SQLStatement {
    unowned let store: PostgresStore
    let sql: String
    init(store: PostgresStore, sql: String) { self.store = store; self.sql = sql }
    func run(_ values: [SQLValue]) throws(StorageError) { try store.run(sql, values) }
}

extension SQLValue {
    var postgres: PostgresValue {
        switch self {
        case .int(let v): .int(v)
        case .text(let s): .text(s)
        case .blob(let b): .bytes(b)
        case .null: .null
        }
    }

    init(_ value: PostgresValue) {
        switch value {
        case .int(let v): self = .int(v)
        case .text(let s): self = .text(s)
        case .bytes(let b): self = .blob(b)
        case .null: self = .null
        }
    }
}

extension PostgresError {
    /// The one mapping from PostgreSQL's errors to the seam's.
    var storageError: StorageError {
        let kind: StorageError.Kind
        switch (self.kind, sqlState ?? "") {
        case (.connection, _): kind = .unavailable
        case (_, "53100"), (_, "53200"): kind = .diskFull                 // disk_full, out_of_memory
        case (_, "55P03"), (_, "40P01"), (_, "40001"), (_, "57014"): kind = .busy // lock timeout, deadlock, serialization, cancelled
        case (_, let state) where state.hasPrefix("23") || state == "P0001": kind = .constraint
        case (_, let state) where state.hasPrefix("08") || state.hasPrefix("57P"): kind = .unavailable
        default: kind = .other
        }
        let code = "PostgreSQL" + (sqlState.map { " \($0)" } ?? "")
        // libpq's connection messages span lines ("…failed: …\n\tIs the server running…?");
        // every message here is one line, as patchctl and patchd print errors.
        let text = (message + (detail.map { " (\($0))" } ?? "")).split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }.joined(separator: " ")
        return StorageError(kind: kind, code: code, message: text, sql: sql)
    }
}

@available(*, unavailable) extension PostgresStore: Sendable {}
