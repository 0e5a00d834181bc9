import Foundation

/// What APNs answered one request: its status, `reason` and `apns-id`, or — status 0 — why
/// no answer came (`unanswered`: connection refused, TLS, timeout, not HTTP/2).
public struct APNsAnswer: Sendable, Equatable {
    public var status: Int
    public var reason: String?
    public var apnsID: String?
    public var unanswered: String?

    public init(status: Int, reason: String? = nil, apnsID: String? = nil, unanswered: String? = nil) {
        self.status = status
        self.reason = reason
        self.apnsID = apnsID
        self.unanswered = unanswered
    }

    /// The name a round counts a token under when it was not sent: APNs' reason, else
    /// `HTTP {status}`, else `unreachable`.
    public var failure: String {
        if status == 0 { return APNsAnswer.unreachable }
        return reason ?? "HTTP \(status)"
    }

    public static let unreachable = "unreachable"

    /// What an operator can do about a reason a round counted (Apple's provider API
    /// documentation), for the ones a configuration causes; nil for the rest.
    public static func hint(_ reason: String) -> String? {
        switch reason {
        case "BadTopic", "TopicDisallowed", "DeviceTokenNotForTopic":
            return "the topic set with `patchctl apps apns --topic` is not the bundle ID the app's tokens belong to"
        case "InvalidProviderToken", "MissingProviderToken", "ExpiredProviderToken":
            return "the team ID, key ID or .p8 key set with `patchctl apps apns` do not belong together, or the key was revoked"
        case "BadEnvironmentKeyInToken", "BadDeviceToken":
            return "a sandbox (development build) token sent to production or the reverse: the app registers with the wrong environment, or the key is limited to one"
        case "BadCertificateEnvironment", "BadCertificate", "Forbidden":
            return "APNs refused the provider identity: check the key with `patchctl apps apns APP --test TOKEN`"
        case APNsAnswer.unreachable:
            return "APNs could not be reached (network, firewall, DNS or TLS); nothing was delivered"
        default:
            return nil
        }
    }
}
