internal import CPostgres
import Foundation

typealias PGConnection = OpaquePointer
typealias PGResultHandle = OpaquePointer

/// One PostgreSQL connection (libpq), owned by this object and closed in `deinit`.
/// Not Sendable: libpq allows one caller at a time per connection, so concurrent users go
/// through one owner (a `Locked` or a serial queue), and a listener gets its own connection.
public final class PostgresConnection {
    let handle: PGConnection

    /// Connects with a libpq connection string: a URL (`postgresql://user@host/db`,
    /// `postgresql://user@/db?host=/socket/dir`) or `key=value` pairs (`host=/socket/dir
    /// dbname=db`). Blocks until connected or refused; put `connect_timeout=N` in the string to
    /// bound that.
    /// The connection names the program (`application_name`, unless the string sets one), so
    /// `pg_stat_activity` and the server log tell patchd's connections from patchctl's.
    public init(_ conninfo: String) throws(PostgresError) {
        let program = ProcessInfo.processInfo.processName
        let connected: PGConnection? = ["dbname", "fallback_application_name"].withCStrings { keywords in
            [conninfo, program].withCStrings { values in
                PQconnectdbParams(keywords + [nil], values + [nil], 1)
            }
        }
        guard let handle = connected else {
            throw PostgresError(kind: .connection, message: "libpq could not allocate a connection")
        }
        guard PQstatus(handle) == CONNECTION_OK else {
            let message = Self.message(handle)
            PQfinish(handle)
            throw PostgresError(kind: .connection, message: message)
        }
        self.handle = handle
        // Strings cross as UTF-8 whatever the server's or the environment's default is, so
        // Swift's String round-trips unchanged.
        if PQsetClientEncoding(handle, "UTF8") != 0 {
            throw PostgresError(kind: .connection, message: Self.message(handle))
        }
    }

    deinit { PQfinish(handle) }

    /// False once the connection is gone (the server went away or terminated it): only a new
    /// connection helps then.
    public var isConnected: Bool { !isBroken }

    /// The server process serving this connection (what a notification names as its sender).
    public var backendPID: Int32 { PQbackendPID(handle) }

    /// True between BEGIN and COMMIT/ROLLBACK, also once a statement in it has failed.
    public var inTransaction: Bool {
        let status = PQtransactionStatus(handle)
        return status == PQTRANS_INTRANS || status == PQTRANS_INERROR
    }

    /// Runs one or more statements without parameters (a schema script, BEGIN, LISTEN) and
    /// returns the last one's result.
    @discardableResult
    public func execute(_ sql: String) throws(PostgresError) -> PostgresResult {
        try PostgresResult(consuming: PQexec(handle, sql), of: self, sql: sql)
    }

    /// Runs one statement with `$1…$n` parameters. The values travel apart from the SQL, so
    /// nothing in them is ever parsed as SQL. Text and integers go in text format with their
    /// type left to the server (it infers it from where `$n` stands, so `$1` fits an int4,
    /// an int8 or a text column alike; write `$1::int8` where nothing says); bytes go in
    /// binary format as bytea, so NUL bytes and large values need no escaping.
    @discardableResult
    public func query(_ sql: String, _ parameters: [PostgresValue] = []) throws(PostgresError) -> PostgresResult {
        if let name = prepared[Self.key(sql, parameters)] {
            let result: PGResultHandle? = try Self.withParameters(parameters, sql: sql) { count, _, values, lengths, formats in
                PQexecPrepared(handle, name, count, values, lengths, formats, 0)
            }
            return try checked(PostgresResult(consuming: result, of: self, sql: sql), sql, parameters)
        }
        return try pipeline([(sql, parameters)])[0]
    }

    /// Statements this connection has prepared on the server, by SQL and parameter types, and
    /// their names: a statement run again is neither parsed nor planned again (the registry's
    /// few statements run thousands of times; planning the listing of a publish cost more
    /// than running it). Bounded; beyond it statements run unnamed.
    private var prepared: [String: String] = [:]
    private static let preparedLimit = 256
    /// The next name to prepare under: never one used before on this connection (a name whose
    /// Prepare failed, or was dropped after 0A000, may still exist on the server).
    private var nextName = 0

    private static func key(_ sql: String, _ parameters: [PostgresValue]) -> String {
        // The types a statement was prepared with are its own: bytes are bytea, the rest inferred.
        sql + "\u{0}" + String(parameters.map { if case .bytes = $0 { "b" } else { "-" } })
    }

