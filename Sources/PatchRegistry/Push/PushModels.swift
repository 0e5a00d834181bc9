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
}

/// What a registration did: a new token, or one already stored (its version, channel and
/// environment replaced by what the device says now), or nothing: a new token the caller's
/// quota did not admit.
public enum PushRegistration: String, Sendable { case stored, refreshed, overQuota }

/// One registration as a device sends it (`POST /v1/apps/{app}/devices`), its token and
/// device ID checked and kept as the registry stores them.
public struct PushDeviceRegistration: Sendable, Equatable {
    public let app: AppName
    /// Lowercase hex (`Registry.pushToken`).
    public let token: String
    /// `Registry.deviceHash` of the device ID: what the token is bound to.
    public let device: String
    public let environment: PushEnvironment
    public let appVersion: AppVersion
    public let channel: ChannelName

    public init(app: AppName, token rawToken: String, deviceID: String, environment: PushEnvironment, appVersion: AppVersion,
                channel: ChannelName) throws(RegistryError) {
        token = try Registry.pushToken(rawToken)
        guard !deviceID.isEmpty else { throw .invalidInput("a device ID is needed: a token is bound to the device that registers it") }
        device = Registry.deviceHash(deviceID)
        self.app = app
        self.environment = environment
        self.appVersion = appVersion
        self.channel = channel
    }

    /// What a refresh must repeat of the stored record to change nothing a round reads.
    public var refreshIdentity: [String] { [device, environment.rawValue, appVersion.rawValue, channel.rawValue] }
}

/// What the registry holds of a stored token, as a registration reads it.
public struct PushTokenRecord: Sendable, Equatable {
    /// The device hash it is bound to; nil for a token stored before bindings existed.
    public let device: String?
    public let environment: PushEnvironment
    public let appVersion: AppVersion
    public let channel: ChannelName
    /// When it was last written, to the second (`registered_at`).
    public let registeredAt: Date

    public init(device: String?, environment: PushEnvironment, appVersion: AppVersion, channel: ChannelName, registeredAt: Date) {
        self.device = device
        self.environment = environment
        self.appVersion = appVersion
        self.channel = channel
        self.registeredAt = registeredAt
    }

    /// The record `registration` writes at `now`.
    init(_ registration: PushDeviceRegistration, at now: Date) {
        self.init(device: registration.device, environment: registration.environment, appVersion: registration.appVersion,
                  channel: registration.channel, registeredAt: Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.down)))
    }

    /// `PushDeviceRegistration.refreshIdentity` of what is stored (an unbound token's matches none).
    public var refreshIdentity: [String] { [device ?? "", environment.rawValue, appVersion.rawValue, channel.rawValue] }

    /// Whether `registration` at `now` would change nothing a round reads: the same
    /// `refreshIdentity`, written within `Registry.pushRefreshInterval`. Such a refresh writes
    /// nothing, wherever it is decided (the registry, or a server's memory of what it stored,
    /// which keeps a hash of the identity: the same two parts).
    public func coalesces(_ registration: PushDeviceRegistration, now: Date) -> Bool {
        refreshIdentity == registration.refreshIdentity && Registry.refreshIsRecent(writtenAt: registeredAt, now: now)
    }
}

/// What `Registry.registerPushDevices` did with a group of registrations.
public struct PushRegistrationBatch: Sendable {
    /// Per registration, in order: what it did and what the registry then holds of its token
    /// (nil for `overQuota`), or why it was refused (nothing changed for it).
    public var results: [Result<(registration: PushRegistration, record: PushTokenRecord?), RegistryError>]
    /// Tokens that new ones took the place of (a full table), per app.
    public var evicted: [(app: AppName, token: String)]
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
