import Foundation

/// One attempt to make: the head of a subscription's outbox, claimed by this process until
/// `claimedUntil` (Unix ms) so no other instance sends it meanwhile.
public struct WebhookDelivery: Sendable {
    public let subscription: String
    public let app: String
    public let url: WebhookURL
    public let secret: String
    public let n: Int64
    public let eventID: String
    public let type: String
    public let body: [UInt8]
    /// Attempts made before this one.
    public let attempts: Int
    public let createdMs: Int64

    public init(subscription: String, app: String, url: WebhookURL, secret: String, n: Int64, eventID: String, type: String, body: [UInt8],
                attempts: Int, createdMs: Int64) {
        self.subscription = subscription
        self.app = app
        self.url = url
        self.secret = secret
        self.n = n
        self.eventID = eventID
        self.type = type
        self.body = body
        self.attempts = attempts
        self.createdMs = createdMs
    }
}

/// What became of one attempt, as the sender saw it.
public enum WebhookOutcome: Sendable, Equatable {
    /// 2xx.
    case delivered(status: Int)
    /// Worth another attempt: 5xx, 429, a timeout, a connection that failed.
    case retry(String)
    /// Never worth another: another status (a redirect, which is not followed, or a 4xx), or
    /// a destination refused.
    case failed(String)
}