    /// A prepared statement whose plan no longer fits the tables (0A000: "cached plan must not
    /// change result type", after a column was added) is prepared anew on its next use.
    private func checked<T>(_ body: @autoclosure () throws(PostgresError) -> T, _ sql: String, _ parameters: [PostgresValue]) throws(PostgresError) -> T {
        do { return try body() } catch {
            if error.sqlState == "0A000" { prepared[Self.key(sql, parameters)] = nil }
            throw error
        }
    }

    /// Runs several statements with parameters in one round trip (libpq's pipeline mode):
    /// all are sent, then every result is read. They run in order as if one by one; the first
    /// that fails throws, and those after it do not run. Inside an open transaction that
    /// failure leaves it failed (roll it back); outside one, each statement is its own.
    /// A statement not prepared yet is prepared in the same round trip.
    @discardableResult
    public func pipeline(_ statements: [(sql: String, parameters: [PostgresValue])]) throws(PostgresError) -> [PostgresResult] {
        guard !statements.isEmpty else { return [] }
        guard PQenterPipelineMode(handle) == 1 else {
            throw PostgresError(kind: isBroken ? .connection : .client, message: "cannot enter pipeline mode: \(lastMessage)")
        }
        var failure: PostgresError?
        // Per statement sent: the name it is being prepared under in this pipeline, if any.
        var preparing: [(key: String, name: String)?] = []
        for statement in statements {
            let key = Self.key(statement.sql, statement.parameters)
            var name = prepared[key]
            var newName: String?
            if name == nil, prepared.count < Self.preparedLimit, !preparing.contains(where: { $0?.key == key }) {
                newName = "hp_\(nextName)"
                nextName += 1
                name = newName
            }
            let ok = try Self.withParameters(statement.parameters, sql: statement.sql) { count, types, values, lengths, formats -> Bool in
                if let newName, PQsendPrepare(handle, newName, statement.sql, count, types) != 1 { return false }
                if let name { return PQsendQueryPrepared(handle, name, count, values, lengths, formats, 0) == 1 }
                return PQsendQueryParams(handle, statement.sql, count, types, values, lengths, formats, 0) == 1
            }
            guard ok else {
                failure = PostgresError(kind: isBroken ? .connection : .client, message: lastMessage, sql: statement.sql)
                break
            }
            preparing.append(newName.map { (key, $0) })
        }
        var results: [PostgresResult] = []
        if !preparing.isEmpty {
            if PQpipelineSync(handle) != 1, failure == nil {
                failure = PostgresError(kind: isBroken ? .connection : .client, message: lastMessage, sql: statements[0].sql)
            }
            /// One command's result (its results end with a NULL); nil when it did not run.
            func next(_ sql: String) -> PostgresResult? {
                guard let result = PQgetResult(handle) else {
                    failure = failure ?? PostgresError(kind: isBroken ? .connection : .client, message: lastMessage, sql: sql)
                    return nil
                }
                defer { while let extra = PQgetResult(handle) { PQclear(extra) } }
                if PQresultStatus(result) == PGRES_PIPELINE_ABORTED {
                    PQclear(result)
                    return nil
                }
                do { return try PostgresResult(consuming: result, of: self, sql: sql) } catch {
                    failure = failure ?? error
                    return nil
                }
            }
            for (statement, naming) in zip(statements, preparing) {
                if let naming, next(statement.sql) != nil { prepared[naming.key] = naming.name }
                if let result = next(statement.sql) { results.append(result) }
                if failure?.sqlState == "0A000" { prepared[Self.key(statement.sql, statement.parameters)] = nil }
            }
            // Up to the sync point (also after a broken connection, where libpq returns NULL).
            while let result = PQgetResult(handle) {
                let status = PQresultStatus(result)
                PQclear(result)
                if status == PGRES_PIPELINE_SYNC { break }
            }
        }
        if PQexitPipelineMode(handle) != 1, failure == nil {
            failure = PostgresError(kind: isBroken ? .connection : .client, message: "cannot leave pipeline mode: \(lastMessage)")
        }
        if let failure {
            // A result read before libpq saw the connection close (a backend terminated
            // mid-statement sends its error first) is still a lost connection, as it is for
            // a statement run alone.
            guard isBroken, failure.kind != .connection else { throw failure }
            throw PostgresError(kind: .connection, sqlState: failure.sqlState, message: failure.message, detail: failure.detail, sql: failure.sql)
        }
        return results
    }

