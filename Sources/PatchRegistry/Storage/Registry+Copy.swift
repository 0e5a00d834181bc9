import Foundation
import PatchCore

/// `patchctl db copy`: moves a registry between backends (SQLite → PostgreSQL to scale out,
/// PostgreSQL → SQLite for a backup or to come back to one box). Every row of every table is
/// copied as it is: the same patch numbers, the same signed metadata bytes, the same audit
/// events, so `audit --verify` gives the same head and `verify` the same result on the copy.
/// The copy itself adds no audit event (it would change that head); the operator's record of
/// it is the command's output.
extension Registry {
    /// Every table, parents before children (foreign keys), with the key that orders its rows
    /// for reading in batches. `schema_info` is not copied (the target writes its own), nor
    /// PostgreSQL's own `registry_changes`, `registry_identity`, `schema_script` and `upkeep_lease`.
    static let copiedTables: [(name: String, key: String)] = [
        ("apps", "name"), ("blobs", "sha256"), ("patches", "app, app_version, number"),
        ("metadata", "app, role, version"), ("audit", "seq"), ("throttle", "app"), ("tokens", "id"),
        ("jspatch_keys", "app"), ("patch_revocations", "app, app_version, number"),
        ("patch_releases", "app, app_version, number"), ("report_events", "app, event_key"),
        ("report_devices", "app, app_version, channel, patch, event, reason, device"),
        ("report_counts", "app, app_version, channel, patch, event, reason"),
        ("report_hourly", "app, app_version, channel, patch, hour, event"), ("patch_guards", "app, channel"),
        ("guard_trips", "app, app_version, number"),
        ("guard_trip_overrides", "app, app_version, number"), ("rollout_schedules", "app, app_version, number"),
        ("patch_conditions", "app, app_version, number"), ("push_devices", "app, token"), ("apns_config", "app"),
        ("report_senders", "app, device"), ("report_budget", "app, kind, scope, hour"),
        ("report_blocks", "app, app_version, channel, patch, event, block"), ("registry_secrets", "name"),
        ("push_device_owners", "app, token"), ("push_device_counts", "app"), ("patch_rollbacks", "app, app_version, number"),
        ("delegations", "app, name"), ("delegated_metadata", "app, role, version"), ("pending_changes", "app, id"),
        ("channels", "app, name"), ("version_checks", "app, day, app_version"), ("patch_sets", "app, app_version, number"),
        ("withheld_targets", "app, path"), ("native_manifests", "app, app_version"), ("patch_checks", "app, app_version, number"),
        ("webhooks", "id"), ("webhook_outbox", "sub, n"), ("webhook_marks", "app, mark"),
    ]

    public struct CopyReport: Sendable {
        /// Rows copied per table, in copy order.
        public var rows: [(table: String, count: Int)] = []
        public var total: Int { rows.reduce(0) { $0 + $1.count } }
    }

    /// Copies every row of `source` into `target`, which must be empty (no row in any table):
    /// one read of the source on one snapshot, one transaction on the target, so a copy that
    /// fails or is killed leaves the target empty. Rows move in batches of `batch`, so a large
    /// report table never sits in memory whole.
    public static func copy(from source: Registry, to target: Registry, batch: Int = 5_000) throws(RegistryError) -> CopyReport {
        guard source.database != target.database else { throw .invalidInput("--from and --to name the same registry") }
        do {
            return try source.consistentRead { () throws -> CopyReport in
                try target.write { () throws -> CopyReport in
                    for table in copiedTables {
                        let rows = try target.db.query("SELECT count(*) FROM \(table.name)") { $0.int(0) }.first ?? 0
                        if rows > 0 {
                            throw RegistryError.conflict("the target registry \(target.database) is not empty (\(rows) row(s) in \(table.name)): copy into a new database or data directory")
                        }
                    }
                    var report = CopyReport()
                    for table in copiedTables {
                        var offset = 0
                        var insert: (any SQLStatement)?
                        while true {
                            let rows = try source.db.query("SELECT * FROM \(table.name) ORDER BY \(table.key) LIMIT ? OFFSET ?",
                                                           [.int(Int64(batch)), .int(Int64(offset))]) { $0 }
                            for row in rows {
                                if insert == nil {
                                    let marks = Array(repeating: "?", count: row.values.count).joined(separator: ", ")
                                    insert = try target.db.prepare("INSERT INTO \(table.name) VALUES (\(marks))")
                                }
                                try insert?.run(row.values)
                            }
                            offset += rows.count
                            if rows.count < batch { break }
                        }
                        report.rows.append((table.name, offset))
                    }
                    CrashPoint.hit("copy.before-commit")
                    return report
                }
            }
        } catch { throw .wrapping(error) }
    }

    /// The tables this registry has, for the check that `copiedTables` names every one.
    func tableNames() throws(RegistryError) -> Set<String> {
        let sql = db.dialect == .sqlite
            ? "SELECT name FROM sqlite_master WHERE type = 'table'"
            : "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        return Set(try read { () throws(StorageError) in try db.query(sql) { $0.text(0) } })
    }
}
