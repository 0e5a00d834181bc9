import Foundation
import PatchCore

/// Everything a `PatchClient` needs. The trusted root is the `1.root.json` the app ships
/// (`patchctl apps root NAME`); the content key is needed only for encrypted apps.
public struct ClientConfiguration: Sendable {
    public var server: URL
    public var app: AppName
    public var appVersion: AppVersion
    /// The installation's identifier: picks its rollout buckets and its allow-list entries,
    /// and names it in reports. Not a secret: what keeps its check interval its own is the
    /// random `X-Device-Secret` the client makes once and keeps in the cache directory
    /// (`{cache}/{app}/device-secret`).
    public var deviceID: String
    /// The bytes of the `1.root.json` the app ships.
    public var trustedRoot: Data
    /// The 32-byte AES-256 key of an encrypted app: `ClientConfiguration.contentKey(hexFile:)`
    /// reads the `content.key` file `patchctl apps create --encrypt` writes.
    public var contentKey: Data?
    public var cacheDirectory: URL
    /// The one channel this client follows: it installs only patches signed for it (the
    /// channel is part of the signed target path), never another channel's.
    public var channel: ChannelName = .production
    /// The OS version the device runs (`UIDevice.current.systemVersion`, "17.4.1"), checked
    /// against a patch's signed OS range. Without it, patches limited to an OS range are
    /// never installed (conditions only narrow delivery).
    public var osVersion: String?
    /// No network request is made when the last check is younger than this (seconds).
    public var minimumInterval: TimeInterval = 3600
    /// Per request: connecting and waiting for data.
    public var requestTimeout: TimeInterval = 20
    /// The longest one sync may take, all requests included.
    public var syncTimeout: TimeInterval = 60
    /// Caps for files whose length no signed metadata gives yet.
    public var maxRootSize = TrustedMetadata.maxRootLength
    public var maxTimestampSize = TrustedMetadata.maxTimestampLength
    /// The largest bundle the client accepts, whatever the metadata says.
    public var maxBundleSize = 10 << 20
    /// A new patch not confirmed within this many launches is rolled back.
    public var maxUnconfirmedLaunches = 2
    /// A launch of a new patch not confirmed within this many seconds in the foreground counts
    /// as failed: the next `beginLaunch()` rolls it back. Foreground time runs from
    /// `beginLaunch()` (or `willEnterForeground()`) to `didEnterBackground()` (or the next
    /// `beginLaunch()`, when the process ended in the foreground). nil: no time limit.
    public var confirmationTimeout: TimeInterval? = 120
    /// Whether the client records what happens to each patch and sends it to the server
    /// (`POST /v1/apps/{app}/reports`, docs/PROTOCOL.md "Device reports"). Off: nothing is
    /// recorded or sent.
    public var reporting = true
    /// How many new root versions one sync may walk (spec 5.3.3's bound on the chain).
    public var maxRootRotations = 32
    /// The longest a server's Retry-After is honoured (seconds).
    public var maxRetryAfter: TimeInterval = 86_400

    public init(server: URL, app: AppName, appVersion: AppVersion, deviceID: String, trustedRoot: Data,
                contentKey: Data? = nil, cacheDirectory: URL) {
        self.server = server
        self.app = app
        self.appVersion = appVersion
        self.deviceID = deviceID
        self.trustedRoot = trustedRoot
        self.contentKey = contentKey
        self.cacheDirectory = cacheDirectory
    }

    /// The configuration before it took `Data`: kept so existing callers still compile.
    @available(*, deprecated, message: "pass trustedRoot and contentKey as Data")
    public init(server: URL, app: AppName, appVersion: AppVersion, deviceID: String, trustedRoot: [UInt8],
                contentKey: [UInt8]? = nil, cacheDirectory: URL) {
        self.init(server: server, app: app, appVersion: appVersion, deviceID: deviceID, trustedRoot: Data(trustedRoot),
                  contentKey: contentKey.map { Data($0) }, cacheDirectory: cacheDirectory)
    }

    /// The content key from a `content.key` file as `patchctl apps create --encrypt` writes it:
    /// 64 hex characters and a newline.
    public static func contentKey(hexFile url: URL) throws(PatchClientError) -> Data {
        guard let handle = FileHandle(forReadingAtPath: url.path) else { throw .storage("cannot read \(url.path)") }
        defer { try? handle.close() }
        // A key file is 65 bytes; reading a little more is enough to refuse anything else.
        let bytes = Array((try? handle.read(upToCount: 4096)) ?? Data())
        do { return Data(try BundleCipher.parseKeyFile(bytes)) } catch { throw .invalidContentKey("\(url.path): \(error)") }
    }

    /// `{cache}/{app}`: trusted metadata, shared by every app version.
    var appDirectory: URL { ClientPaths(self).appDirectory }
    var metadataDirectory: URL { ClientPaths(self).metadataDirectory }
    /// `{cache}/{app}/{appVersion}`: the installed script and the client state.
    var versionDirectory: URL { ClientPaths(self).versionDirectory }
    var scriptURL: URL { ClientPaths(self).scriptURL }
    var goodScriptURL: URL { ClientPaths(self).goodScriptURL }
    var stateURL: URL { ClientPaths(self).stateURL }
    /// `{cache}/{app}/reports.json`: events not yet accepted by the server, for every app version.
    var reportsURL: URL { ClientPaths(self).reportsURL }
    /// `{cache}/{app}/device-secret`: the installation's `X-Device-Secret`, for every app version.
    var secretURL: URL { ClientPaths(self).secretURL }
}

