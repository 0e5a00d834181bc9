import Foundation
import PatchCore

/// Which APNs issued a device token: a development build's token is known only to the
/// sandbox, an App Store or TestFlight build's only to production.
public enum APNsEnvironment: String, Sendable {
    case production, sandbox
}

/// Push-triggered checks (docs/PROTOCOL.md, "Push"): the app hands hotpatch its APNs device
/// token, and hotpatch wakes it with a background notification when a patch of its version
/// and channel changes. A push is only a hint to check now: what is installed is decided by
/// TUF as on every sync, so a forged push can cause at most one extra check.
extension PatchClient {
    /// `POST /v1/apps/{app}/devices` with the token `application(_:didRegisterForRemoteNotificationsWithDeviceToken:)`
    /// received, this app version and channel, and this device's ID (the token is bound to
    /// it: no other device can re-point it). Call it on every launch: tokens change, and each
    /// registration refreshes the stored one; one not refreshed for 60 days is dropped.
    public func registerPushToken(_ token: Data, environment: APNsEnvironment = .production) async throws(PatchClientError) {
        let hex = token.map { String(format: "%02x", $0) }.joined()
        let body = JSON.object(["token": .string(hex), "environment": .string(environment.rawValue),
                                "appVersion": .string(configuration.appVersion.rawValue), "channel": .string(configuration.channel.rawValue)])
        let answer: (head: FetchHead, body: [UInt8])
        do { answer = try await repository.post(DeviceRoutes.devices, body.wireBytes, headers: ["Content-Type": "application/json", "X-Device-ID": configuration.deviceID]) } catch {
            throw .network(error.reason)
        }
        guard answer.head.status == 200 || answer.head.status == 201 else {
            throw .server(status: answer.head.status, url: DeviceRoutes.devices.path(["app": configuration.app.rawValue]),
                          message: PatchClient.serverMessage(answer.body))
        }
    }

    /// What the app passes from `application(_:didReceiveRemoteNotification:fetchCompletionHandler:)`.
    /// Syncs (through the device's own interval, as a revoke must land) only when the push
    /// is hotpatch's, names this app, version and channel, and announces a timestamp version
    /// newer than the one this device trusts; nil when it did not sync (not ours, or nothing
    /// newer). The sync itself verifies everything as usual.
    public func handlePush(_ userInfo: [AnyHashable: Any], now: Date = Date()) async -> SyncOutcome? {
        guard let announced = PatchClient.announcedTimestamp(userInfo, configuration: configuration) else { return nil }
        return await syncAnnounced(announced, now: now)
    }

    private func syncAnnounced(_ announced: Int64, now: Date) async -> SyncOutcome? {
        if let trusted = MetadataCache(directory: paths.metadataDirectory).cachedTimestampVersion(), announced <= trusted { return nil }
        session.withLock { $0.pushAnnounced = announced }
        return await sync(force: true, now: now)
    }

    /// The `hotpatch` dictionary's timestamp version when it is meant for this app, version
    /// and channel (a push without version or channel applies to every one).
    static func announcedTimestamp(_ userInfo: [AnyHashable: Any], configuration: ClientConfiguration) -> Int64? {
        guard let push = userInfo["hotpatch"] as? [String: Any], push["app"] as? String == configuration.app.rawValue else { return nil }
        if let version = push["version"] as? String, version != configuration.appVersion.rawValue { return nil }
        if let channel = push["channel"] as? String, channel != configuration.channel.rawValue { return nil }
        let raw = push["timestamp"]
        let value: Int64? = (raw as? Int).map(Int64.init) ?? (raw as? Int64) ?? (raw as? NSNumber)?.int64Value
        guard let value, value >= 1 else { return nil }
        return value
    }
}
