#if canImport(UIKit)
// Only in the apple-shaped Linux build (HOTPATCH_APPLE_SHAPED=1, against the stand-in UIKit)
// and on iOS: the Objective-C face's Swift half (BundledPatchClient), called as HPPatchClient
// calls it from an AppDelegate (docs/IOS.md, "3. AppDelegate"), against patchd on loopback.
import Foundation
import PatchCore
import Testing
// No `import UIKit`: beside Testing it pulls in Swift Testing's cross-import overlay
// `_Testing_UIKit`, which only Apple's SDKs have. The fetch results are compared by the case
// their raw value names (an imported Objective-C enum does not print its case names).
@testable import PatchClient
@testable import PatchClientObjC

@Suite("The Objective-C face's Swift half, driven as an AppDelegate drives HPPatchClient")
@MainActor
struct AppDelegateTests {
    /// An app bundle in a temporary directory: Info.plist with the app version, the pinned root
    /// and (for an encrypted app) the content key, laid out flat as an iOS app bundle is.
    final class AppBundle {
        let directory: URL
        let support: URL
        let bundle: Bundle

        init(_ fixture: ClientFixture, app: AppName, contentKey: Bool) throws {
            directory = fixture.root.appendingPathComponent("Demo-\(UUID().uuidString).app", isDirectory: true)
            support = fixture.root.appendingPathComponent("support-\(UUID().uuidString)", isDirectory: true)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(at: support, withIntermediateDirectories: true)
            let info = try PropertyListSerialization.data(fromPropertyList: ["CFBundleShortVersionString": fixture.version.rawValue], format: .xml, options: 0)
            try info.write(to: directory.appendingPathComponent("Info.plist"))
            try Data(fixture.initialRoot(app)).write(to: directory.appendingPathComponent("hotpatch-root.json"))
            if contentKey {
                try Data(Hex.encode(fixture.contentKey(app)).utf8).write(to: directory.appendingPathComponent("hotpatch-content.key"))
            }
            bundle = try #require(Bundle(url: directory))
        }
    }

    /// One patch of `app` published and served by patchd on loopback, and the app's client made
    /// from its bundle, as `-application:didFinishLaunchingWithOptions:` makes HPPatchClient.
    struct Launched {
        let fixture: ClientFixture
        let server: LiveServer
        let app: AppBundle
        let patches: BundledPatchClient

        @MainActor
        init(encrypted: Bool = false, pushSandbox: Bool = false) throws {
            fixture = try ClientFixture()
            let name = encrypted ? fixture.secret : fixture.demo
            try fixture.publish(name)
            server = try LiveServer(fixture)
            app = try AppBundle(fixture, app: name, contentKey: encrypted)
            patches = try BundledPatchClient(server: server.url, app: name.rawValue, channel: nil, pushSandbox: pushSandbox, bundle: app.bundle, support: app.support)
        }
    }

    /// UIBackgroundFetchResult's case for a raw value, as UIKit numbers them
    /// (https://developer.apple.com/documentation/uikit/uibackgroundfetchresult: NewData, NoData, Failed).
    nonisolated static func fetchResult(_ rawValue: UInt) -> String {
        let names = ["newData", "noData", "failed"]
        return rawValue < names.count ? names[Int(rawValue)] : "raw \(rawValue)"
    }

    /// The UIBackgroundFetchResult a background fetch completes with, by case name.
    static func sync(_ patches: BundledPatchClient) async -> String {
        await withCheckedContinuation { continuation in patches.sync { continuation.resume(returning: fetchResult($0.rawValue)) } }
    }

    static func handlePush(_ patches: BundledPatchClient, _ payload: [AnyHashable: Any]) async -> String {
        await withCheckedContinuation { continuation in patches.handlePush(payload) { continuation.resume(returning: fetchResult($0.rawValue)) } }
    }

    @Test("launch without a patch, background fetch installs it (NewData), the next launch runs the verified script, a confirm keeps it; nothing new is NoData")
    func launchFetchConfirm() async throws {
        let launched = try Launched(), patches = launched.patches
        #expect(patches.beginLaunch() == nil, "no patch before the first sync")
        #expect(await Self.sync(patches) == "newData")
        let script = try #require(patches.beginLaunch(), "the next launch hands JSPatch the installed script")
        #expect(script.hasPrefix(launched.app.support.path))
        #expect(try String(contentsOfFile: script, encoding: .utf8) == ClientFixture.script(launched.fixture.demo, 1))
        #expect(patches.scriptPath == script)
        patches.confirmLaunch()
        #expect(await Self.sync(patches) == "noData")
        #expect(patches.beginLaunch() == script, "confirmed: the same script on every launch")
    }

    @Test("an encrypted app reads hotpatch-content.key from the bundle and installs the decrypted script")
    func encryptedApp() async throws {
        let launched = try Launched(encrypted: true)
        #expect(await Self.sync(launched.patches) == "newData")
        let script = try #require(launched.patches.beginLaunch())
        #expect(try String(contentsOfFile: script, encoding: .utf8) == ClientFixture.script(launched.fixture.secret, 1))
    }

    @Test("registerPushToken reaches the registry with the sandbox environment; a push that is not hotpatch's completes with NoData")
    func push() async throws {
        let launched = try Launched(pushSandbox: true), fixture = launched.fixture, patches = launched.patches
        let token = Data(repeating: 0xA5, count: 32)
        patches.registerPushToken(token)
        // Fire and forget, as from didRegisterForRemoteNotifications: wait for it to land.
        let deadline = ContinuousClock.now + .seconds(20)
        while try fixture.registry.pushDevices(app: fixture.demo).isEmpty, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        let devices = try fixture.registry.pushDevices(app: fixture.demo)
        #expect(devices.map(\.token) == [String(repeating: "a5", count: 32)])
        #expect(devices.first?.environment == .sandbox)
        #expect(await Self.handlePush(patches, ["aps": ["content-available": 1], "other-sdk": ["id": 7]]) == "noData")
    }

    @Test("a bundle without hotpatch-root.json is refused at init, naming the file")
    func missingRoot() throws {
        let fixture = try ClientFixture()
        let app = try AppBundle(fixture, app: fixture.demo, contentKey: false)
        try FileManager.default.removeItem(at: app.directory.appendingPathComponent("hotpatch-root.json"))
        let bundle = try #require(Bundle(url: app.directory))
        #expect(throws: CocoaError.self) {
            try BundledPatchClient(server: URL(string: "http://127.0.0.1:1")!, app: "demo", channel: nil, pushSandbox: false, bundle: bundle, support: app.support)
        }
    }

    @Test("sync outcomes map to UIBackgroundFetchResult: removed NewData (updated: above), unchanged/throttled NoData, failed Failed")
    func fetchResults() {
        #expect(Self.fetchResult(BundledPatchClient.fetchResult(.removed).rawValue) == "newData")
        #expect(Self.fetchResult(BundledPatchClient.fetchResult(.unchanged(nil)).rawValue) == "noData")
        #expect(Self.fetchResult(BundledPatchClient.fetchResult(.throttled(until: Date())).rawValue) == "noData")
        #expect(Self.fetchResult(BundledPatchClient.fetchResult(.failed(.timeout)).rawValue) == "failed")
    }
}
#endif
