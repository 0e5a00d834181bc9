internal import CPostgres

/// What one statement returned, already copied out of libpq (so it outlives the PGresult and
/// may cross threads).
public struct PostgresResult: Sendable, Equatable {
    public let columns: [String]
    public let rows: [[PostgresValue]]
    /// The command tag: "INSERT 0 1", "SELECT 3", "COMMIT", or "ROLLBACK" for a COMMIT that
    /// the server rolled back.
    public let command: String
    /// Rows inserted, updated, deleted or selected (0 for statements that touch none).
    public let affectedRows: Int

    /// The first column of the first row, for `SELECT count(*) …` and the like.
    public var scalar: PostgresValue? { rows.first?.first }

    /// Reads `result` and frees it (here, whatever happens: the PGresult is this function's).
    init(consuming result: PGResultHandle?, of connection: PostgresConnection, sql: String) throws(PostgresError) {
        guard let result else {
            // No result at all: out of memory, or the query could not be sent.
            throw PostgresError(kind: connection.isBroken ? .connection : .client, message: connection.lastMessage, sql: sql)
        }
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            throw Self.error(result, status: status, connection: connection, sql: sql)
        }
        let fieldCount = PQnfields(result)
        let rowCount = PQntuples(result)
        var columns: [String] = []
        var types: [Oid] = []
        for field in 0..<fieldCount {
            columns.append(PQfname(result, field).map { String(cString: $0) } ?? "")
            types.append(PQftype(result, field))
        }
        var rows: [[PostgresValue]] = []
        rows.reserveCapacity(Int(rowCount))
        for row in 0..<rowCount {
            var values: [PostgresValue] = []
            values.reserveCapacity(Int(fieldCount))
            for field in 0..<fieldCount {
                values.append(try Self.value(result, row: row, field: field, type: types[Int(field)], sql: sql))
            }
            rows.append(values)
        }
        self.columns = columns
        self.rows = rows
        self.command = PQcmdStatus(result).map { String(cString: $0) } ?? ""
        self.affectedRows = PQcmdTuples(result).flatMap { Int(String(cString: $0)) } ?? 0
    }

    /// One text-format value, converted by its column's type.
    private static func value(_ result: PGResultHandle, row: Int32, field: Int32, type: Oid, sql: String) throws(PostgresError) -> PostgresValue {
        if PQgetisnull(result, row, field) == 1 { return .null }
        guard let pointer = PQgetvalue(result, row, field) else { return .null }
        if type == PostgresConnection.byteaOID {
            // PQunescapeBytea reads both of the server's bytea_output forms (hex and escape).
            var count = 0
            guard let decoded = pointer.withMemoryRebound(to: UInt8.self, capacity: 1, { PQunescapeBytea($0, &count) }) else {
                throw PostgresError(kind: .client, message: "a bytea value could not be decoded", sql: sql)
            }
            defer { PQfreemem(decoded) }
            return .bytes(Array(UnsafeBufferPointer(start: decoded, count: count)))
        }
        let length = Int(PQgetlength(result, row, field))
        let text = pointer.withMemoryRebound(to: UInt8.self, capacity: length) {
            String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
        }
        guard PostgresConnection.integerOIDs.contains(type) else { return .text(text) }
        guard let int = Int64(text) else {
            throw PostgresError(kind: .client, message: "an integer column held \(text.prefix(40))", sql: sql)
        }
        return .int(int)
    }

    private static func error(_ result: PGResultHandle, status: ExecStatusType, connection: PostgresConnection, sql: String) -> PostgresError {
        func field(_ code: Int32) -> String? { PQresultErrorField(result, code).map { String(cString: $0) } }
        if let sqlState = field(hp_pg_diag_sqlstate) {
            let message = field(hp_pg_diag_message_primary) ?? connection.lastMessage
            // A server that says why before it closes (terminated, shutting down) still leaves
            // a connection that is no use: the caller must reconnect, not retry on it.
            return PostgresError(kind: connection.isBroken ? .connection : .server, sqlState: sqlState, message: message,
                                 detail: field(hp_pg_diag_message_detail), sql: sql)
        }
        // No SQLSTATE: libpq failed on its own side, most often because the connection broke.
        let message = PQresultErrorMessage(result).map { String(cString: $0).trimmingTrailingNewlines() } ?? ""
        let reason = message.isEmpty ? "unexpected result status \(String(cString: PQresStatus(status)))" : message
        return PostgresError(kind: connection.isBroken ? .connection : .client, message: reason, sql: sql)
    }
}
