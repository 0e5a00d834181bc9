import Foundation
import PatchCore

/// Declared channels (issue 42): an app's channels are a list it keeps (`channels`), not
/// whatever a command names. A mistyped `publish --channel stagign` or `promote --to prodution`
/// used to make a channel no device follows, silently; now every operation that names a channel
/// refuses one the app has not declared, with nothing changed, and says which it meant.
extension Registry {
    /// The channels `app` has declared: production first, then the others by name.
    public func channels(app name: AppName) throws(RegistryError) -> [ChannelName] {
        _ = try app(name)
        return try declaredChannels(app: name)
    }

    /// Declares `channel` for `app`. True when it is new (recorded as `channel.create` in the
    /// same transaction); false when it was declared already, with nothing written, so a
    /// retried command is harmless.
    @discardableResult
    public func declareChannel(app name: AppName, channel: ChannelName, actor: Actor, now: Date = Date()) throws(RegistryError) -> Bool {
        try write { () throws -> Bool in
            _ = try self.app(name)
            return try addChannel(channel, app: name, actor: actor, now: now)
        }
    }

    /// Declares `channel` inside the caller's write transaction and audits it; false (nothing
    /// written) when it is declared already. `publish --new-channel` comes here too, so the
    /// declaration commits or rolls back with the publish.
    func addChannel(_ channel: ChannelName, app: AppName, actor: Actor, now: Date) throws -> Bool {
        let found = try db.query("SELECT 1 FROM channels WHERE app = ? AND name = ?", [.text(app.rawValue), .text(channel.rawValue)]) { $0.int(0) }
        guard found.isEmpty else { return false }
        try db.run("INSERT INTO channels(app, name, created_at, created_by) VALUES (?,?,?,?)",
                   [.text(app.rawValue), .text(channel.rawValue), .text(TUFTime.format(now)), .text(actor.name)])
        try AuditLog.append(db, app: app.rawValue, actor: actor, action: "channel.create", details: ["channel": .string(channel.rawValue)], at: now)
        return true
    }

    /// The app's record, refused (`notFound`, nothing changed) when it has not declared each of
    /// `channels`. The app and its channels are read in one statement, so an operation that
    /// names a channel asks the database no more often than it did before channels were
    /// declared (`PublishCostTests`). Inside a write, it decides with the write's own reads.
    func app(_ name: AppName, declaring channels: [ChannelName]) throws(RegistryError) -> AppRecord {
        let wanted = Set(channels).sorted()
        guard !wanted.isEmpty else { return try app(name) }
        let marks = Array(repeating: "?", count: wanted.count).joined(separator: ", ")
        let rows = try read { () throws(StorageError) in
            try db.query("""
                SELECT \(Registry.appColumns), (SELECT count(*) FROM channels c WHERE c.app = apps.name AND c.name IN (\(marks)))
                FROM apps WHERE name = ?
                """, wanted.map { .text($0.rawValue) } + [.text(name.rawValue)]) { (Registry.appRecord($0), $0.int(5)) }
        }
        guard let (record, declared) = rows.first else { throw Registry.unknownApp(name) }
        guard let record else { throw .internalError("1 corrupt row(s) in apps") }
        if declared < Int64(wanted.count) {
            let known = try declaredChannels(app: name)
            if let missing = wanted.first(where: { !known.contains($0) }) { throw Registry.undeclared(missing, app: name, declared: known) }
        }
        return record
    }

    /// Refuses (`notFound`) a channel `app` has not declared, for an operation that has read its
    /// app already or reads nothing else (a listing, a push round's audience).
    func requireChannel(_ channel: ChannelName, app: AppName) throws(RegistryError) {
        _ = try self.app(app, declaring: [channel])
    }

    /// "app demo has no channel "stagign"; did you mean "staging"? …": what a caller can do
    /// next, named. A notFound, as for an unknown app (HTTP 404, patchctl exit 2).
    static func undeclared(_ channel: ChannelName, app: AppName, declared: [ChannelName]) -> RegistryError {
        let hint = Suggestion.closest(to: channel.rawValue, among: declared.map(\.rawValue)).map { "; did you mean \"\($0)\"?" }
            ?? " (its channels: \(declared.map(\.rawValue).joined(separator: ", ")))."
        return .notFound("app \(app) has no channel \"\(channel)\"\(hint) Nothing was changed (declare a new one with `patchctl channels create NAME` or publish with --new-channel)")
    }

    func declaredChannels(app: AppName) throws(RegistryError) -> [ChannelName] {
        let rows = try read { () throws(StorageError) in
            try db.query("SELECT name FROM channels WHERE app = ?", [.text(app.rawValue)]) { try? ChannelName($0.text(0)) }
        }
        return try Registry.intact(rows, what: "channels").sorted(by: VersionServing.productionFirst)
    }
}
