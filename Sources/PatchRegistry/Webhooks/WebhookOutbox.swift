import Foundation
import PatchCore

/// The outbox: an event is written here for every subscription of its app that wants it, in
/// the transaction of the change it reports (`AuditLog.append` calls `enqueue`), so a change
/// that commits has its events and one that rolls back has none, whatever crashes when. patchd
/// delivers from here (`Registry.claimWebhookDeliveries`), oldest first per subscription.
///
/// Every statement here is sent with the transaction's next round trip on PostgreSQL
/// (`runInTransaction`): an app without subscriptions costs a publish no round trip.
enum WebhookOutbox {
    /// Writes `event` for each live subscription of its app whose filter takes it (or for
    /// `only` that one), then keeps each within its `max_pending`: past it the oldest waiting
    /// event is dropped and counted (`dropped`). `n` is one more than any in the outbox, so it
    /// orders each subscription's events (writers are serialised: SQLite's BEGIN IMMEDIATE,
    /// PostgreSQL's writer lock).
    /// Its delivery times are the wall clock's (the event's own `at` may be a change's
    /// recorded time, such as an approved change's proposal).
    static func enqueue(_ db: any SQLStore, _ event: WebhookEvent, only subscription: String? = nil) throws(StorageError) {
        let ms = WebhookOutbox.milliseconds(Date())
        let target = subscription == nil
            ? "w.app = ? AND (w.events = '*' OR w.events LIKE ? OR w.events LIKE ?)"
            : "w.app = ? AND w.id = ?"
        let match: [SQLValue] = subscription.map { [.text(event.app), .text($0)] }
            ?? [.text(event.app), .text("%,\(event.type),%"), .text("%,\(WebhookEvent.family(event.type)).*,%")]
        // Typed casts: in INSERT … SELECT PostgreSQL types an untyped parameter as text.
        try db.runInTransaction("""
            INSERT INTO webhook_outbox(sub, n, event_id, type, app, body, created_ms, attempts, next_ms, claimed_until_ms)
            SELECT w.id, (SELECT COALESCE(MAX(n), 0) + 1 FROM webhook_outbox), ?, ?, ?, ?, CAST(? AS BIGINT), 0, CAST(? AS BIGINT), 0
            FROM webhooks w WHERE w.removed_at IS NULL AND \(target)
            """, [.text(event.id), .text(event.type), .text(event.app), .blob(event.body), .int(ms), .int(ms)] + match)
        try db.runInTransaction("""
            UPDATE webhooks SET dropped = dropped + 1
            WHERE app = ? AND removed_at IS NULL AND (SELECT COUNT(*) FROM webhook_outbox o WHERE o.sub = webhooks.id) > max_pending
            """, [.text(event.app)])
        try db.runInTransaction("""
            DELETE FROM webhook_outbox
            WHERE sub IN (SELECT id FROM webhooks WHERE app = ? AND removed_at IS NULL)
              AND n = (SELECT MIN(m.n) FROM webhook_outbox m WHERE m.sub = webhook_outbox.sub)
              AND (SELECT COUNT(*) FROM webhook_outbox c WHERE c.sub = webhook_outbox.sub) > (SELECT w.max_pending FROM webhooks w WHERE w.id = webhook_outbox.sub)
            """, [.text(event.app)])
    }

    /// Whether `mark` is set for `app` (an event sent once per state).
    static func marked(_ db: any SQLStore, app: String, mark: String) throws(StorageError) -> Bool {
        try !db.query("SELECT 1 FROM webhook_marks WHERE app = ? AND mark = ?", [.text(app), .text(mark)]) { $0.int(0) }.isEmpty
    }

    /// Sets `mark` and enqueues `event` when it was not set: once per state, however many
    /// passes (and instances) see the state. True when it was sent.
    static func enqueueOnce(_ db: any SQLStore, _ event: WebhookEvent, mark: String) throws(StorageError) -> Bool {
        try db.run("INSERT INTO webhook_marks(app, mark) VALUES (?, ?) ON CONFLICT DO NOTHING", [.text(event.app), .text(mark)])
        guard db.changes == 1 else { return false }
        try enqueue(db, event)
        return true
    }

    static func milliseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded(.down)) }
}

extension AuditLog {
    /// The one place an audited change becomes a webhook event (called from `append`).
    static func notifyWebhooks(_ db: any SQLStore, _ event: AuditEvent) throws(StorageError) {
        guard let webhook = try WebhookEvent.audited(event) else { return }
        try WebhookOutbox.enqueue(db, webhook)
    }
}
