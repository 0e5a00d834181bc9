import Foundation
import PatchCore

/// One event of a report, already checked against the wire grammar (not yet against the
/// registry: whether its patch exists is decided inside the transaction that counts it).
public struct ReportEvent: Sendable, Equatable {
    public let id: String
    public let type: ReportEventType
    public let appVersion: AppVersion
    public let channel: ChannelName
    /// nil only for a syncFailed that names no patch.
    public let patch: Int?
    public let reason: String?
    /// The patch's receipt (`ReportReceipt`), as the device got it with the bundle.
    public let receipt: String?

    public init(id: String, type: ReportEventType, appVersion: AppVersion, channel: ChannelName = .production, patch: Int?, reason: String? = nil,
                receipt: String? = nil) {
        self.id = id
        self.receipt = receipt
        self.type = type
        self.appVersion = appVersion
        self.channel = channel
        self.patch = patch
        self.reason = reason
    }

    /// One element of the `events` array, or nil when any field breaks the grammar (the event
    /// is then dropped, the rest of the batch still counts).
    public init?(json: JSON) {
        guard case .object(let o) = json,
              let id = o["id"]?.stringValue, ReportEvent.isCode(id, extra: "_-"),
              let type = o["type"]?.stringValue.flatMap(ReportEventType.init(rawValue:)),
              let rawVersion = o["appVersion"]?.stringValue, let version = try? AppVersion(rawVersion) else { return nil }
        var channel = ChannelName.production
        if let raw = o["channel"] {
            guard let text = raw.stringValue, let named = try? ChannelName(text) else { return nil }
            channel = named
        }
        var patch: Int?
        if let raw = o["patch"] {
            guard let n = raw.intValue, n >= 1, n <= Int64(Int32.max) else { return nil }
            patch = Int(n)
        }
        if type.needsPatch, patch == nil { return nil }
        let reason = o["reason"]?.stringValue
        if o["reason"] != nil, reason == nil { return nil }
        guard type.takesReason == (reason != nil) else { return nil }
        if let reason, !ReportEvent.isCode(reason, extra: "_.-") { return nil }
        // `at` is the device's clock: informational, but it must have the documented form.
        if let at = o["at"] { guard let text = at.stringValue, TUFTime.parse(text) != nil else { return nil } }
        var receipt: String?
        if let raw = o["receipt"] {
            guard let text = raw.stringValue, text.utf8.count == 32, ReportEvent.isCode(text, extra: "") else { return nil }
            receipt = text
        }
        self.init(id: id, type: type, appVersion: version, channel: channel, patch: patch, reason: reason, receipt: receipt)
    }

    /// 1…64 ASCII letters, digits and the `extra` punctuation.
    static func isCode(_ text: String, extra: String) -> Bool {
        let bytes = Array(text.utf8)
        guard (1...64).contains(bytes.count) else { return false }
        let allowed = Set(extra.utf8)
        return bytes.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || allowed.contains($0) }
    }
}

/// One request's events, from one device of one app, sent from `origin`.
public struct DeviceReport: Sendable {
    public let app: AppName
    public let deviceID: String
    public let events: [ReportEvent]
    public let origin: ReportOrigin

    public init(app: AppName, deviceID: String, events: [ReportEvent], origin: ReportOrigin) {
        self.app = app
        self.deviceID = deviceID
        self.events = events
        self.origin = origin
    }
}

/// Why an event did not count.
public enum ReportDrop: String, Sendable, CaseIterable {
    /// Malformed, or naming a patch, version or app the registry does not have.
    case invalid
    /// About a patch, without that patch's receipt for this device.
    case receipt
    /// From a device the hour's device budget (network, block or app) could not admit.
    case devices
    /// Past the hour's event budget of the network or the app.
    case events
}

/// What one report request counted (the 202 body).
public struct ReportOutcome: Sendable, Equatable {
    public var accepted = 0
    public var duplicates = 0
    public var dropped: [ReportDrop: Int] = [:]
    /// Patches (version, channel, number) whose installed or rolledBack figure moved: the
    /// ones a guard may have to look at, and nothing else.
    public var touched: Set<PatchKey> = []

    public init() {}

    public var droppedCount: Int { dropped.values.reduce(0, +) }

    mutating func drop(_ reason: ReportDrop, _ count: Int = 1) { if count > 0 { dropped[reason, default: 0] += count } }
}

/// A patch of an app, named the way reports name it.
public struct PatchKey: Sendable, Hashable, Comparable {
    public let appVersion: AppVersion
    public let channel: ChannelName
    public let patch: Int

    public init(appVersion: AppVersion, channel: ChannelName, patch: Int) {
        self.appVersion = appVersion
        self.channel = channel
        self.patch = patch
    }

    public static func < (a: PatchKey, b: PatchKey) -> Bool {
        (a.appVersion, a.channel.rawValue, a.patch) < (b.appVersion, b.channel.rawValue, b.patch)
    }
}
