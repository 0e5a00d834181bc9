// A stand-in for the few UIKit names Sources/PatchClientObjC uses, compiled only in the Linux
// "apple-shaped" test build (Package.swift, HOTPATCH_APPLE_SHAPED=1), with the signatures
// Apple documents (cited next to each).
import Foundation

/// https://developer.apple.com/documentation/uikit/uidevice — main-actor isolated, as UIKit's
/// is in Swift 6 (reading `current` elsewhere does not compile).
@MainActor
public final class UIDevice {
    /// https://developer.apple.com/documentation/uikit/uidevice/current
    public static let current = UIDevice()

    /// https://developer.apple.com/documentation/uikit/uidevice/systemversion — here the
    /// kernel's release, which is what this process runs on.
    public var systemVersion: String { ProcessInfo.processInfo.operatingSystemVersionString }

    /// https://developer.apple.com/documentation/uikit/uidevice/identifierforvendor — nil until
    /// the device is first unlocked on iOS; here one UUID for the process.
    public let identifierForVendor: UUID? = UUID()
}

/// https://developer.apple.com/documentation/uikit/uibackgroundfetchresult
public enum UIBackgroundFetchResult: UInt, Sendable {
    case newData = 0
    case noData = 1
    case failed = 2
}
