import Foundation
import PatchCore
import PatchPush

/// One subscription (`patchctl apps webhook add`): where an app's events go, which ones, and
/// what became of the last delivery. The secret is not here: it is read only by the delivery
/// that signs with it (`WebhookDelivery`), so no listing can carry it.
public struct WebhookSubscription: Sendable, Equatable {
    /// At most this many live subscriptions per app.
    public static let maxPerApp = 16
    /// Undelivered events kept per subscription unless it says otherwise (`maxPending`).
    public static let defaultMaxPending = 10_000
    public static let maxPendingRange = 1...1_000_000

    public let id: String
    public let app: AppName
    public let url: WebhookURL
    public let events: WebhookEventFilter
    public let insecureHTTP: Bool
    public let maxPending: Int
    public let createdAt: String
    public let createdBy: String
    public var delivered: Int
    public var failed: Int
    public var dropped: Int
    /// Events waiting for delivery now.
    public var pending: Int
    public var lastDeliveryAt: String?
    public var lastError: String?
    public var lastErrorAt: String?

    /// What listings and answers show (`GET /v1/apps/{app}/webhooks`): never the secret, and the
    /// URL without its path and query (`WebhookURL.shown`).
    public var json: JSON {
        ["id": .string(id), "app": .string(app.rawValue), "url": .string(url.shown), "events": .array(events.items.map(JSON.string)),
         "insecureHttp": .bool(insecureHTTP), "maxPending": .int(Int64(maxPending)), "createdAt": .string(createdAt), "createdBy": .string(createdBy),
         "delivered": .int(Int64(delivered)), "failed": .int(Int64(failed)), "dropped": .int(Int64(dropped)), "pending": .int(Int64(pending)),
         "lastDeliveryAt": lastDeliveryAt.map(JSON.string) ?? .null, "lastError": lastError.map(JSON.string) ?? .null,
         "lastErrorAt": lastErrorAt.map(JSON.string) ?? .null]
    }

    /// A secret given by a caller: printable ASCII, 16 to 512 characters.
    static func checkSecret(_ secret: String) throws(RegistryError) {
        guard (16...512).contains(secret.utf8.count), secret.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw .invalidCall("secret must be 16 to 512 printable ASCII characters without spaces")
        }
    }
}

/// When a failed attempt is tried again: exponential from `base` seconds, at most `cap`,
/// with full jitter in its upper half (so receivers that come back are not hit by every
/// instance's retries at once), for `window` seconds from the event's creation; past it the
/// event is given up and counted as failed. patchd's `--webhook-retry-base`, `--webhook-retry-cap`
/// and `--webhook-retry-for` set it (tests make it short).
public struct WebhookRetryPolicy: Sendable, Equatable {
    public var base: Double = 10
    public var cap: Double = 3600
    public var window: Double = 86_400

    public init(base: Double = 10, cap: Double = 3600, window: Double = 86_400) {
        self.base = base
        self.cap = cap
        self.window = window
    }

    /// Seconds before attempt `attempts + 1`, given `random` in 0..<1.
    public func delay(afterAttempts attempts: Int, random: Double) -> Double {
        let exponential = min(cap, base * pow(2, Double(min(max(attempts - 1, 0), 40))))
        return exponential / 2 + exponential / 2 * random
    }
}
