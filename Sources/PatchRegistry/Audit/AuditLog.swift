import Foundation
import PatchCore

/// One entry of the audit log. `hash` covers every other field and the previous entry's
/// hash, so editing, deleting or reordering any entry breaks the chain from there on.
public struct AuditEvent: Sendable, Equatable {
    public let seq: Int64
    public let at: String
    public let app: String
    public let actor: String
    public let action: String
    public let details: JSON
    public let prev: String
    public let hash: String

    /// The canonical JSON the hash is taken over.
    static func chainInput(seq: Int64, at: String, app: String, actor: String, action: String, details: JSON, prev: String) -> [UInt8] {
        JSON.object([
            "seq": .int(seq), "at": .string(at), "app": .string(app), "actor": .string(actor),
            "action": .string(action), "details": details, "prev": .string(prev),
        ]).canonicalBytes
    }

    var expectedHash: String {
        Digest.sha256Hex(AuditEvent.chainInput(seq: seq, at: at, app: app, actor: actor, action: action, details: details, prev: prev))
    }

    public var json: JSON {
        ["seq": .int(seq), "at": .string(at), "app": .string(app), "actor": .string(actor), "action": .string(action),
         "details": details, "prev": .string(prev), "hash": .string(hash)]
    }
}

/// The result of re-walking the chain.
public enum AuditVerification: Sendable, Equatable {
    case intact(events: Int, head: String)
    case broken(seq: Int64, reason: String)

    /// The `chain` of an audit listing. The chain spans every app, so `global: false` (a
    /// reader of one app) says only whether it is intact: the count, head and break point
    /// describe other apps' events too.
    public func json(global: Bool) -> JSON {
        switch self {
        case .intact(let count, let head): return global ? ["intact": true, "events": .int(Int64(count)), "head": .string(head)] : ["intact": true]
        case .broken(let seq, let reason): return global ? ["intact": false, "seq": .int(seq), "reason": .string(reason)] : ["intact": false]
        }
    }
}

enum AuditLog {
    static let genesis = String(repeating: "0", count: 64)

    /// Appends inside the caller's transaction, so an event exists exactly when its change does,
    /// and so do the webhook events it makes.
    @discardableResult
    static func append(_ db: any SQLStore, app: String, actor: Actor, action: String, details: JSON, at: Date) throws(StorageError) -> AuditEvent {
        let last = try db.query("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1") { s in (s.int(0), s.text(1)) }.first
        let seq = (last?.0 ?? 0) + 1
        let prev = last?.1 ?? genesis
        let time = TUFTime.format(at)
        let input = AuditEvent.chainInput(seq: seq, at: time, app: app, actor: actor.name, action: action, details: details, prev: prev)
        let hash = Digest.sha256Hex(input)
        // Sent with the COMMIT on PostgreSQL (`runInTransaction`); a failure rolls back the change.
        try db.runInTransaction("INSERT INTO audit(seq, at, app, actor, action, details, prev, hash) VALUES (?,?,?,?,?,?,?,?)", [
            .int(seq), .text(time), .text(app), .text(actor.name), .text(action), .text(details.canonicalString), .text(prev), .text(hash),
        ])
        let event = AuditEvent(seq: seq, at: time, app: app, actor: actor.name, action: action, details: details, prev: prev, hash: hash)
        // In the same transaction: the change, its audit event and its webhook events commit
        // together or not at all (Webhooks/WebhookOutbox.swift).
        try notifyWebhooks(db, event)
        return event
    }

    /// Events in seq order: those after `after` (a seq; 0 for the start), at most `limit`.
    static func events(_ db: any SQLStore, app: String?, after: Int64 = 0, limit: Int? = nil) throws(StorageError) -> [AuditEvent] {
        try events(db, app: app, where: "seq > ?", [.int(after)], order: "seq", limit: limit)
    }

    /// Events newest first: those with a seq below `before` (and above `after`), at most
    /// `limit`. The newest page is what a reader of the log usually wants, and paging
    /// forward to it would read the whole log first.
    static func events(_ db: any SQLStore, app: String?, before: Int64, after: Int64 = 0, limit: Int? = nil) throws(StorageError) -> [AuditEvent] {
        try events(db, app: app, where: "seq < ? AND seq > ?", [.int(before), .int(after)], order: "seq DESC", limit: limit)
    }

    private static func events(_ db: any SQLStore, app: String?, where bound: String, _ seqs: [SQLValue], order: String,
                               limit: Int?) throws(StorageError) -> [AuditEvent] {
        var sql = "SELECT seq, at, app, actor, action, details, prev, hash FROM audit WHERE \(bound)"
        var bindings: [SQLValue] = seqs
        if let app { sql += " AND app = ?"; bindings.append(.text(app)) }
        sql += " ORDER BY \(order)"
        if let limit { sql += " LIMIT ?"; bindings.append(.int(Int64(limit))) }
        return try db.query(sql, bindings) { s throws(StorageError) in
            // A details column that no longer parses is itself evidence of tampering;
            // keep the raw text so verification reports it instead of failing to list.
            let raw = s.text(5)
            let details = (try? JSONParser.parse(raw)) ?? .string(raw)
            return AuditEvent(seq: s.int(0), at: s.text(1), app: s.text(2), actor: s.text(3), action: s.text(4),
                              details: details, prev: s.text(6), hash: s.text(7))
        }
    }

    static func verify(_ events: [AuditEvent]) -> AuditVerification {
        var prev = genesis
        var expectedSeq: Int64 = 1
        for event in events {
            guard event.seq == expectedSeq else { return .broken(seq: event.seq, reason: "expected event \(expectedSeq) here: an event was removed") }
            guard event.prev == prev else { return .broken(seq: event.seq, reason: "does not link to the previous event's hash") }
            guard event.hash == event.expectedHash else { return .broken(seq: event.seq, reason: "content does not match its hash: the event was altered") }
            prev = event.hash
            expectedSeq += 1
        }
        return .intact(events: events.count, head: prev)
    }
}
