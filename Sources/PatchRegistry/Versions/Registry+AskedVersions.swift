import Foundation
import PatchCore

/// One app version devices checked for, over the last `Registry.askedVersionsDays` days.
public struct AskedVersion: Sendable, Equatable {
    public let appVersion: AppVersion
    /// Checks counted (each instance's tally added up; a tally keeps only what it could
    /// prove, so a count is never more than devices made).
    public let checks: Int
    /// The last UTC day (YYYY-MM-DD) a check for it was counted.
    public let lastDay: String

    public var json: JSON {
        ["appVersion": .string(appVersion.rawValue), "checks": .int(Int64(checks)), "lastDay": .string(lastDay)]
    }
}

/// The app versions devices check for (issue 44): what a range of `publish --app-version`
/// expands against beside the versions with patches, what `apps versions` and the console show,
/// and what a publish to a version no device asks for is warned about. patchd counts checks in
/// memory (PatchServer's `AskedVersions`) and adds them here off the request path.
extension Registry {
    /// How long a version stays "asked for" after its last check.
    public static let askedVersionsDays = 30
    /// Versions of one app kept per day, the most asked: a device can send any version string,
    /// and this is what bounds the rows of made-up ones (31 days × this, per app).
    public static let maxAskedVersionsPerDay = 512

    /// The first UTC day (YYYY-MM-DD) still inside the window at `now`.
    static func firstAskedDay(now: Date) -> String { day(now.addingTimeInterval(-Double(askedVersionsDays) * 86_400)) }

    static func day(_ date: Date) -> String { String(TUFTime.format(date).prefix(10)) }

    /// Adds checks counted elsewhere to the day of `now`, in one transaction: per app, each
    /// version's count. An app the registry does not have is skipped (a tally can outlive
    /// nothing here, but a row must never name an app that is not there). Then each app of
    /// the day is held to `maxAskedVersionsPerDay` versions, the least asked going first.
    public func addVersionChecks(_ counts: [AppName: [String: Int]], now: Date = Date()) throws(RegistryError) {
        let counts = counts.mapValues { $0.filter { $0.value > 0 } }.filter { !$0.value.isEmpty }
        guard !counts.isEmpty else { return }
        let day = Registry.day(now)
        try write { () throws in
            let upsert = try db.prepare("""
                INSERT INTO version_checks(app, day, app_version, checks) SELECT ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM apps WHERE name = ?)
                ON CONFLICT(app, day, app_version) DO UPDATE SET checks = version_checks.checks + excluded.checks
                """)
            for (app, versions) in counts.sorted(by: { $0.key < $1.key }) {
                for (version, checks) in versions.sorted(by: { $0.key < $1.key }) {
                    try upsert.run([.text(app.rawValue), .text(day), .text(version), .int(Int64(checks)), .text(app.rawValue)])
                }
                let rows = try db.query("SELECT count(*) FROM version_checks WHERE app = ? AND day = ?", [.text(app.rawValue), .text(day)]) { $0.int(0) }.first ?? 0
                guard rows > Int64(Registry.maxAskedVersionsPerDay) else { continue }
                try db.run("""
                    DELETE FROM version_checks WHERE app = ? AND day = ? AND app_version NOT IN (
                        SELECT app_version FROM version_checks WHERE app = ? AND day = ? ORDER BY checks DESC, app_version LIMIT ?)
                    """, [.text(app.rawValue), .text(day), .text(app.rawValue), .text(day), .int(Int64(Registry.maxAskedVersionsPerDay))])
            }
        }
    }

    /// Deletes the counts of days before the window; the number of rows deleted.
    @discardableResult
    public func pruneVersionChecks(now: Date = Date()) throws(RegistryError) -> Int {
        try write { () throws -> Int in
            try db.run("DELETE FROM version_checks WHERE day < ?", [.text(Registry.firstAskedDay(now: now))])
            return db.changes
        }
    }

    /// The versions of `app` devices checked for in the window, the most asked first (then the
    /// newest version).
    public func askedVersions(app: AppName, now: Date = Date()) throws(RegistryError) -> [AskedVersion] {
        _ = try self.app(app)
        return try askedVersionRows(app: app, now: now)
    }

