import Foundation
import PatchCheck
import PatchCore
import PatchPush
import PatchSigning

/// The registry: apps, their keys, patches per app version, signed TUF metadata and the
/// audit log, in one database: a SQLite file (`{data}/registry.sqlite`) or PostgreSQL
/// (`--database postgres://…`), behind one storage seam (`SQLStore`). Every change is one
/// transaction that also signs the new metadata and appends its audit event, so after a
/// crash the registry holds the old state or the new one.
public final class Registry {
    public static let maxBundleSize = 10 << 20

    let db: any SQLStore
    public let database: RegistryDatabase
    /// Names this registry in markers it leaves in the key directory (`KeyStore.install`).
    let registryID: String
    public let keys: KeyStore
    public var expiry = ExpiryPolicy()
    /// Checks every script before it is released (issue 45): the worker beside this program,
    /// under the default limits. patchd sets its limits from its flags.
    public var scriptChecker = ScriptChecker()
    /// Whether a webhook may name a private destination (patchd's `--webhook-deny-private`).
    public var webhookAddresses = WebhookAddressPolicy.any
    /// Roots parsed for signing (`parsedRoot`).
    let parsedRoots = ParsedRoots()
    /// Held while a patchd serves this SQLite registry (Registry+Serving.swift).
    var servingMarker: ServingMarker?

    /// How hard each commit is pushed to disk.
    public enum Durability: Sendable {
        /// Every acknowledged change survives a crash or power loss (the default).
        case full
        /// No fsync per commit, for seeding large benchmark registries only: a power loss
        /// may lose recent changes (never corrupts the file). SQLite only; PostgreSQL's
        /// durability is the server's.
        case bulkLoad
    }

    /// A SQLite registry under `dataDirectory`.
    public convenience init(dataDirectory: URL, keysDirectory: URL, durability: Durability = .full, create: Bool = false) throws(RegistryError) {
        try self.init(database: .sqlite(dataDirectory: dataDirectory), keysDirectory: keysDirectory, durability: durability, create: create)
    }

