import Foundation
import PatchCore
import PatchPush

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

