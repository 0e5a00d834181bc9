import Foundation

/// Where a registry lives: a SQLite file under a data directory (one box, the default), or a
/// PostgreSQL database that several patchd and patchctl share (`--database postgres://…`).
public enum RegistryDatabase: Sendable, Equatable, CustomStringConvertible {
    case sqlite(dataDirectory: URL)
    /// A libpq connection string: a `postgres://` / `postgresql://` URL.
    case postgres(String)

    /// `--database` (or `$HOTPATCH_DATABASE`) when given, else the SQLite registry under
    /// `dataDirectory`. Only PostgreSQL URLs are accepted there: a path belongs in `--data`.
    public static func resolve(database: String?, dataDirectory: URL) throws(RegistryError) -> RegistryDatabase {
        guard let database, !database.isEmpty else { return .sqlite(dataDirectory: dataDirectory) }
        guard database.hasPrefix("postgres://") || database.hasPrefix("postgresql://") else {
            throw .invalidInput("--database takes a postgres:// or postgresql:// URL (got \"\(RegistryDatabase.redacted(database))\"); a SQLite registry is chosen with --data DIR")
        }
        return .postgres(database)
    }

    /// For messages and logs: the path, or the URL without its password.
    public var description: String {
        switch self {
        case .sqlite(let directory): return directory.path
        case .postgres(let url): return RegistryDatabase.redacted(url)
        }
    }

    /// True when the URL carries a password (`user:secret@`, `password=`): on a command line
    /// every user of the machine can read it (ps, /proc/PID/cmdline); libpq's ~/.pgpass or
    /// PGPASSFILE, or the URL in $HOTPATCH_DATABASE, keep it to the owner.
    public static func hasPassword(_ url: String) -> Bool { redacted(url) != url }

    public var isPostgres: Bool { if case .postgres = self { true } else { false } }

    /// `postgres://user:secret@host/db` → `postgres://user:***@host/db`; `password=` in the
    /// query string likewise.
    static func redacted(_ url: String) -> String {
        var out = url
        if let scheme = out.range(of: "://"), let at = out[scheme.upperBound...].firstIndex(of: "@") {
            let userInfo = out[scheme.upperBound..<at]
            if let colon = userInfo.firstIndex(of: ":") { out.replaceSubrange(out.index(after: colon)..<at, with: "***") }
        }
        if let range = out.range(of: #"password=[^&\s]*"#, options: .regularExpression) {
            out.replaceSubrange(range, with: "password=***")
        }
        return out
    }
}
