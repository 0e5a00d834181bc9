import Foundation
import PatchCore
import PatchSigning
@testable import PatchClient
@testable import PatchRegistry
import HotpatchTestSupport

/// A registry in a fresh temporary directory with two apps, "demo" (plain) and "secret"
/// (encrypted), plus what the tests need around it: exports as served byte maps, the
/// registry's own signing keys (to forge metadata as a holder of one key would), and client
/// configurations with their own cache directories. Removed when released.
final class ClientFixture {
    let root: URL
    let dataDirectory: URL
    let keysDirectory: URL
    let registry: Registry
    let actor = Actor("client-tests")
    let demo: AppName
    let secret: AppName
    let version: AppVersion

    init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("patchclient-test-\(UUID().uuidString)", isDirectory: true)
        dataDirectory = root.appendingPathComponent("data", isDirectory: true)
        keysDirectory = root.appendingPathComponent("keys", isDirectory: true)
        registry = try TestBackend.registry(dataDirectory: dataDirectory, keysDirectory: keysDirectory)
        demo = try AppName("demo")
        secret = try AppName("secret")
        version = try AppVersion("2.3")
        try registry.createApp(demo, encrypted: false, actor: actor)
        try registry.createApp(secret, encrypted: true, actor: actor)
    }

    deinit { try? FileManager.default.removeItem(at: root) }

    /// The script text of patch `number`, distinct per app so bundles never coincide.
    static func script(_ app: AppName, _ number: Int) -> String {
        "console.log('\(app.rawValue) 2.3 patch \(number)');\n"
    }

    /// Publishes the next patch of 2.3 with the text `script(app, number)`.
    @discardableResult
    func publish(_ app: AppName, rollout: Int = 100, now: Date = Date()) throws -> PatchRecord {
        let number = try registry.patches(app: app, appVersion: version, activeOnly: false).count + 1
        let text = Self.script(app, number)
        let record = try registry.publish(app: app, appVersion: version, bundle: Array(text.utf8), rollout: rollout, actor: actor, now: now).patch
        precondition(record.number == number)
        return record
    }

    func revoke(_ app: AppName, number: Int) throws {
        try registry.revoke(app: app, appVersion: version, number: number, actor: actor)
    }

    /// `registry.export` into a fresh directory, read back as URL path → bytes
    /// (the export's default layout is patchd's: `v1/apps/{app}/metadata/*` is served as
    /// `/v1/apps/{app}/metadata/*`).
    func exported(_ app: AppName, now: Date = Date()) throws -> [String: [UInt8]] {
        let out = root.appendingPathComponent("export-\(app.rawValue)-\(UUID().uuidString)", isDirectory: true)
        try registry.export(app: app, to: out, now: now)
        var files: [String: [UInt8]] = [:]
        let base = out.standardizedFileURL.path
        guard let walker = FileManager.default.enumerator(atPath: base) else { return files }
        for case let relative as String in walker {
            var isDirectory: ObjCBool = false
            let full = base + "/" + relative
            guard FileManager.default.fileExists(atPath: full, isDirectory: &isDirectory), !isDirectory.boolValue,
                let data = FileManager.default.contents(atPath: full) else { continue }
            files["/\(relative)"] = Array(data)
        }
        return files
    }

    // MARK: Keys and metadata

    func initialRoot(_ app: AppName) throws -> [UInt8] { try registry.initialRoot(app: app) }

    func contentKey(_ app: AppName) throws -> [UInt8] { try registry.keys.contentKey(app: app) }

    /// The registry's current private key for `role` (what an attacker who stole it holds).
    func signingKey(_ app: AppName, _ role: Role) throws -> SigningKey {
        let root = try registry.currentRoot(app: app).body
        return try registry.keys.signingKeys(app: app, role: role, root: root)[0]
    }

    func latestTimestamp(_ app: AppName) throws -> SignedTimestamp {
        try SignedTimestamp(bytes: try registry.latestMetadata(app: app, role: .timestamp).bytes)
    }

    func latestSnapshot(_ app: AppName) throws -> SignedSnapshot {
        try SignedSnapshot(bytes: try registry.latestMetadata(app: app, role: .snapshot).bytes)
    }

    func latestTargets(_ app: AppName) throws -> SignedTargets {
        try SignedTargets(bytes: try registry.latestMetadata(app: app, role: .targets).bytes)
    }

    /// A timestamp one version past the registry's, pinning `snapshot`, signed with `key`
    /// (the real timestamp key unless given).
    func forgedTimestamp(_ app: AppName, pinning snapshot: (version: Int64, bytes: [UInt8]), version: Int64? = nil,
                         expires: Date = Date().addingTimeInterval(86_400), key: (any TUFSigner)? = nil) throws -> [UInt8] {
        var body = try latestTimestamp(app).body
        body.version = version ?? body.version + 1
        body.expires = expires
        body.snapshot = MetaFile(version: snapshot.version, bytes: snapshot.bytes)
        return try SignedTimestamp(signing: body, with: [try key ?? signingKey(app, .timestamp)]).bytes
    }

    /// A snapshot one version past the registry's, pinning `targets`, signed with the real snapshot key.
    func forgedSnapshot(_ app: AppName, pinning targets: (version: Int64, bytes: [UInt8])) throws -> (version: Int64, bytes: [UInt8]) {
        var body = try latestSnapshot(app).body
        body.version += 1
        body.expires = Date().addingTimeInterval(30 * 86_400)
        body.meta["targets.json"] = MetaFile(version: targets.version, bytes: targets.bytes)
        return (body.version, try SignedSnapshot(signing: body, with: [try signingKey(app, .snapshot)]).bytes)
    }

    /// The files of a new targets → snapshot → timestamp chain, one version past the
    /// registry's each, as URL path → bytes. `targetsKey` (default: the real one) signs
    /// targets; snapshot and timestamp carry valid signatures.
    func forgedChain(_ app: AppName, targets change: (inout TargetsBody) -> Void,
                     targetsKey: (any TUFSigner)? = nil) throws -> [String: [UInt8]] {
        var targets = try latestTargets(app).body
        targets.version += 1
        targets.expires = Date().addingTimeInterval(90 * 86_400)
        change(&targets)
        let targetsBytes = try SignedTargets(signing: targets, with: [try targetsKey ?? signingKey(app, .targets)]).bytes
        let snapshot = try forgedSnapshot(app, pinning: (targets.version, targetsBytes))
        let timestamp = try forgedTimestamp(app, pinning: snapshot)
        return [
            Self.metadataPath(app, "\(targets.version).targets.json"): targetsBytes,
            Self.metadataPath(app, "\(snapshot.version).snapshot.json"): snapshot.bytes,
            Self.metadataPath(app, "timestamp.json"): timestamp,
        ]
    }

    static func metadataPath(_ app: AppName, _ name: String) -> String { "/v1/apps/\(app.rawValue)/metadata/\(name)" }

    /// `/v1/apps/{app}/targets/[{channel}/]2.3/{n}/{hash}.main.js` for every hash of a published patch.
    static func targetPaths(_ patch: PatchRecord) -> [String] {
        [patch.served.sha256, patch.served.md5].map { "/v1/apps/\(patch.app.rawValue)/targets/\(patch.targetPath.dropLast("main.js".count))\($0).main.js" }
    }

    // MARK: Clients

    /// A device of `app` on app version 2.3 with its own cache directory (unless `cache` is
    /// given, to restart the same device with another configuration). No local interval
    /// unless asked, so a test's syncs all reach the server.
    func configuration(_ app: AppName, server: URL, device: String = "device-0001", cache: URL? = nil,
                       minimumInterval: TimeInterval = 0) throws -> ClientConfiguration {
        var configuration = ClientConfiguration(server: server, app: app, appVersion: version, deviceID: device,
                                                trustedRoot: Data(try initialRoot(app)),
                                                contentKey: app == secret ? Data(try contentKey(app)) : nil,
                                                cacheDirectory: cache ?? newCacheDirectory())
        configuration.minimumInterval = minimumInterval
        configuration.requestTimeout = 5
        configuration.syncTimeout = 20
        return configuration
    }

    func newCacheDirectory() -> URL {
        root.appendingPathComponent("cache-\(UUID().uuidString)", isDirectory: true)
    }
}
