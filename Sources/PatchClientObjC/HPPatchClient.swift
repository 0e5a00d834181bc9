#if canImport(ObjectiveC) && canImport(UIKit)
// NOT COMPILED on the Linux machines hotpatch is built and tested on (no UIKit there): written
// against documented Foundation/UIKit API and PatchClient's public API, which the Linux build
// does compile and test. Kept to what an Objective-C AppDelegate needs (docs/IOS.md).
import Foundation
import PatchClient
import PatchCore
import UIKit

/// PatchClient for Objective-C. Reads the pinned root (`hotpatch-root.json`) and, for an
/// encrypted app, the content key (`hotpatch-content.key`) from the main bundle; keeps its
/// cache, state and queued reports in Library/Application Support/hotpatch (not backed up).
/// Hand JSPatch only the path `beginLaunch` returns: it is the one script PatchClient verified.
@objc(HPPatchClient)
public final class HPPatchClient: NSObject, Sendable {
    private let client: PatchClient
    private let pushEnvironment: APNsEnvironment

    /// `channel` nil is production; `pushSandbox` YES for a development build's APNs tokens.
    @MainActor
    @objc public init(server: URL, app: String, channel: String?, pushSandbox: Bool) throws {
        let bundle = Bundle.main
        guard let rootURL = bundle.url(forResource: "hotpatch-root", withExtension: "json") else {
            throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: "hotpatch-root.json (in the app bundle)"])
        }
        let version = bundle.object(forInfoDictionaryKey: "CFBundleShortVersionString") as? String ?? ""
        var support = try FileManager.default.url(for: .applicationSupportDirectory, in: .userDomainMask, appropriateFor: nil, create: true)
            .appendingPathComponent("hotpatch", isDirectory: true)
        try FileManager.default.createDirectory(at: support, withIntermediateDirectories: true)
        var values = URLResourceValues()
        values.isExcludedFromBackup = true
        try support.setResourceValues(values)

        var configuration = ClientConfiguration(
            server: server, app: try AppName(app), appVersion: try AppVersion(version), deviceID: Self.deviceID(),
            trustedRoot: try Data(contentsOf: rootURL),
            contentKey: try bundle.url(forResource: "hotpatch-content", withExtension: "key").map { try ClientConfiguration.contentKey(hexFile: $0) },
            cacheDirectory: support)
        if let channel { configuration.channel = try ChannelName(channel) }
        configuration.osVersion = UIDevice.current.systemVersion
        client = PatchClient(configuration: configuration)
        pushEnvironment = pushSandbox ? .sandbox : .production
        super.init()
    }

    @MainActor
    @objc public convenience init(server: URL, app: String) throws {
        try self.init(server: server, app: app, channel: nil, pushSandbox: false)
    }

    /// The vendor identifier, or one kept in user defaults when the system has none yet.
    @MainActor
    private static func deviceID() -> String {
        if let vendor = UIDevice.current.identifierForVendor { return vendor.uuidString }
        let key = "hotpatch.deviceID"
        if let kept = UserDefaults.standard.string(forKey: key) { return kept }
        let fresh = UUID().uuidString
        UserDefaults.standard.set(fresh, forKey: key)
        return fresh
    }

    /// Once per launch, before evaluating anything: the path of the script to hand to
    /// `[JPEngine evaluateScriptWithPath:]`, nil when there is none (or it was rolled back).
    @objc public func beginLaunch() -> String? { client.beginLaunch()?.path.path }

    /// The verified script now installed, without counting a launch.
    @objc public var scriptPath: String? { client.currentPatch()?.path.path }

    /// After the first screen showed with the patch running: it becomes the one to fall back to.
    @objc public func confirmLaunch() { client.confirmLaunch() }

    /// A check (skipped inside the minimum interval), for background fetch and launch.
    @objc(syncWithCompletion:)
    public func sync(completion: @escaping @Sendable (UIBackgroundFetchResult) -> Void) {
        let client = client
        Task { completion(Self.fetchResult(await client.sync())) }
    }

    /// From `application:didRegisterForRemoteNotificationsWithDeviceToken:`.
    @objc(registerPushToken:)
    public func registerPushToken(_ token: Data) {
        let client = client, environment = pushEnvironment
        Task { try? await client.registerPushToken(token, environment: environment) }
    }

    /// From `application:didReceiveRemoteNotification:fetchCompletionHandler:`; calls
    /// `completion` with NoData for a push that is not hotpatch's.
    @objc(handlePush:completion:)
    public func handlePush(_ userInfo: [AnyHashable: Any], completion: @escaping @Sendable (UIBackgroundFetchResult) -> Void) {
        // Read only by handlePush, which keeps nothing of it.
        nonisolated(unsafe) let payload = userInfo
        let client = client
        Task { completion(await client.handlePush(payload).map(Self.fetchResult) ?? .noData) }
    }

    private static func fetchResult(_ outcome: SyncOutcome) -> UIBackgroundFetchResult {
        switch outcome {
        case .updated, .removed: return .newData
        case .unchanged, .throttled: return .noData
        case .failed: return .failed
        }
    }
}
#endif