    /// `askedVersions` without looking the app up (none asked of an app that is not there).
    func askedVersionRows(app: AppName, now: Date) throws(RegistryError) -> [AskedVersion] {
        let rows = try read { () throws(StorageError) in
            try db.query("""
                SELECT app_version, CAST(SUM(checks) AS BIGINT), MAX(day) FROM version_checks WHERE app = ? AND day >= ? GROUP BY app_version
                """, [.text(app.rawValue), .text(Registry.firstAskedDay(now: now))]) { row in
                (try? AppVersion(row.text(0))).map { AskedVersion(appVersion: $0, checks: Int(row.int(1)), lastDay: row.text(2)) }
            }
        }
        return try Registry.intact(rows, what: "version_checks").sorted { ($0.checks, $0.appVersion) > ($1.checks, $1.appVersion) }
    }

    /// What a range or wildcard of `publish --app-version` expands against: every version of
    /// `app` with a patch (in any channel, revoked or not) and every version devices checked
    /// for in the window.
    public func knownVersions(app: AppName, now: Date = Date()) throws(RegistryError) -> [AppVersion] {
        let rows = try read { () throws(StorageError) in
            try db.query("""
                SELECT DISTINCT app_version FROM patches WHERE app = ?
                UNION SELECT DISTINCT app_version FROM version_checks WHERE app = ? AND day >= ?
                """, [.text(app.rawValue), .text(app.rawValue), .text(Registry.firstAskedDay(now: now))]) { try? AppVersion($0.text(0)) }
        }
        return try Registry.intact(rows, what: "versions").sorted()
    }

    /// The versions patchd's tally counts exactly, never evicting them for versions it has not
    /// seen before: the `limit` most asked in the window and every version with an active patch.
    public func establishedVersions(app: AppName, limit: Int, now: Date = Date()) throws(RegistryError) -> Set<String> {
        try read { () throws(StorageError) in
            let asked = try db.query("""
                SELECT app_version FROM version_checks WHERE app = ? AND day >= ? GROUP BY app_version ORDER BY SUM(checks) DESC, app_version LIMIT ?
                """, [.text(app.rawValue), .text(Registry.firstAskedDay(now: now)), .int(Int64(limit))]) { $0.text(0) }
            let patched = try db.query("SELECT DISTINCT app_version FROM patches WHERE app = ? AND state = 'active'", [.text(app.rawValue)]) { $0.text(0) }
            return Set(asked + patched)
        }
    }
}

/// What a publish says about the versions it targets that no device asked for: the mix-up
/// the issue is about (`--app-version 2.3.0` when the devices send `2.3`).
public struct VersionWarning: Sendable, Equatable {
    /// The versions published to that no device checked for in the window.
    public let unasked: [AppVersion]
    /// What devices do check for, the most asked first.
    public let asked: [AskedVersion]

    /// nil when every version in `versions` is asked for. With nothing asked at all (an app no
    /// device has checked yet) there is no mix-up to point at: nil, unless `strict`.
    public init?(versions: [AppVersion], asked: [AskedVersion], strict: Bool) {
        let names = Set(asked.map(\.appVersion.rawValue))
        let unasked = versions.filter { !names.contains($0.rawValue) }
        guard !unasked.isEmpty, !asked.isEmpty || strict else { return nil }
        self.unasked = unasked
        self.asked = asked
    }

    /// Versions named in the warning, at most: the most asked; the rest are counted.
    static let shown = 8

    /// "devices ask for 2.3 and 2.3.1, none for 2.3.0 (2.3 and 2.3.0 are different versions:
    /// apps send what they send)".
    public var message: String {
        let none = "none for \(VersionWarning.list(unasked.map(\.rawValue)))"
        guard !asked.isEmpty else {
            return "no device has checked for any version of this app in the last \(Registry.askedVersionsDays) days, so \(none)"
        }
        var names = asked.prefix(VersionWarning.shown).map(\.appVersion.rawValue)
        if asked.count > VersionWarning.shown { names.append("\(asked.count - VersionWarning.shown) more") }
        var text = "devices ask for \(VersionWarning.list(names)), \(none)"
        // The same numbers written differently are the likeliest slip: said outright.
        let twins = unasked.compactMap { target in
            asked.first { VersionSelector.numericOrder($0.appVersion, target) == 0 }.map { "\($0.appVersion) and \(target)" }
        }
        if let twin = twins.first { text += " (\(twin) are different versions: apps send what they send)" }
        return text
    }

    /// "a", "a and b", "a, b and c".
    static func list(_ items: [String]) -> String {
        guard items.count > 1 else { return items.first ?? "" }
        return items.dropLast().joined(separator: ", ") + " and " + items[items.count - 1]
    }
}
