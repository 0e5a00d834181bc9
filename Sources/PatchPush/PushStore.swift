import Foundation
import PatchCore
import PatchSigning

/// What a round of pushes reads and writes, from whatever stores an app's devices: the
/// registry implements it (`Registry.pushStore(actor:)`), and PatchPush knows nothing else of
/// it. A store's own errors come back as `PushError.store`.
public protocol PushStore {
    /// The app's APNs identity and its ES256 key.
    func pushIdentity(app: AppName) throws -> (config: APNsConfig, key: ECDSAPrivateKey)
    /// The live tokens of the devices of `appVersion` (nil: all) following `channel` (nil: all).
    func pushDevices(app: AppName, appVersion: AppVersion?, channel: ChannelName?) throws -> [PushDevice]
    /// The version of the app's newest timestamp: what an announcement names.
    func timestampVersion(app: AppName) throws -> Int64
    /// After a round: forget the tokens APNs called gone, and record what the round did.
    func finishPush(_ announcement: PushAnnouncement, reason: String, result: PushResult, now: Date) throws
}
