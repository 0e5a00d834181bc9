import Foundation
import HTTPTransport
import Locking
import PatchCore
import PatchPush
import PatchRegistry

/// How patchd delivers webhooks (patchd's `--webhook-*` options).
public struct WebhookSettings: Sendable {
    /// Seconds between delivery passes (`--webhook-interval`).
    public var interval: Double = 1
    public var retry = WebhookRetryPolicy()
    /// Seconds to connect, and for a whole attempt (`--webhook-connect-timeout`, `--webhook-timeout`).
    public var connectTimeout: Double = 5
    public var timeout: Double = 10
    /// Refuse destinations in private, loopback and link-local ranges (`--webhook-deny-private`).
    public var denyPrivate = false
    /// Subscriptions served per round, at most, each its oldest event, all at once.
    public var batch = 16
    /// Rounds per pass, at most: a subscription gets up to this many events a pass.
    static let maxRounds = 64
    /// Seconds before root or targets metadata expires when `metadata.expiring` is sent (`--expiry-warning`).
    public var expiryWarning: Double = 14 * 86_400

    /// How long a claimed attempt is this instance's: longer than the attempt can take, so no
    /// other instance sends the event while this one may still be sending it.
    var claim: Double { connectTimeout + timeout + 5 }

    public init() {}
}

extension PatchService {
    /// One delivery pass (patchd's upkeep, every `--webhook-interval` s): on the lease holder
    /// (every instance on SQLite), rounds of: claim the next event of each subscription that has
    /// one due, send them at once outside the registry lock, record what came of each. A round
    /// after a delivery finds the subscription's next event due, so a burst (a release day's
    /// twenty events) goes out back to back, not one a pass; a failure waits its backoff. At
    /// most `maxRounds` rounds, and none once `shouldContinue` says patchd is stopping. The
    /// claim, taken in a write transaction, is what makes one instance send each attempt.
    public func deliverWebhooks(while shouldContinue: () -> Bool = { true }) {
        let settings = configuration.webhooks
        for _ in 0..<WebhookSettings.maxRounds where shouldContinue() {
            guard deliverRound(settings) else { break }
        }
        if let counts = registry.withLock({ try? $0.webhookCounts() }) { webhookStatus.note(counts) }
    }

    /// One round; false when nothing was due.
    private func deliverRound(_ settings: WebhookSettings) -> Bool {
        let claimed: [WebhookDelivery] = registry.withLock { registry in
            guard registry.holdsUpkeepLease() else { return [] }
            do { return try registry.claimWebhookDeliveries(limit: settings.batch, claimFor: settings.claim) } catch {
                logOnce("webhooks: cannot read the outbox: \(error)")
                return []
            }
        }
        guard !claimed.isEmpty else { return false }
        let sender = WebhookSender(connectTimeout: settings.connectTimeout, timeout: settings.timeout, denyPrivate: settings.denyPrivate)
        let outcomes = Locked([Int: WebhookOutcome]())
        DispatchQueue.concurrentPerform(iterations: claimed.count) { i in
            let outcome = sender.send(claimed[i])
            outcomes.withLock { $0[i] = outcome }
        }
        let results = outcomes.withLock { $0 }
        registry.withLock { registry in
            for (i, delivery) in claimed.enumerated() {
                guard let outcome = results[i] else { continue }
                switch outcome {
                case .delivered: break
                case .retry(let why): logOnce("webhook \(delivery.subscription) of \(delivery.app) (\(delivery.url.shown)): \(why); retried")
                case .failed(let why): logOnce("webhook \(delivery.subscription) of \(delivery.app) (\(delivery.url.shown)): \(why); not retried")
                }
                do { try registry.recordWebhookAttempt(delivery, outcome, retry: settings.retry) } catch {
                    // The claim runs out and the event is sent again, with the same id.
                    logOnce("webhooks: cannot record an attempt: \(error)")
                }
            }
        }
        return true
    }

