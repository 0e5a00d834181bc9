import Foundation
import PatchCore

/// Which APNs a device token belongs to: a development build's token is known only to the
/// sandbox, an App Store or TestFlight build's only to production.
public enum PushEnvironment: String, Sendable, CaseIterable, Comparable {
    case production, sandbox
    public static func < (a: PushEnvironment, b: PushEnvironment) -> Bool { a.rawValue < b.rawValue }
}

/// One registered device token (`POST /v1/apps/{app}/devices`).
public struct PushDevice: Sendable, Equatable {
    public let token: String
    public let environment: PushEnvironment
    public let appVersion: AppVersion
    public let channel: ChannelName
    /// When the device last registered it (each registration refreshes it).
    public let registeredAt: String

    public init(token: String, environment: PushEnvironment, appVersion: AppVersion, channel: ChannelName, registeredAt: String) {
        self.token = token
        self.environment = environment
        self.appVersion = appVersion
        self.channel = channel
        self.registeredAt = registeredAt
    }
}

/// The app's APNs provider identity (`patchctl apps apns`): token-based auth with an ES256
/// key of the team, for one topic (the app's bundle ID).
public struct APNsConfig: Sendable, Equatable {
    public let app: AppName
    public let teamID: String
    public let keyID: String
    public let topic: String
    public let setAt: String
    public let setBy: String

    public init(app: AppName, teamID: String, keyID: String, topic: String, setAt: String, setBy: String) {
        self.app = app
        self.teamID = teamID
        self.keyID = keyID
        self.topic = topic
        self.setAt = setAt
        self.setBy = setBy
    }

    public var json: JSON {
        ["app": .string(app.rawValue), "teamId": .string(teamID), "keyId": .string(keyID), "topic": .string(topic),
         "setAt": .string(setAt), "setBy": .string(setBy)]
    }
}

/// What one round of pushes did, as the command line and the `push.notify` audit event show it.
public struct PushSummary: Sendable, Equatable {
    /// Tokens APNs accepted a notification for.
    public var sent = 0
    /// Tokens it did not (after retries), kept for the next change.
    public var failed = 0
    /// Tokens APNs said are gone (410, or 400 BadDeviceToken), deleted from the registry.
    public var removed = 0
    /// Why the failed and removed tokens were not sent: APNs' reason (`BadTopic`,
    /// `Unregistered`…), `HTTP {status}` when it gave none, `unreachable` when no answer came.
    public var reasons: [String: Int] = [:]
    public init(sent: Int = 0, failed: Int = 0, removed: Int = 0, reasons: [String: Int] = [:]) {
        self.sent = sent
        self.failed = failed
        self.removed = removed
        self.reasons = reasons
    }
    public var json: JSON {
        ["sent": .int(Int64(sent)), "failed": .int(Int64(failed)), "removed": .int(Int64(removed)),
         "reasons": .object(reasons.mapValues { .int(Int64($0)) })]
    }
    /// The summary `json` gives (a server's answer to `notifyDevices`); nil for anything else.
    public init?(json: JSON) {
        guard let sent = json["sent"]?.intValue, let failed = json["failed"]?.intValue, let removed = json["removed"]?.intValue,
              let reasons = json["reasons"]?.objectValue else { return nil }
        var counts: [String: Int] = [:]
        for (reason, count) in reasons {
            guard let count = count.intValue, count >= 0 else { return nil }
            counts[reason] = Int(count)
        }
        guard sent >= 0, failed >= 0, removed >= 0 else { return nil }
        self.init(sent: Int(sent), failed: Int(failed), removed: Int(removed), reasons: counts)
    }

    public var text: String { "\(sent) sent, \(failed) failed, \(removed) removed" }
    /// There were tokens, and none was reached: the round did nothing a device will see.
    public var reachedNone: Bool { sent == 0 && failed + removed > 0 }
}
