import Foundation
import PatchCore
import PatchRegistry
import Postgres
import Synchronization

/// Which registry backend the registry, server, JSPatch, client and CLI suites run on.
/// SQLite under the test's data directory unless `HOTPATCH_TEST_REGISTRY=postgres`; then a
/// PostgreSQL registry in the cluster `HOTPATCH_TEST_DATABASE` names (`make test-swift` runs
/// those suites once each way), in a schema of its own derived from the data directory's path:
/// every test keeps its own registry, and reopening the same directory (a second `Registry`,
/// a patchctl process) reopens the same registry, as it does on SQLite.
public enum TestBackend {
    public static let isPostgres = ProcessInfo.processInfo.environment["HOTPATCH_TEST_REGISTRY"] == "postgres"

    /// The PostgreSQL registry for `dataDirectory` (its schema created if it is new), or the
    /// SQLite one under it.
    public static func database(dataDirectory: URL) throws(TestBackendError) -> RegistryDatabase {
        guard isPostgres else { return .sqlite(dataDirectory: dataDirectory) }
        let base = try clusterURL()
        let schema = schema(for: dataDirectory)
        try createSchema(schema, in: base)
        // The cluster's URL already has a query (`?host=…`); without one, start it.
        let separator = base.contains("?") ? "&" : "?"
        return .postgres(base + separator + "options=-csearch_path%3D" + schema)
    }

    /// `Registry(dataDirectory:keysDirectory:create:)` on the backend under test. Unlike
    /// `Registry`, it creates by default: a test makes its fixture's registry here, and
    /// reopening an existing one is the same call.
    public static func registry(dataDirectory: URL, keysDirectory: URL, create: Bool = true) throws -> Registry {
        try Registry(database: database(dataDirectory: dataDirectory), keysDirectory: keysDirectory, create: create)
    }

    /// Declares `channel` of `app` in the existing registry of `dataDirectory` through the
    /// registry's API (`Registry.declareChannel`), for a test that drives patchctl or patchd
    /// to a channel other than production: one not declared is refused.
    public static func declareChannel(_ channel: String, app: String, dataDirectory: URL, keysDirectory: URL) throws {
        let registry = try registry(dataDirectory: dataDirectory, keysDirectory: keysDirectory, create: false)
        try registry.declareChannel(app: try AppName(app), channel: try ChannelName(channel), actor: Actor("test"))
    }

    /// The options that point patchctl or patchd at the registry of `dataDirectory`:
    /// `["--data", DIR]`, or `["--database", URL]` on PostgreSQL.
    public static func arguments(dataDirectory: String) throws(TestBackendError) -> [String] {
        switch try database(dataDirectory: URL(fileURLWithPath: dataDirectory, isDirectory: true)) {
        case .sqlite: return ["--data", dataDirectory]
        case .postgres(let url): return ["--database", url]
        }
    }

    /// A schema name from the directory's path: the same path always gives the same schema,
    /// and two paths (the UUID-named temporary directories of two tests) practically never
    /// share one. Starts with a letter and stays under PostgreSQL's 63-byte limit.
    public static func schema(for dataDirectory: URL) -> String {
        var path = dataDirectory.standardizedFileURL.path
        while path.count > 1, path.hasSuffix("/") { path.removeLast() }
        return "reg_" + Digest.sha256Hex(Array(path.utf8)).prefix(32)
    }

    /// A connection to the test cluster with `search_path` on the schema of `dataDirectory`.
    static func connection(dataDirectory: URL) throws -> PostgresConnection {
        guard case .postgres(let url) = try database(dataDirectory: dataDirectory) else {
            throw TestBackendError(message: "connection(dataDirectory:) is for HOTPATCH_TEST_REGISTRY=postgres")
        }
        return try PostgresConnection(url)
    }

    /// Every byte the registry of `dataDirectory` holds at rest, for tests that a secret (a
    /// token, a raw device ID) is stored nowhere: on SQLite the files of the data directory
    /// (registry.sqlite and its -wal); on PostgreSQL every value of every row of every table
    /// in the registry's schema, bytea as its bytes and the rest in its text form.
    public static func storedBytes(dataDirectory: URL) throws -> Data {
        var stored = Data()
        guard isPostgres else {
            for name in try FileManager.default.contentsOfDirectory(atPath: dataDirectory.path) {
                stored += try Data(contentsOf: dataDirectory.appendingPathComponent(name))
            }
            return stored
        }
        let connection = try connection(dataDirectory: dataDirectory)
        let tables = try connection.query("SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename")
        guard !tables.rows.isEmpty else { throw TestBackendError(message: "the registry of \(dataDirectory.path) has no tables") }
        for table in tables.rows {
            guard case .text(let name) = table[0] else { continue }
            for row in try connection.query("SELECT * FROM \"\(name)\"").rows {
                for value in row {
                    switch value {
                    case .bytes(let bytes): stored += bytes
                    case .text(let text): stored += Data(text.utf8)
                    case .int(let number): stored += Data(String(number).utf8)
                    case .null: break
                    }
                }
            }
        }
        return stored
    }

    /// The rows of `sql` run in the PostgreSQL schema of `dataDirectory`, every value in its
    /// text form (NULL as nil): what a test reads of the catalog or the tables.
    public static func rows(_ sql: String, dataDirectory: URL) throws -> [[String?]] {
        try connection(dataDirectory: dataDirectory).query(sql).rows.map { row in
            row.map { value in
                switch value {
                case .text(let text): text
                case .int(let number): String(number)
                case .bytes(let bytes): String(decoding: bytes, as: UTF8.self)
                case .null: nil
                }
            }
        }
    }

    /// The tables in the PostgreSQL schema of `dataDirectory` (none for a registry that was
    /// never created there).
    public static func tables(dataDirectory: URL) throws -> [String] {
        try rows("SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename", dataDirectory: dataDirectory)
            .compactMap { $0[0] }
    }

    private static func clusterURL() throws(TestBackendError) -> String {
        guard let url = ProcessInfo.processInfo.environment["HOTPATCH_TEST_DATABASE"], !url.isEmpty else {
            // Never quietly SQLite: a "PostgreSQL pass" that ran on SQLite would prove nothing.
            throw TestBackendError(message: "HOTPATCH_TEST_REGISTRY=postgres needs HOTPATCH_TEST_DATABASE: run it under `scripts/pg-test-cluster.sh run …` (as `make test-swift` does)")
        }
        return url
    }

    /// Schemas already created by this process: opening a registry again costs no connection.
    private static let created = Mutex<Set<String>>([])

    private static func createSchema(_ schema: String, in url: String) throws(TestBackendError) {
        if created.withLock({ $0.contains(schema) }) { return }
        do {
            let connection = try PostgresConnection(url)
            _ = try connection.execute("SET client_min_messages = warning")
            _ = try connection.execute("CREATE SCHEMA IF NOT EXISTS \(schema)")
        } catch let error where error.sqlState == "23505" || error.sqlState == "42P06" {
            // Another process or thread created it between IF NOT EXISTS and the insert.
        } catch {
            throw TestBackendError(message: "cannot create schema \(schema) in the test cluster: \(error)")
        }
        _ = created.withLock { $0.insert(schema) }
    }
}

public struct TestBackendError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
