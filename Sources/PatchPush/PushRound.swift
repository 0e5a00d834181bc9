import Foundation
import PatchCore
import PatchSigning

/// One round as patchctl and patchd run it, in three steps so that no registry lock is held
/// while APNs answers: `prepare` reads the app's APNs identity and key, the tokens of the
/// affected version and channel and the newest timestamp from the store; `send` pushes;
/// `finish` has the store delete the gone tokens and record the figures (the registry: a
/// `push.notify` audit event).
public struct PushRound: Sendable {
    public let app: AppName
    public let announcement: PushAnnouncement
    public let devices: [PushDevice]
    public let reason: String
    let sender: PushSender

    /// nil when the app has no APNs identity (nothing to do for patchd's guards).
    public static func prepare(store: some PushStore, app: AppName, appVersion: AppVersion?, channel: ChannelName?, reason: String,
                               endpoint: APNsEndpoint, settings: PushSettings = PushSettings(), now: Date = Date()) throws(PushError) -> PushRound {
        let identity: (config: APNsConfig, key: ECDSAPrivateKey)
        let devices: [PushDevice]
        let timestamp: Int64
        do {
            identity = try store.pushIdentity(app: app)
            devices = try store.pushDevices(app: app, appVersion: appVersion, channel: channel)
            timestamp = try store.timestampVersion(app: app)
        } catch { throw .store(error) }
        let announcement = PushAnnouncement(app: app, appVersion: appVersion, channel: channel, timestampVersion: timestamp,
                                            expiration: now.addingTimeInterval(86_400))
        let sender = PushSender(endpoint: endpoint, token: APNsToken(config: identity.config, key: identity.key), topic: identity.config.topic,
                                settings: settings)
        return PushRound(app: app, announcement: announcement, devices: devices, reason: reason, sender: sender)
    }

    public func send(progress: (@Sendable (Int, Int) -> Void)? = nil) throws(PushError) -> PushResult {
        try sender.send(announcement, to: devices, progress: progress)
    }

    public func finish(store: some PushStore, result: PushResult, now: Date = Date()) throws(PushError) {
        do { try store.finishPush(announcement, reason: reason, result: result, now: now) } catch { throw .store(error) }
    }

    /// All three on one store, for a process that has nothing else to do meanwhile (patchctl).
    @discardableResult
    public static func run(store: some PushStore, app: AppName, appVersion: AppVersion?, channel: ChannelName?, reason: String,
                           endpoint: APNsEndpoint, settings: PushSettings = PushSettings(), now: Date = Date(),
                           progress: (@Sendable (Int, Int) -> Void)? = nil) throws(PushError) -> PushSummary {
        let round = try prepare(store: store, app: app, appVersion: appVersion, channel: channel, reason: reason,
                                endpoint: endpoint, settings: settings, now: now)
        let result = try round.send(progress: progress)
        try round.finish(store: store, result: result, now: now)
        return result.summary
    }
}
