import Foundation
import PatchCore
import PatchPush
import PatchSigning

/// Webhook subscriptions (issue 47): added, listed, removed and tested per app, each change
/// audited. Their events are written by `AuditLog.append` and the upkeep (`noteWebhookState`)
/// into the outbox (WebhookOutbox.swift), and delivered by patchd (Registry+WebhookDelivery.swift).
extension Registry {
    static let webhookColumns = """
        id, app, url, events, insecure_http, max_pending, created_at, created_by, delivered, failed, dropped,
        last_delivery_at, last_error, last_error_at, (SELECT COUNT(*) FROM webhook_outbox o WHERE o.sub = webhooks.id)
        """

    static func webhookSubscription(_ s: SQLRow) -> WebhookSubscription? {
        guard let app = try? AppName(s.text(1)), let url = try? WebhookURL(s.text(2), insecureHTTP: true) else { return nil }
        return WebhookSubscription(id: s.text(0), app: app, url: url, events: WebhookEventFilter(stored: s.text(3)), insecureHTTP: s.int(4) != 0,
                                   maxPending: Int(s.int(5)), createdAt: s.text(6), createdBy: s.text(7), delivered: Int(s.int(8)),
                                   failed: Int(s.int(9)), dropped: Int(s.int(10)), pending: Int(s.int(14)), lastDeliveryAt: s.optionalText(11),
                                   lastError: s.optionalText(12), lastErrorAt: s.optionalText(13))
    }

    /// The app's live subscriptions, oldest first.
    public func webhooks(app: AppName) throws(RegistryError) -> [WebhookSubscription] {
        _ = try self.app(app)
        let rows = try read { () throws(StorageError) in
            try db.query("SELECT \(Registry.webhookColumns) FROM webhooks WHERE app = ? AND removed_at IS NULL ORDER BY created_at, id",
                         [.text(app.rawValue)], row: Registry.webhookSubscription)
        }
        return try Registry.intact(rows, what: "webhooks")
    }

    /// Adds a subscription. Without `secret` one is made (32 random bytes, hex) and returned,
    /// the only time it leaves the registry. With `webhookAddresses` `.publicOnly` (patchd's
    /// `--webhook-deny-private`) a URL whose host resolves to a private address is refused.
    public func addWebhook(app: AppName, url text: String, events: WebhookEventFilter = .all, secret given: String? = nil, insecureHTTP: Bool = false,
                           maxPending: Int = WebhookSubscription.defaultMaxPending, actor: Actor,
                           now: Date = Date()) throws(RegistryError) -> (subscription: WebhookSubscription, secret: String?) {
        let url = try RegistryError.checking { () throws(WebhookURLError) in try WebhookURL(text, insecureHTTP: insecureHTTP) }
        guard WebhookSubscription.maxPendingRange.contains(maxPending) else {
            throw .invalidCall("maxPending must be \(WebhookSubscription.maxPendingRange.lowerBound) to \(WebhookSubscription.maxPendingRange.upperBound)")
        }
        if let given { try WebhookSubscription.checkSecret(given) }
        if webhookAddresses == .publicOnly { _ = try RegistryError.checking { () throws(WebhookURLError) in try WebhookAddress.publicAddresses(url.host) } }
        let secret: String, id: String
        do throws(CryptoError) {
            let made = try SecureRandom.bytes(32)
            secret = given ?? "whsec_" + Hex.encode(made)
            id = try Hex.encode(SecureRandom.bytes(6))
        } catch { throw .crypto(error) }
        let subscription = WebhookSubscription(id: id, app: app, url: url, events: events, insecureHTTP: insecureHTTP && !url.isHTTPS, maxPending: maxPending,
                                               createdAt: TUFTime.format(now), createdBy: actor.name, delivered: 0, failed: 0, dropped: 0, pending: 0)
        try write { () throws in
            _ = try self.app(app)
            let live = try db.query("SELECT COUNT(*) FROM webhooks WHERE app = ? AND removed_at IS NULL", [.text(app.rawValue)]) { $0.int(0) }.first ?? 0
            guard live < WebhookSubscription.maxPerApp else {
                throw RegistryError.conflict("app \"\(app)\" has \(live) webhooks, the most an app may: remove one first; nothing was added")
            }
            try db.run("""
                INSERT INTO webhooks(id, app, url, events, secret, insecure_http, max_pending, created_at, created_by, delivered, failed, dropped)
                VALUES (?,?,?,?,?,?,?,?,?,0,0,0)
                """, [.text(id), .text(app.rawValue), .text(text), .text(events.stored), .text(secret), .int(subscription.insecureHTTP ? 1 : 0),
                      .int(Int64(maxPending)), .text(subscription.createdAt), .text(actor.name)])
            var details: [String: JSON] = ["id": .string(id), "url": .string(url.shown), "events": .array(events.items.map(JSON.string)),
                                           "maxPending": .int(Int64(maxPending)), "secretGiven": .bool(given != nil)]
            if subscription.insecureHTTP { details["insecureHttp"] = true }
            try AuditLog.append(db, app: app.rawValue, actor: actor, action: "webhook.add", details: .object(details), at: now)
        }
        return (subscription, given == nil ? secret : nil)
    }