    /// Opens the registry in `database`. Only `create: true` (`apps create`, the target of
    /// `db copy`) makes one where there is none; otherwise a missing registry, a zero-length
    /// `registry.sqlite` or a database without the schema is "no registry at …" and is left as
    /// it was, so a mistyped data directory, a truncated file or an empty database never
    /// becomes a new, empty registry that every check passes (`audit --verify` with 0 events)
    /// and a server serves as healthy.
    public init(database: RegistryDatabase, keysDirectory: URL, durability: Durability = .full, create: Bool = false) throws(RegistryError) {
        self.database = database
        switch database {
        case .sqlite(let dataDirectory):
            let file = dataDirectory.appendingPathComponent("registry.sqlite")
            if create {
                do {
                    try FileManager.default.createDirectory(at: dataDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
                } catch { throw .io("cannot create \(dataDirectory.path): \(error.localizedDescription)") }
            } else {
                // SQLite takes a zero-length file for a new database and writes a header into
                // it on open: that is no registry either (`: > registry.sqlite`).
                var info = stat()
                let found = stat(file.path, &info) == 0
                if !found || info.st_size == 0 { throw Registry.noRegistry(at: database, emptyFile: found) }
            }
            do {
                let store = try SQLiteStore(path: file.path, synchronous: durability == .full ? "FULL" : "OFF", create: create)
                if !create, try !Registry.hasSchema(store) { throw Registry.noRegistry(at: database, emptyFile: false) }
                try store.execute(Schema.statements(for: .sqlite))
                try Schema.addMissingColumns(store)
                try Schema.declareChannelsInUse(store)
                try Registry.checkSchemaVersion(store)
                db = store
            } catch { throw .wrapping(error) }
            registryID = DataDirectory.identity(of: file)
            DataDirectory.warnIfExposed(dataDirectory)
        case .postgres(let conninfo):
            let store: PostgresStore
            do { store = try PostgresStore(conninfo: conninfo) } catch {
                throw .storage(StorageError(kind: error.kind, code: error.code, message: "cannot open the registry at \(database): \(error.message)", sql: nil))
            }
            do {
                if !create, try !Registry.hasSchema(store) { throw Registry.noRegistry(at: database, emptyFile: false) }
                // The schema script runs when this build's differs from the one that last ran
                // (a new registry, or a hotpatch that added tables), under the writer lock, so
                // two instances starting on a new database at once do not both create the
                // tables; otherwise opening costs one read and takes no lock (patchctl opens
                // the registry on every command).
                let script = Schema.statements(for: .postgres)
                let digest = Digest.sha256Hex(Array(script.utf8))
                // And every table and both audit triggers are there (one dropped by hand is
                // created again on the next open, as SQLite's IF NOT EXISTS does).
                let tables = script.components(separatedBy: "CREATE TABLE IF NOT EXISTS").count - 1
                let present = try store.query("""
                    SELECT (SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()),
                           (SELECT count(*) FROM pg_trigger WHERE tgrelid = to_regclass('audit')
                                AND tgname IN ('audit_append_only', 'audit_append_only_truncate')),
                           to_regclass('schema_script') IS NOT NULL
                    """, row: { ($0.int(0), $0.int(1), $0.text(2) == "t") }).first ?? (0, 0, false)
                let applied = present.2 ? try store.query("SELECT sha256 FROM schema_script", row: { $0.text(0) }).first : nil
                if applied != digest || present.0 < tables || present.1 < 2 {
                    try store.schemaTransaction {
                        try store.execute(script)
                        try Schema.declareChannelsInUse(store)
                        try Registry.checkSchemaVersion(store)
                        try store.run("DELETE FROM schema_script", [])
                        try store.run("INSERT INTO schema_script(sha256) VALUES (?)", [.text(digest)])
                    }
                } else {
                    try Registry.checkSchemaVersion(store)
                }
                registryID = try store.query("SELECT id FROM registry_identity", row: { $0.text(0) }).first ?? "unknown"
            } catch { throw .wrapping(error) }
            db = store
        }
        keys = KeyStore(directory: keysDirectory)
    }

    /// Whether the database holds a registry (its `schema_info` table), read before anything is
    /// written to it.
    private static func hasSchema(_ store: any SQLStore) throws(StorageError) -> Bool {
        let sql = switch store.dialect {
        case .sqlite: "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_info'"
        case .postgres: "SELECT CASE WHEN to_regclass('schema_info') IS NULL THEN 0 ELSE 1 END"
        }
        return try store.query(sql) { $0.int(0) }.first == 1
    }

    /// What every command but the ones that create says of a place with no registry.
    private static func noRegistry(at database: RegistryDatabase, emptyFile: Bool) -> RegistryError {
        switch database {
        case .sqlite(let directory):
            let empty = emptyFile ? " (its registry.sqlite is empty)" : ""
            return .notFound("no registry at \(directory.path)\(empty): create one with `patchctl apps create NAME`, or point --data / $HOTPATCH_DATA at an existing one")
        case .postgres:
            return .notFound("no registry at \(database) (the database or schema has no registry tables): create one with `patchctl apps create NAME --database …`")
        }
    }

    /// Records the schema version in a new registry; refuses one a newer hotpatch wrote.
    private static func checkSchemaVersion(_ db: any SQLStore) throws {
        let stored = try db.query("SELECT version FROM schema_info") { $0.int(0) }.first
        if stored == nil {
            try db.run("INSERT INTO schema_info(version) VALUES (?)", [.int(Int64(Schema.version))])
        } else if let stored, stored > Int64(Schema.version) {
            throw RegistryError.io("the registry was written by a newer hotpatch (schema \(stored)); upgrade patchctl")
        }
    }

    // MARK: Apps

    public func app(_ name: AppName) throws(RegistryError) -> AppRecord {
        guard let record = try apps(named: name).first else { throw Registry.unknownApp(name) }
        return record
    }

    static func unknownApp(_ name: AppName) -> RegistryError {
        // The words patchd's 404 uses too; no "create it": a mistyped name is the usual
        // cause, and whoever reports this knows what to suggest (patchctl: AppSuggestion).
        .notFound("unknown app \"\(name)\"")
    }

    public func apps() throws(RegistryError) -> [AppRecord] { try apps(named: nil) }

    private func apps(named name: AppName?) throws(RegistryError) -> [AppRecord] {
        let sql = "SELECT \(Registry.appColumns) FROM apps" + (name == nil ? " ORDER BY name" : " WHERE name = ?")
        let rows: [AppRecord?] = try read { () throws(StorageError) in
            try db.query(sql, name.map { [.text($0.rawValue)] } ?? [], row: Registry.appRecord)
        }
        return try Registry.intact(rows, what: "apps")
    }

    /// The columns `appRecord` reads, first in a row.
    static let appColumns = "name, encrypted, content_key_id, created_at, created_by"

    static func appRecord(_ s: SQLRow) -> AppRecord? {
        (try? AppName(s.text(0))).map {
            AppRecord(name: $0, encrypted: s.int(1) != 0, contentKeyID: s.optionalText(2), createdAt: s.text(3), createdBy: s.text(4))
        }
    }

    /// Rows were validated on the way in; one that no longer parses means the file was
    /// edited or corrupted, which is reported, never skipped or trapped on.
    static func intact<T>(_ rows: [T?], what: String) throws(RegistryError) -> [T] {
        let parsed = rows.compactMap { $0 }
        guard parsed.count == rows.count else { throw .internalError("\(rows.count - parsed.count) corrupt row(s) in \(what)") }
        return parsed
    }

    /// Creates an app: a key for each role (and a content key when encrypted, a JSPatch
    /// Loader key when given one), root v1 and empty targets/snapshot/timestamp. The key
    /// directory is put in place inside the same transaction (`KeyStore.install`), so a create
    /// killed at any point leaves either a committed app with all its keys, or nothing that
    /// stops the next `apps create` of that name. `rootKey` is an imported root key (an ECDSA
    /// P-256 key from a hardware token, say) used instead of a generated one.
    @discardableResult
    public func createApp(_ name: AppName, encrypted: Bool, jspatchKey: RSAPrivateKey? = nil, rootKey: SigningKey? = nil,
                          actor: Actor, now: Date = Date()) throws(RegistryError) -> AppRecord {
        if jspatchKey != nil { try JSPatchKeyMaterial.checkApp(encrypted: encrypted, app: name) }
        let jspatch = try jspatchKey.map { key throws(RegistryError) in try JSPatchKeyMaterial(key) }
        let new = try NewAppKeys.generate(encrypted: encrypted, jspatch: jspatch, rootKey: rootKey)
        let root = new.initialRoot(expires: now.addingTimeInterval(expiry.root))
        let signedRoot: SignedRoot
        do { signedRoot = try SignedRoot(signing: root, with: [try new.key(.root)]) } catch { throw .wrapping(error) }
        let record = try write { () throws -> AppRecord in
            if try apps(named: name).first != nil {
                keys.markCommitted(app: name)  // a marker left by a create killed right after its commit
                throw RegistryError.conflict("app \"\(name)\" already exists")
            }
            let install = try keys.install(new, app: name, registryID: registryID)
            do {
                CrashPoint.hit("create.installed")
                let time = TUFTime.format(now)
                try db.run("INSERT INTO apps(name, encrypted, content_key_id, created_at, created_by) VALUES (?,?,?,?,?)",
                           [.text(name.rawValue), .int(encrypted ? 1 : 0), new.contentKeyID.map { .text($0) } ?? .null, .text(time), .text(actor.name)])
                // Declared with the app, not audited on its own: every app has production (`app.create` says so).
                try db.run("INSERT INTO channels(app, name, created_at, created_by) VALUES (?,?,?,?)",
                           [.text(name.rawValue), .text(ChannelName.production.rawValue), .text(time), .text(actor.name)])
                try storeMetadata(app: name, role: .root, version: 1, bytes: signedRoot.bytes, expires: root.expires)
                if let jspatch { try recordJSPatchKey(jspatch, app: name, actor: actor, at: now) }
                try resign(app: name, from: .targets, now: now)
                var details: [String: JSON] = ["encrypted": .bool(encrypted), "rootVersion": 1]
                if let jspatch { details["jspatchRSA"] = jspatch.auditDetails }
                for (role, key) in new.roles { details["\(role.rawValue)KeyID"] = .string(key.tufKey.keyID) }
                try AuditLog.append(db, app: name.rawValue, actor: actor, action: "app.create", details: .object(details), at: now)
                CrashPoint.hit("create.before-commit")
                return AppRecord(name: name, encrypted: encrypted, contentKeyID: new.contentKeyID, createdAt: time, createdBy: actor.name)
            } catch {
                // About to roll back, still under the write lock: nothing will name these keys.
                // (Should COMMIT itself fail, the marked directory stays for the next create.)
                keys.removeUncommitted(app: name, install: install)
                throw error
            }
        }
        CrashPoint.hit("create.committed")
        keys.markCommitted(app: name)
        return record
    }

    // MARK: Metadata

    func storeMetadata(app: AppName, role: Role, version: Int64, bytes: [UInt8], expires: Date) throws(StorageError) {
        try db.run("INSERT INTO metadata(app, role, version, bytes, expires) VALUES (?,?,?,?,?)",
                   [.text(app.rawValue), .text(role.rawValue), .int(version), .blob(bytes), .text(TUFTime.format(expires))])
    }

    /// The bytes of one stored metadata version, or nil.
    public func metadata(app: AppName, role: Role, version: Int64) throws(RegistryError) -> [UInt8]? {
        try read { () throws(StorageError) in
            try db.query("SELECT bytes FROM metadata WHERE app = ? AND role = ? AND version = ?",
                         [.text(app.rawValue), .text(role.rawValue), .int(version)]) { $0.blob(0) }.first
        }
    }

    /// The newest version of a role's metadata and its bytes.
    public func latestMetadata(app: AppName, role: Role) throws(RegistryError) -> (version: Int64, bytes: [UInt8]) {
        let row = try read { () throws(StorageError) in
            try db.query("SELECT version, bytes FROM metadata WHERE app = ? AND role = ? ORDER BY version DESC LIMIT 1",
                         [.text(app.rawValue), .text(role.rawValue)]) { ($0.int(0), $0.blob(1)) }.first
        }
        guard let row else { throw .notFound("app \"\(app)\" has no \(role.rawValue) metadata") }
        return row
    }

    public func currentRoot(app: AppName) throws(RegistryError) -> SignedRoot {
        let bytes = try latestMetadata(app: app, role: .root).bytes
        do { return try SignedRoot(bytes: bytes) } catch { throw .internalError("stored root of \(app) does not parse: \(error)") }
    }

    /// The root an app embeds at build time: version 1.
    public func initialRoot(app: AppName) throws(RegistryError) -> [UInt8] {
        _ = try self.app(app)
        guard let bytes = try metadata(app: app, role: .root, version: 1) else { throw .notFound("app \"\(app)\" has no 1.root.json") }
        return bytes
    }
}
