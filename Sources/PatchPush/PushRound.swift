import Foundation
import PatchCore
import PatchSigning
import PatchRegistry

/// One round as patchctl and patchd run it, in three steps so that no registry lock is held
/// while APNs answers: `prepare` reads the app's APNs identity and key, the tokens of the
/// affected version and channel and the newest timestamp; `send` pushes; `finish` deletes
/// the gone tokens and records a `push.notify` audit event with the figures.
public struct PushRound: Sendable {
    public let app: AppName
    public let announcement: PushAnnouncement
    public let devices: [PushDevice]
    public let reason: String
    let sender: PushSender

    /// nil when the app has no APNs identity (nothing to do for patchd's guards).
    public static func prepare(registry: Registry, app: AppName, appVersion: AppVersion?, channel: ChannelName?, reason: String,
                               endpoint: APNsEndpoint, settings: PushSettings = PushSettings(), now: Date = Date()) throws(PushError) -> PushRound {
        let identity: (config: APNsConfig, key: ECDSAPrivateKey)
        let devices: [PushDevice]
        let timestamp: Int64
        do {
            identity = try registry.apnsKey(app: app)
            devices = try registry.pushDevices(app: app, appVersion: appVersion, channel: channel)
            timestamp = try registry.latestMetadata(app: app, role: .timestamp).version
        } catch { throw .registry(error) }
        let announcement = PushAnnouncement(app: app, appVersion: appVersion, channel: channel, timestampVersion: timestamp,
                                            expiration: now.addingTimeInterval(86_400))
        let sender = PushSender(endpoint: endpoint, token: APNsToken(config: identity.config, key: identity.key), topic: identity.config.topic,
                                settings: settings)
        return PushRound(app: app, announcement: announcement, devices: devices, reason: reason, sender: sender)
    }

    public func send(progress: (@Sendable (Int, Int) -> Void)? = nil) throws(PushError) -> PushResult {
        try sender.send(announcement, to: devices, progress: progress)
    }

    public func finish(registry: Registry, result: PushResult, actor: Actor, now: Date = Date()) throws(PushError) {
        do {
            try registry.removePushDevices(app: app, tokens: result.gone)
            try registry.recordPush(app: app, appVersion: announcement.appVersion, channel: announcement.channel,
                                    timestampVersion: announcement.timestampVersion, reason: reason, summary: result.summary, actor: actor, now: now)
        } catch { throw .registry(error) }
    }

    /// All three on one registry, for a process that has nothing else to do meanwhile (patchctl).
    @discardableResult
    public static func run(registry: Registry, app: AppName, appVersion: AppVersion?, channel: ChannelName?, reason: String,
                           actor: Actor, endpoint: APNsEndpoint, settings: PushSettings = PushSettings(), now: Date = Date(),
                           progress: (@Sendable (Int, Int) -> Void)? = nil) throws(PushError) -> PushSummary {
        let round = try prepare(registry: registry, app: app, appVersion: appVersion, channel: channel, reason: reason,
                                endpoint: endpoint, settings: settings, now: now)
        let result = try round.send(progress: progress)
        try round.finish(registry: registry, result: result, actor: actor, now: now)
        return result.summary
    }
}