    /// Removes a subscription and drops what it had still to deliver (counted as dropped).
    @discardableResult
    public func removeWebhook(app: AppName, id: String, actor: Actor, now: Date = Date()) throws(RegistryError) -> WebhookSubscription {
        try write { () throws -> WebhookSubscription in
            let subscription = try liveWebhook(app: app, id: id)
            try db.run("UPDATE webhooks SET removed_at = ?, dropped = dropped + (SELECT COUNT(*) FROM webhook_outbox o WHERE o.sub = webhooks.id) WHERE id = ?",
                       [.text(TUFTime.format(now)), .text(id)])
            try db.run("DELETE FROM webhook_outbox WHERE sub = ?", [.text(id)])
            try AuditLog.append(db, app: app.rawValue, actor: actor, action: "webhook.remove",
                                details: ["id": .string(id), "url": .string(subscription.url.shown), "dropped": .int(Int64(subscription.pending))], at: now)
            return subscription
        }
    }

    /// Queues a `webhook.test` event for one subscription: delivered as every event is, by
    /// patchd's upkeep, so a test proves the path the real ones take.
    public func testWebhook(app: AppName, id: String, actor: Actor, now: Date = Date()) throws(RegistryError) -> WebhookEvent {
        try write { () throws -> WebhookEvent in
            _ = try liveWebhook(app: app, id: id)
            let event = try WebhookEvent.make(type: "webhook.test", app: app.rawValue, at: now, actor: actor.name, details: ["subscription": .string(id)])
            try WebhookOutbox.enqueue(db, event, only: id)
            try AuditLog.append(db, app: app.rawValue, actor: actor, action: "webhook.test", details: ["id": .string(id), "event": .string(event.id)], at: now)
            return event
        }
    }

    private func liveWebhook(app: AppName, id: String) throws -> WebhookSubscription {
        _ = try self.app(app)
        let found = try db.query("SELECT \(Registry.webhookColumns) FROM webhooks WHERE app = ? AND id = ? AND removed_at IS NULL",
                                 [.text(app.rawValue), .text(id)], row: Registry.webhookSubscription).first
        guard let found else { throw RegistryError.notFound("app \"\(app)\" has no webhook \(id.debugSanitized) (`patchctl apps webhook list \(app)`)") }
        guard let subscription = found else { throw RegistryError.internalError("corrupt row in webhooks") }
        return subscription
    }

    // MARK: Events nobody's change makes (the upkeep's)

    /// Sends `type` once for the state `mark` names (until `clearWebhookState` removes it):
    /// a re-sign failing, a role within its warning window, an app's health degraded. A pass
    /// that finds the mark set writes nothing. True when the event was written.
    @discardableResult
    public func noteWebhookState(app: AppName, mark: String, type: String, details: [String: JSON], now: Date = Date()) throws(RegistryError) -> Bool {
        if try read({ () throws(StorageError) in try WebhookOutbox.marked(db, app: app.rawValue, mark: mark) }) { return false }
        return try write { () throws -> Bool in
            try WebhookOutbox.enqueueOnce(db, try WebhookEvent.make(type: type, app: app.rawValue, at: now, details: details), mark: mark)
        }
    }

    /// Ends the states whose marks start with `prefix`, so the next time one is entered it is
    /// told again. Writes only when one is set.
    public func clearWebhookState(app: AppName, prefix: String) throws(RegistryError) {
        let pattern = prefix + "%"
        let set = try read { () throws(StorageError) in
            try db.query("SELECT 1 FROM webhook_marks WHERE app = ? AND mark LIKE ? LIMIT 1", [.text(app.rawValue), .text(pattern)]) { $0.int(0) }
        }
        guard !set.isEmpty else { return }
        try write { () throws in try db.run("DELETE FROM webhook_marks WHERE app = ? AND mark LIKE ?", [.text(app.rawValue), .text(pattern)]) }
    }
}