/// `ClientConfiguration`'s file locations, worked out once for a client (PatchClient.paths).
/// Joined as strings from one read of the cache directory's path: each
/// `URL.appendingPathComponent` (and each `URL.path`, which percent-decodes) costs thousands of
/// instructions on Linux, and the bench builds a client per sync (issue 23). The URLs are made
/// with `isDirectory` given, so none stats the disk.
struct ClientPaths: Sendable {
    let appPath, metadataPath, versionPath, scriptPath, goodScriptPath, statePath, reportsPath, secretPath: String

    init(_ configuration: ClientConfiguration) {
        var cache = configuration.cacheDirectory.path
        while cache.count > 1, cache.hasSuffix("/") { cache.removeLast() }
        appPath = cache + "/" + configuration.app.rawValue
        metadataPath = appPath + "/metadata"
        versionPath = appPath + "/" + configuration.appVersion.rawValue
        scriptPath = versionPath + "/main.js"
        goodScriptPath = versionPath + "/good.js"
        statePath = versionPath + "/state.json"
        reportsPath = appPath + "/reports.json"
        secretPath = appPath + "/device-secret"
    }

    var appDirectory: URL { URL(fileURLWithPath: appPath, isDirectory: true) }
    var metadataDirectory: URL { URL(fileURLWithPath: metadataPath, isDirectory: true) }
    var versionDirectory: URL { URL(fileURLWithPath: versionPath, isDirectory: true) }
    var scriptURL: URL { URL(fileURLWithPath: scriptPath, isDirectory: false) }
    var goodScriptURL: URL { URL(fileURLWithPath: goodScriptPath, isDirectory: false) }
    var stateURL: URL { URL(fileURLWithPath: statePath, isDirectory: false) }
    var reportsURL: URL { URL(fileURLWithPath: reportsPath, isDirectory: false) }
    var secretURL: URL { URL(fileURLWithPath: secretPath, isDirectory: false) }
}

/// Why a sync failed. The installed patch is untouched whenever one of these is reported.
public enum PatchClientError: Error, Equatable, CustomStringConvertible {
    /// The server could not be reached, or the connection failed.
    case network(String)
    case timeout
    /// The calling task was cancelled: nothing was changed.
    case cancelled
    /// The server answered with an unexpected status; `message` is the `message` of patchd's
    /// JSON error body (at most `PatchClientError.maxServerMessage` characters), if it sent one.
    case server(status: Int, url: String, message: String? = nil)
    /// Metadata or a bundle did not verify (signature, version, expiry, length, hash).
    case verification(TUFError)
    /// The server sent more bytes than the signed length or the configured cap.
    case tooLarge(what: String, limit: Int)
    /// Decryption failed: wrong content key, or a ciphertext for another app/version/patch.
    case decryption(String)
    /// The patch is encrypted and no content key was configured.
    case missingContentKey
    /// The target entry is not a hotpatch patch (bad path or custom fields).
    case malformedTarget(String)
    /// Reading or writing the cache directory failed.
    case storage(String)
    /// A content key file that is not 64 hex characters.
    case invalidContentKey(String)

    /// The most of a server's message an error keeps: it is shown to people, not parsed.
    public static let maxServerMessage = 200

    public var description: String {
        switch self {
        case .network(let m): return "network error: \(m)"
        case .timeout: return "timed out"
        case .cancelled: return "cancelled"
        case .server(let status, let url, let message?): return "server answered HTTP \(status) for \(url): \(message)"
        case .server(let status, let url, nil): return "server answered HTTP \(status) for \(url)"
        case .verification(let e): return "verification failed: \(e)"
        case .tooLarge(let what, let limit): return "\(what) exceeds \(limit) bytes (endless data?)"
        case .decryption(let m): return "decryption failed: \(m)"
        case .missingContentKey: return "the patch is encrypted and no content key is configured"
        case .malformedTarget(let m): return "malformed target: \(m)"
        case .storage(let m): return "cache error: \(m)"
        case .invalidContentKey(let m): return "invalid content key: \(m)"
        }
    }
}

/// The patch a device runs.
public struct InstalledPatch: Sendable, Equatable {
    public let number: Int
    /// `{cache}/{app}/{appVersion}/main.js`.
    public let path: URL
    public let sha256: String
    /// Whether the app confirmed a good launch with it.
    public let confirmed: Bool
}

/// What one `sync()` did.
public enum SyncOutcome: Sendable, Equatable {
    case updated(InstalledPatch)
    case unchanged(InstalledPatch?)
    /// No active patch for this version (or this device) any more: the cached script was deleted.
    case removed
    /// Not checked: the last check is younger than the interval, or the server asked to wait.
    case throttled(until: Date)
    case failed(PatchClientError)
}