    /// The parameters of one statement as libpq takes them, for the duration of `body`.
    /// The values travel apart from the SQL, so nothing in them is ever parsed as SQL. Text and
    /// integers go in text format with their type left to the server (it infers it from where
    /// `$n` stands, so `$1` fits an int4, an int8 or a text column alike; write `$1::int8` where
    /// nothing says); bytes go in binary format as bytea, so NUL bytes and large values need no
    /// escaping.
    private static func withParameters<R>(_ parameters: [PostgresValue], sql: String,
                                          _ body: (Int32, [Oid], [UnsafePointer<CChar>?], [Int32], [Int32]) -> R) throws(PostgresError) -> R {
        // One leading byte, so that even an empty bytea has a real address: libpq reads a
        // nil value pointer as NULL.
        var storage: [UInt8] = [0]
        var offsets: [Int?] = []
        var lengths: [Int32] = []
        var formats: [Int32] = []
        var types: [Oid] = []
        for value in parameters {
            // (bytes, format: 0 text / 1 binary, type: 0 = inferred by the server)
            let encoded: (bytes: [UInt8], format: Int32, type: Oid)?
            switch value {
            case .null: encoded = nil
            case .int(let v): encoded = (Array(String(v).utf8) + [0], 0, 0)
            case .text(let s):
                // libpq reads a text parameter up to its first NUL: refuse rather than cut it.
                guard !s.utf8.contains(0) else {
                    throw PostgresError(kind: .client, message: "a text parameter contains a NUL character", sql: sql)
                }
                encoded = (Array(s.utf8) + [0], 0, 0)
            case .bytes(let b): encoded = (b, 1, byteaOID)
            }
            guard let encoded else {
                offsets.append(nil); lengths.append(0); formats.append(0); types.append(0)
                continue
            }
            guard encoded.bytes.count <= Int32.max else {
                throw PostgresError(kind: .client, message: "a parameter is larger than 2 GiB", sql: sql)
            }
            offsets.append(storage.count)
            lengths.append(Int32(encoded.bytes.count))
            formats.append(encoded.format)
            types.append(encoded.type)
            storage += encoded.bytes
        }
        return storage.withUnsafeBufferPointer { buffer in
            let values: [UnsafePointer<CChar>?] = offsets.map { offset in
                guard let offset, let base = buffer.baseAddress else { return nil }
                return UnsafeRawPointer(base + offset).assumingMemoryBound(to: CChar.self)
            }
            return body(Int32(parameters.count), types, values, lengths, formats)
        }
    }

    /// Runs `body` inside BEGIN … COMMIT (READ COMMITTED, PostgreSQL's default). Any error rolls
    /// back and is rethrown as it was: PostgresError from here, whatever `body` threw from
    /// there. A COMMIT the server turns into a ROLLBACK (a statement in the transaction failed
    /// and `body` caught that error) is an error too, never a silent loss.
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        guard !inTransaction else {
            throw PostgresError(kind: .client, message: "a transaction is already open on this connection")
        }
        try execute("BEGIN")
        let result: T
        do {
            result = try body()
            let commit = try execute("COMMIT")
            guard commit.command == "COMMIT" else {
                throw PostgresError(kind: .client, message: "COMMIT rolled back: a statement in the transaction failed", sql: "COMMIT")
            }
        } catch {
            if inTransaction { _ = try? execute("ROLLBACK") }
            throw error
        }
        return result
    }

    /// libpq's last message for this connection, without its trailing newline.
    static func message(_ handle: PGConnection) -> String {
        guard let text = PQerrorMessage(handle) else { return "unknown libpq error" }
        let message = String(cString: text).trimmingTrailingNewlines()
        return message.isEmpty ? "unknown libpq error" : message
    }

    var lastMessage: String { Self.message(handle) }
    var isBroken: Bool { PQstatus(handle) != CONNECTION_OK }

    // Type OIDs from pg_type (fixed since PostgreSQL 7): what a column reads as.
    static let byteaOID: Oid = 17
    static let integerOIDs: Set<Oid> = [20, 21, 23] // int8, int2, int4
}

@available(*, unavailable) extension PostgresConnection: Sendable {}

extension String {
    func trimmingTrailingNewlines() -> String {
        var s = Substring(self)
        while s.last == "\n" || s.last == "\r" { s.removeLast() }
        return String(s)
    }
}

private extension Array where Element == String {
    /// The strings as C strings for the duration of `body` (libpq copies what it keeps).
    func withCStrings<R>(_ body: ([UnsafePointer<CChar>?]) -> R) -> R {
        let owned = map { strdup($0) }
        defer { owned.forEach { free($0) } }
        return body(owned.map { UnsafePointer($0) })
    }
}
