#if canImport(UIKit)
// Everything HPPatchClient does, in Swift. HPPatchClient.swift only gives it Objective-C names,
// which need the Objective-C runtime; this half needs UIKit alone, so the Linux "apple-shaped"
// build (HOTPATCH_APPLE_SHAPED=1, docs/IOS.md) compiles it against a stand-in UIKit and a test
// drives it as an AppDelegate would.
import Foundation
import PatchClient
import PatchCore
import UIKit

/// PatchClient configured from an app bundle: the pinned root (`hotpatch-root.json`) and, for
/// an encrypted app, the content key (`hotpatch-content.key`); the app version from
/// `CFBundleShortVersionString`; cache, state and queued reports in `support` (HPPatchClient
/// passes Library/Application Support/hotpatch, not backed up).
final class BundledPatchClient: Sendable {
    private let client: PatchClient
    private let pushEnvironment: APNsEnvironment

    /// `channel` nil is production; `pushSandbox` true for a development build's APNs tokens.
    @MainActor
    init(server: URL, app: String, channel: String?, pushSandbox: Bool, bundle: Bundle, support: URL) throws {
        guard let rootURL = bundle.url(forResource: "hotpatch-root", withExtension: "json") else {
            throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: "hotpatch-root.json (in the app bundle)"])
        }
        let version = bundle.object(forInfoDictionaryKey: "CFBundleShortVersionString") as? String ?? ""
        var configuration = ClientConfiguration(
            server: server, app: try AppName(app), appVersion: try AppVersion(version), deviceID: Self.deviceID(),
            trustedRoot: try Data(contentsOf: rootURL),
            contentKey: try bundle.url(forResource: "hotpatch-content", withExtension: "key").map { try ClientConfiguration.contentKey(hexFile: $0) },
            cacheDirectory: support)
        if let channel { configuration.channel = try ChannelName(channel) }
        configuration.osVersion = UIDevice.current.systemVersion
        client = PatchClient(configuration: configuration)
        pushEnvironment = pushSandbox ? .sandbox : .production
    }

    /// Library/Application Support/hotpatch, made if missing and excluded from iCloud backup.
    static func applicationSupport() throws -> URL {
        var support = try FileManager.default.url(for: .applicationSupportDirectory, in: .userDomainMask, appropriateFor: nil, create: true)
            .appendingPathComponent("hotpatch", isDirectory: true)
        try FileManager.default.createDirectory(at: support, withIntermediateDirectories: true)
        var values = URLResourceValues()
        values.isExcludedFromBackup = true
        try support.setResourceValues(values)
        return support
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

    func beginLaunch() -> String? { client.beginLaunch()?.path.path }

    var scriptPath: String? { client.currentPatch()?.path.path }

    func confirmLaunch() { client.confirmLaunch() }

    func sync(completion: @escaping @Sendable (UIBackgroundFetchResult) -> Void) {
        let client = client
        Task { completion(Self.fetchResult(await client.sync())) }
    }

    func registerPushToken(_ token: Data) {
        let client = client, environment = pushEnvironment
        Task { try? await client.registerPushToken(token, environment: environment) }
    }

    func handlePush(_ userInfo: [AnyHashable: Any], completion: @escaping @Sendable (UIBackgroundFetchResult) -> Void) {
        // Read only by handlePush, which keeps nothing of it.
        nonisolated(unsafe) let payload = userInfo
        let client = client
        Task { completion(await client.handlePush(payload).map(Self.fetchResult) ?? .noData) }
    }

    static func fetchResult(_ outcome: SyncOutcome) -> UIBackgroundFetchResult {
        switch outcome {
        case .updated, .removed: return .newData
        case .unchanged, .throttled: return .noData
        case .failed: return .failed
        }
    }
}
#endif
