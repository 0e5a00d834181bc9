#if canImport(ObjectiveC) && canImport(UIKit)
// NOT COMPILED on Linux, not even in the apple-shaped build: `@objc` needs the Objective-C
// runtime. It only names BundledPatchClient's members for Objective-C, one line each; that
// half is compiled and tested on Linux against a stand-in UIKit (docs/IOS.md).
import Foundation
import UIKit

/// PatchClient for Objective-C (docs/IOS.md, "AppDelegate"). Reads the pinned root
/// (`hotpatch-root.json`) and, for an encrypted app, the content key (`hotpatch-content.key`)
/// from the main bundle; keeps its cache, state and queued reports in Library/Application
/// Support/hotpatch (not backed up). Hand JSPatch only the path `beginLaunch` returns: it is the
/// one script PatchClient verified.
@objc(HPPatchClient)
public final class HPPatchClient: NSObject, Sendable {
    private let patches: BundledPatchClient

    /// `channel` nil is production; `pushSandbox` YES for a development build's APNs tokens.
    @MainActor
    @objc public init(server: URL, app: String, channel: String?, pushSandbox: Bool) throws {
        patches = try BundledPatchClient(server: server, app: app, channel: channel, pushSandbox: pushSandbox,
                                         bundle: .main, support: BundledPatchClient.applicationSupport())
        super.init()
    }

    @MainActor
    @objc public convenience init(server: URL, app: String) throws {
        try self.init(server: server, app: app, channel: nil, pushSandbox: false)
    }

    /// Once per launch, before evaluating anything: the path of the script to hand to
    /// `[JPEngine evaluateScriptWithPath:]`, nil when there is none (or it was rolled back).
    @objc public func beginLaunch() -> String? { patches.beginLaunch() }

    /// The verified script now installed, without counting a launch.
    @objc public var scriptPath: String? { patches.scriptPath }

    /// After the first screen showed with the patch running: it becomes the one to fall back to.
    @objc public func confirmLaunch() { patches.confirmLaunch() }

    /// A check (skipped inside the minimum interval), for background fetch and launch.
    @objc(syncWithCompletion:)
    public func sync(completion: @escaping @Sendable (UIBackgroundFetchResult) -> Void) { patches.sync(completion: completion) }

    /// From `application:didRegisterForRemoteNotificationsWithDeviceToken:`.
    @objc(registerPushToken:)
    public func registerPushToken(_ token: Data) { patches.registerPushToken(token) }

    /// From `application:didReceiveRemoteNotification:fetchCompletionHandler:`; calls
    /// `completion` with NoData for a push that is not hotpatch's.
    @objc(handlePush:completion:)
    public func handlePush(_ userInfo: [AnyHashable: Any], completion: @escaping @Sendable (UIBackgroundFetchResult) -> Void) {
        patches.handlePush(userInfo, completion: completion)
    }
}
#endif
