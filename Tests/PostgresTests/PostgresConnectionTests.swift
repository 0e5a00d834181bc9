import Foundation
import Synchronization
import Testing
import Postgres

@Suite("PostgreSQL connection: values, errors, transactions", .enabled(if: TestDatabase.isAvailable, TestDatabase.skipReason))
struct PostgresConnectionTests {
    @Test("text, int64, bytea and NULL parameters come back as the same Swift values")
    func roundTripsEveryType() throws {
        let db = try TestDatabase.connect()
        let values: [PostgresValue] = [
            .int(0), .int(-1), .int(.max), .int(.min),
            .text(""), .text("plain"), .text("quote ' and \" and $1 and \\ and ; DROP TABLE x"), .text("ünïcødé ✓ 🚀"),
            .bytes([]), .bytes([0]), .bytes([0, 0, 0xFF, 0, 0x5C, 0x78]), .bytes(Array(0...255)),
            .null,
        ]
        for value in values {
            let cast = switch value {
            case .int: "int8"
            case .text: "text"
            case .bytes: "bytea"
            case .null: "text"
            }
            let result = try db.query("SELECT $1::\(cast) AS v", [value])
            #expect(result.columns == ["v"])
            #expect(result.rows == [[value]], "\(value)")
        }
    }

    @Test("values stored in a table read back by column type, several per row, in order")
    func tableRoundTrip() throws {
        let db = try TestDatabase.connect()
        try db.execute("CREATE TEMP TABLE items (id int4 PRIMARY KEY, small int2, big int8, name text, body bytea, flag boolean)")
        let insert = try db.query("INSERT INTO items VALUES ($1, $2, $3, $4, $5, $6)",
                                  [.int(1), .int(7), .int(1 << 40), .text("one"), .bytes([1, 0, 2]), .text("true")])
        #expect(insert.affectedRows == 1 && insert.command == "INSERT 0 1")
        try db.query("INSERT INTO items (id, name) VALUES ($1, $2)", [.int(2), .null])
        let rows = try db.query("SELECT id, small, big, name, body, flag FROM items ORDER BY id").rows
        #expect(rows == [
            [.int(1), .int(7), .int(1 << 40), .text("one"), .bytes([1, 0, 2]), .text("t")],
            [.int(2), .null, .null, .null, .null, .null],
        ])
        #expect(try db.query("SELECT count(*) FROM items WHERE big > $1", [.int(1 << 39)]).scalar == .int(1))
    }

    @Test("large values (8 MiB of bytea holding every byte value, 1 MiB of text) survive the round trip")
    func largeValues() throws {
        let db = try TestDatabase.connect()
        var bytes = [UInt8](repeating: 0, count: 8 << 20)
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for i in bytes.indices {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            bytes[i] = UInt8(truncatingIfNeeded: state >> 56)
        }
        bytes[0..<256] = ArraySlice(0...255)
        let text = String(repeating: "0123456789abcdé\n", count: (1 << 20) / 17)
        try db.execute("CREATE TEMP TABLE blobs (body bytea, note text)")
        try db.query("INSERT INTO blobs VALUES ($1, $2)", [.bytes(bytes), .text(text)])
        let row = try #require(try db.query("SELECT body, note, length(body) FROM blobs").rows.first)
        #expect(row[2] == .int(Int64(bytes.count)), "the server stored every byte")
        #expect(row[0].bytes == bytes)
        #expect(row[1].text == text)
    }

    @Test("a text parameter with a NUL character is refused, not cut short")
    func nulInTextRefused() throws {
        let db = try TestDatabase.connect()
        #expect { try db.query("SELECT $1::text", [.text("a\u{0}b")]) } throws: { ($0 as? PostgresError)?.kind == .client }
    }

    @Test("a unique violation is a server error carrying SQLSTATE 23505 and the server's message")
    func uniqueViolation() throws {
        let db = try TestDatabase.connect()
        try db.execute("CREATE TEMP TABLE names (name text PRIMARY KEY)")
        try db.query("INSERT INTO names VALUES ($1)", [.text("a")])
        let error = try #require(throws: PostgresError.self) { try db.query("INSERT INTO names VALUES ($1)", [.text("a")]) }
        #expect(error.kind == .server && error.sqlState == "23505" && error.isUniqueViolation)
        #expect(error.message.contains("duplicate key"), "\(error)")
        #expect(error.detail?.contains("(name)=(a)") == true, "\(error)")
        #expect(error.sql == "INSERT INTO names VALUES ($1)")
        #expect(try db.query("SELECT count(*) FROM names").scalar == .int(1), "the connection is usable after the error")
    }

    @Test("a syntax error and a missing table carry their own SQLSTATEs")
    func otherServerErrors() throws {
        let db = try TestDatabase.connect()
        let syntax = try #require(throws: PostgresError.self) { try db.execute("SELEC 1") }
        #expect(syntax.kind == .server && syntax.sqlState == "42601")
        let missing = try #require(throws: PostgresError.self) { try db.query("SELECT * FROM \(TestDatabase.uniqueName("missing"))") }
        #expect(missing.kind == .server && missing.sqlState == "42P01")
    }

    @Test("a committed transaction is visible to another connection; one rolled back by an error leaves nothing")
    func transactions() throws {
        let db = try TestDatabase.connect()
        let other = try TestDatabase.connect()
        let table = TestDatabase.uniqueName("tx")
        try db.execute("CREATE TABLE \(table) (n int8)")
        defer { _ = try? db.execute("DROP TABLE \(table)") }

        let committed = try db.transaction {
            try db.query("INSERT INTO \(table) VALUES ($1)", [.int(1)])
            #expect(db.inTransaction)
            #expect(try other.query("SELECT count(*) FROM \(table)").scalar == .int(0), "not visible before COMMIT")
            return 42
        }
        #expect(committed == 42 && !db.inTransaction)
        #expect(try other.query("SELECT count(*) FROM \(table)").scalar == .int(1))

        struct Abandon: Error {}
        #expect(throws: Abandon.self, "the body's own error comes out unchanged") {
            try db.transaction {
                try db.query("INSERT INTO \(table) VALUES ($1)", [.int(2)])
                try db.query("INSERT INTO \(table) VALUES ($1)", [.int(3)])
                throw Abandon()
            }
        }
        #expect(!db.inTransaction)
        #expect(try other.query("SELECT n FROM \(table) ORDER BY n").rows == [[.int(1)]])
    }

    @Test("a COMMIT after a failed statement whose error the body swallowed throws: the server rolled back")
    func commitOfFailedTransactionThrows() throws {
        let db = try TestDatabase.connect()
        try db.execute("CREATE TEMP TABLE once (name text PRIMARY KEY)")
        let error = try #require(throws: PostgresError.self) {
            try db.transaction {
                try db.query("INSERT INTO once VALUES ($1)", [.text("kept?")])
                _ = try? db.query("INSERT INTO once VALUES ($1)", [.text("kept?")])
            }
        }
        #expect(error.kind == .client && error.message.contains("rolled back"))
        #expect(!db.inTransaction)
        #expect(try db.query("SELECT count(*) FROM once").scalar == .int(0))
    }

    @Test("a transaction inside a transaction is refused before anything runs")
    func nestedTransactionRefused() throws {
        let db = try TestDatabase.connect()
        let error = try #require(throws: PostgresError.self) {
            try db.transaction { try db.transaction { } }
        }
        #expect(error.kind == .client)
        #expect(!db.inTransaction, "the outer transaction rolled back")
    }

    @Test("a connection the server terminates mid-statement is a connection error, not a server error, and so is the next statement")
    func terminatedConnection() throws {
        let db = try TestDatabase.connect()
        let url = try #require(TestDatabase.url)
        let pid = Int64(db.backendPID)
        let terminated = Mutex<PostgresValue?>(nil)
        let adminDone = DispatchSemaphore(value: 0)
        let admin = Thread {
            Thread.sleep(forTimeInterval: 0.3)
            let result = try? PostgresConnection(url).query("SELECT pg_terminate_backend($1::int4)", [.int(pid)])
            terminated.withLock { $0 = result?.scalar }
            adminDone.signal()
        }
        admin.start()
        let error = try #require(throws: PostgresError.self) { try db.query("SELECT pg_sleep(20)") }
        // The sleeping statement fails as soon as the backend dies, which can be before the
        // admin connection has read its own answer: wait for that thread before looking.
        #expect(adminDone.wait(timeout: .now() + 10) == .success)
        #expect(terminated.withLock { $0 } == .text("t"))
        #expect(error.kind == .connection, "\(error)")
        let next = try #require(throws: PostgresError.self) { try db.query("SELECT 1") }
        #expect(next.kind == .connection, "\(next)")
    }

    @Test("a malformed connection string and an unreachable server are connection errors")
    func badConnectionStrings() throws {
        for conninfo in ["host=", "postgresql://%zz", "no_such_option=1", "host=/nonexistent/hotpatch dbname=x connect_timeout=2"] {
            let error = try #require(throws: PostgresError.self, "\(conninfo)") { try PostgresConnection(conninfo) }
            #expect(error.kind == .connection && error.sqlState == nil && !error.message.isEmpty, "\(conninfo): \(error)")
        }
        let missingDatabase = try #require(throws: PostgresError.self) {
            try PostgresConnection(try #require(TestDatabase.url).replacingOccurrences(of: "/hotpatch_test?", with: "/\(TestDatabase.uniqueName("nodb"))?"))
        }
        #expect(missingDatabase.kind == .connection && missingDatabase.message.contains("does not exist"), "\(missingDatabase)")
    }
}