    /// The events of states the upkeep pass sees (its lease holder): a re-sign that failed
    /// (until one succeeds), root or targets metadata within `expiryWarning` of expiring (once
    /// per signed version), an app's timestamp within `--expiry-margin` (health degraded, until
    /// it is not). Each told once per state (`Registry.noteWebhookState`).
    func noteWebhookStates(_ registry: Registry, apps: [AppName], failures: [AppName: RegistryError],
                           expiries: [(app: AppName, role: Role, expires: Date)], now: Date) {
        do throws(RegistryError) {
            for app in apps {
                if let failure = failures[app] {
                    try registry.noteWebhookState(app: app, mark: "resign", type: "metadata.resign.failed",
                                                  details: ["error": .string(failure.description)], now: now)
                } else {
                    try registry.clearWebhookState(app: app, prefix: "resign")
                }
            }
            for entry in expiries {
                let left = Int(entry.expires.timeIntervalSince(now).rounded(.down))
                let figures: [String: JSON] = ["role": .string(entry.role.rawValue), "expires": .string(TUFTime.format(entry.expires)),
                                               "secondsLeft": .int(Int64(left))]
                switch entry.role {
                case .root, .targets:
                    let prefix = "expiring:\(entry.role.rawValue):"
                    if Double(left) < configuration.webhooks.expiryWarning {
                        try registry.noteWebhookState(app: entry.app, mark: prefix + TUFTime.format(entry.expires), type: "metadata.expiring",
                                                      details: figures, now: now)
                    } else {
                        try registry.clearWebhookState(app: entry.app, prefix: prefix)
                    }
                case .timestamp:
                    if Double(left) < upkeepStatus.margin {
                        var details = figures
                        details["reason"] = .string(left >= 0 ? "timestamp expires in \(left) s" : "timestamp expired \(-left) s ago")
                        try registry.noteWebhookState(app: entry.app, mark: "health.degraded", type: "health.degraded", details: details, now: now)
                    } else {
                        try registry.clearWebhookState(app: entry.app, prefix: "health.degraded")
                    }
                default:
                    continue
                }
            }
        } catch {
            logOnce("webhooks: cannot record an upkeep event: \(error)")
        }
    }
}

/// The outbox's figures per app for `/metrics`, as the last delivery pass read them: every
/// instance reads the registry's, so each says the same.
final class WebhookStatus: Sendable {
    private let counts = Locked<[(app: String, delivered: Int, failed: Int, dropped: Int, pending: Int)]>([])

    func note(_ counts: [(app: String, delivered: Int, failed: Int, dropped: Int, pending: Int)]) {
        self.counts.withLock { $0 = counts }
    }

    func render() -> String {
        let counts = counts.withLock { $0 }
        var out = "# HELP hotpatch_webhook_events_total Webhook events per app by result: delivered, failed (given up or refused), dropped (past a subscription's maxPending, or removed with it).\n# TYPE hotpatch_webhook_events_total counter\n"
        for c in counts {
            out += "hotpatch_webhook_events_total{app=\"\(c.app)\",result=\"delivered\"} \(c.delivered)\n"
            out += "hotpatch_webhook_events_total{app=\"\(c.app)\",result=\"failed\"} \(c.failed)\n"
            out += "hotpatch_webhook_events_total{app=\"\(c.app)\",result=\"dropped\"} \(c.dropped)\n"
        }
        out += "# HELP hotpatch_webhook_pending Webhook events waiting for delivery per app.\n# TYPE hotpatch_webhook_pending gauge\n"
        for c in counts { out += "hotpatch_webhook_pending{app=\"\(c.app)\"} \(c.pending)\n" }
        return out
    }
}

extension PatchService {
    /// `GET /v1/apps/{app}/webhooks`: the app's subscriptions, never a secret (`apps webhook list`).
    func webhookList(_ request: HTTPRequest, _ p: PathParameters) throws(HTTPError) -> HTTPResponse {
        let app = try appCatalog(p["app"]).app
        let list = try read { registry throws(RegistryError) in try registry.webhooks(app: app) }
        return .json(["app": .string(app.rawValue), "webhooks": .array(list.map(\.json))], headers: [("Cache-Control", "no-store")])
    }
}
