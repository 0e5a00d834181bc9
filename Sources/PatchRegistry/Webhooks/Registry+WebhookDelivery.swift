import Foundation
import PatchCore
import PatchPush

/// What patchd's deliverer asks of the outbox: the next attempt of each subscription, claimed
/// in a write transaction (serialised across instances: SQLite's BEGIN IMMEDIATE, PostgreSQL's
/// writer lock) for a time longer than any attempt may take, so exactly one instance sends it;
/// then what came of it. A process killed after sending and before recording leaves the claim
/// to run out: the event is sent again, with the same id (at least once, never lost).
extension Registry {
    /// Claims, for `claimFor` seconds, the oldest event of up to `limit` subscriptions whose
    /// event is due and unclaimed. Only the head of each subscription's outbox is ever sent,
    /// so its events arrive in the order they were written.
    public func claimWebhookDeliveries(limit: Int, claimFor: Double, now: Date = Date()) throws(RegistryError) -> [WebhookDelivery] {
        let ms = WebhookOutbox.milliseconds(now)
        // A read first: a pass with nothing due writes nothing (every write wakes every
        // instance's reload on PostgreSQL).
        let due = try read { () throws(StorageError) in
            try db.query("SELECT 1 FROM webhook_outbox WHERE next_ms <= ? AND claimed_until_ms <= ? LIMIT 1", [.int(ms), .int(ms)]) { $0.int(0) }
        }
        guard !due.isEmpty else { return [] }
        return try write { () throws -> [WebhookDelivery] in
            let rows = try db.query("""
                SELECT o.sub, o.app, w.url, w.secret, o.n, o.event_id, o.type, o.body, o.attempts, o.created_ms
                FROM webhook_outbox o JOIN webhooks w ON w.id = o.sub
                WHERE w.removed_at IS NULL AND o.next_ms <= ? AND o.claimed_until_ms <= ?
                  AND o.n = (SELECT MIN(m.n) FROM webhook_outbox m WHERE m.sub = o.sub)
                ORDER BY o.n LIMIT ?
                """, [.int(ms), .int(ms), .int(Int64(limit))]) { s -> WebhookDelivery? in
                guard let url = try? WebhookURL(s.text(2), insecureHTTP: true) else { return nil }
                return WebhookDelivery(subscription: s.text(0), app: s.text(1), url: url, secret: s.text(3), n: s.int(4), eventID: s.text(5),
                                       type: s.text(6), body: s.blob(7), attempts: Int(s.int(8)), createdMs: s.int(9))
            }
            let claimed = try Registry.intact(rows, what: "webhooks")
            let until = ms + Int64(claimFor * 1000)
            for delivery in claimed {
                try db.run("UPDATE webhook_outbox SET claimed_until_ms = ? WHERE sub = ? AND n = ?", [.int(until), .text(delivery.subscription), .int(delivery.n)])
            }
            return claimed
        }
    }

    /// Records what became of an attempt: a delivered event leaves the outbox; a failed one is
    /// tried again after `retry`'s delay, or given up (counted as failed) once `retry.window`
    /// has passed since it was written, or at once when it is not worth another attempt.
    public func recordWebhookAttempt(_ delivery: WebhookDelivery, _ outcome: WebhookOutcome, retry: WebhookRetryPolicy, random: Double = Double.random(in: 0..<1),
                                     now: Date = Date()) throws(RegistryError) {
        let ms = WebhookOutbox.milliseconds(now)
        let time = TUFTime.format(now)
        let key: [SQLValue] = [.text(delivery.subscription), .int(delivery.n), .text(delivery.eventID)]
        try write { () throws in
            switch outcome {
            case .delivered:
                try db.run("DELETE FROM webhook_outbox WHERE sub = ? AND n = ? AND event_id = ?", key)
                // An event sent twice (a claim that ran out) is counted once.
                try db.run("UPDATE webhooks SET delivered = delivered + ?, last_delivery_at = ? WHERE id = ?",
                           [.int(db.changes == 1 ? 1 : 0), .text(time), .text(delivery.subscription)])
            case .retry(let why) where Double(ms - delivery.createdMs) / 1000 + retry.delay(afterAttempts: delivery.attempts + 1, random: random) < retry.window:
                let next = ms + Int64(retry.delay(afterAttempts: delivery.attempts + 1, random: random) * 1000)
                try db.run("UPDATE webhook_outbox SET attempts = attempts + 1, next_ms = ?, claimed_until_ms = 0, last_error = ? WHERE sub = ? AND n = ? AND event_id = ?",
                           [.int(next), .text(why)] + key)
                try db.run("UPDATE webhooks SET last_error = ?, last_error_at = ? WHERE id = ?", [.text(why), .text(time), .text(delivery.subscription)])
            case .retry(let why), .failed(let why):
                let given = outcome == .retry(why) ? "\(why) (given up after \(delivery.attempts + 1) attempts)" : why
                try db.run("DELETE FROM webhook_outbox WHERE sub = ? AND n = ? AND event_id = ?", key)
                // Counted once: a claim that ran out and was delivered by another instance meanwhile
                // has left the outbox already.
                if db.changes == 1 {
                    try db.run("UPDATE webhooks SET failed = failed + 1, last_error = ?, last_error_at = ? WHERE id = ?",
                               [.text(given), .text(time), .text(delivery.subscription)])
                }
            }
        }
    }

    /// Per app: events delivered, given up, dropped past the bound (every subscription there
    /// ever was, so the counts never fall), and waiting now. For `/metrics`.
    public func webhookCounts() throws(RegistryError) -> [(app: String, delivered: Int, failed: Int, dropped: Int, pending: Int)] {
        try read { () throws(StorageError) in
            try db.query("""
                SELECT w.app, SUM(w.delivered), SUM(w.failed), SUM(w.dropped), (SELECT COUNT(*) FROM webhook_outbox o WHERE o.app = w.app)
                FROM webhooks w GROUP BY w.app ORDER BY w.app
                """) { s in (s.text(0), Int(s.int(1)), Int(s.int(2)), Int(s.int(3)), Int(s.int(4))) }
        }
    }
}
