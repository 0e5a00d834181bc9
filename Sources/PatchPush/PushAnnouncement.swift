import Foundation
import PatchCore

/// One change to announce: a background notification (no alert, sound or badge) naming the
/// app, the version and channel it concerns, and the timestamp version that carries it.
/// The device checks only when that version is newer than the one it trusts
/// (PatchClient.handlePush), and installs only what TUF verifies.
public struct PushAnnouncement: Sendable, Equatable {
    public let app: AppName
    public let appVersion: AppVersion?
    public let channel: ChannelName?
    public let timestampVersion: Int64
    /// When APNs may stop trying to deliver it (`apns-expiration`): a device offline longer
    /// checks on its own interval anyway.
    public let expiration: Date

    public init(app: AppName, appVersion: AppVersion?, channel: ChannelName?, timestampVersion: Int64, expiration: Date) {
        self.app = app
        self.appVersion = appVersion
        self.channel = channel
        self.timestampVersion = timestampVersion
        self.expiration = expiration
    }

    /// `{"aps":{"content-available":1},"hotpatch":{"app":…,"version":…,"channel":…,"timestamp":N}}`.
    public var payload: [UInt8] {
        var hotpatch: [String: JSON] = ["app": .string(app.rawValue), "timestamp": .int(timestampVersion)]
        if let appVersion { hotpatch["version"] = .string(appVersion.rawValue) }
        if let channel { hotpatch["channel"] = .string(channel.rawValue) }
        return JSON.object(["aps": ["content-available": 1], "hotpatch": .object(hotpatch)]).canonicalBytes
    }

    /// One announcement per app, version and channel replaces the one APNs still holds for
    /// an offline device: it needs only the newest (at most 64 bytes, Apple's limit).
    public var collapseID: String {
        String("hotpatch:\(app.rawValue):\(appVersion?.rawValue ?? "*"):\(channel?.rawValue ?? "*")".prefix(64))
    }

    /// The headers of every request but `authorization`, in the order sent.
    public func headers(topic: String) -> [(String, String)] {
        [("apns-push-type", "background"), ("apns-priority", "5"), ("apns-topic", topic), ("apns-collapse-id", collapseID),
         ("apns-expiration", String(Int64(expiration.timeIntervalSince1970))), ("content-type", "application/json")]
    }
}
