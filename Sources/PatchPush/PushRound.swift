import Foundation
import PatchCore
import PatchRegistry

/// One round as patchctl and patchd run it: the app's APNs identity and key, the tokens of
/// the affected version and channel, the announcement of the newest timestamp, then the
/// gone tokens deleted and a `push.notify` audit event with the figures.
public enum PushRound {
    @discardableResult
    public static func run(registry: Registry, app: AppName, appVersion: AppVersion?, channel: ChannelName?, reason: String,
                           actor: Actor, endpoint: APNsEndpoint, settings: PushSettings = PushSettings(), now: Date = Date(),
                           progress: (@Sendable (Int, Int) -> Void)? = nil) throws(PushError) -> PushSummary {
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
        let result = try sender.send(announcement, to: devices, progress: progress)
        do {
            try registry.removePushDevices(app: app, tokens: result.gone)
            try registry.recordPush(app: app, appVersion: appVersion, channel: channel, timestampVersion: timestamp, reason: reason,
                                    summary: result.summary, actor: actor, now: now)
        } catch { throw .registry(error) }
        return result.summary
    }
}
