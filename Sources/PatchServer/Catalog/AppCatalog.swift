import Foundation
import HTTPTransport
import Locking
import PatchAPI
import PatchCore
import PatchRegistry

/// Everything the server sends for one app, prepared once per registry change: metadata
/// files, bundles under each hash, and the simple-check answers. Requests only look up.
public final class AppCatalog: Sendable {
    /// One patch a device of its app version and channel may get, newest first in `versions`.
    public struct CheckEntry: Sendable {
        public let number: Int
        public let channel: ChannelName
        public let rollout: Int
        /// Signed delivery conditions: the entry is answered only to devices they admit.
        public let conditions: DeliveryConditions?
        public let etag: String
        public let ok: HTTPResponse
        public let notModified: HTTPResponse

        var candidate: Selection.Candidate { Selection.Candidate(number: number, rollout: rollout, conditions: conditions, digest: etag) }
    }

    /// The entries of one app version and channel, newest first, and the candidates
    /// `Selection.choose` reads of them: grouped once per catalog rather than per check.
    struct CheckList: Sendable {
        let entries: [CheckEntry]
        let candidates: [Selection.Candidate]
    }

    struct CheckScope: Hashable, Sendable {
        let appVersion: String
        let channel: ChannelName
    }

    public let app: AppName
    public let rules: ThrottleRules
    public let metadata: [String: HTTPResponse]
    /// Every target under each of its hashes → the bundle and the patch it is.
    public let targets: [String: ServedTarget]
    public let versions: [String: [CheckEntry]]
    /// The JSPatch Loader packages, for apps with a JSPatch key.
    public let jspatch: JSPatchCatalog?
    /// Why the JSPatch packages of an app with a JSPatch key could not be prepared.
    public let jspatchFailure: RegistryError?
    /// The version of the timestamp served: what a push announces (DeviceThrottle.noteTimestamp).
    public let timestampVersion: Int64
    /// `versions` by app version and channel, for the simple check.
    let checks: [CheckScope: CheckList]

    init(app: AppName, rules: ThrottleRules, metadata: [String: HTTPResponse], targets: [String: ServedTarget], versions: [String: [CheckEntry]],
         jspatch: JSPatchCatalog?, jspatchFailure: RegistryError?, timestampVersion: Int64) {
        self.app = app
        self.rules = rules
        self.metadata = metadata
        self.targets = targets
        self.versions = versions
        self.jspatch = jspatch
        self.jspatchFailure = jspatchFailure
        self.timestampVersion = timestampVersion
        var grouped: [CheckScope: [CheckEntry]] = [:]
        for (version, entries) in versions {
            for entry in entries { grouped[CheckScope(appVersion: version, channel: entry.channel), default: []].append(entry) }
        }
        checks = grouped.mapValues { CheckList(entries: $0, candidates: $0.map(\.candidate)) }
    }

    static let immutable = ("Cache-Control", "public, max-age=31536000, immutable")
    /// How many snapshot/targets versions (the newest included) stay servable, with the
    /// bundles they list while the patch is active, so a client that read the timestamp or
    /// targets before a run of publishes can still fetch what it names. Eight: a sync that
    /// took 1.3 s on a loaded machine while one publish landed every 0.25 s (the haproxy
    /// kill test) spanned five versions and got a 404 with three. A count, not a time: what a
    /// catalog holds stays bounded however fast publishes come (one token may make 30 a minute).
    static let keptVersions: Int64 = 8

    public static func build(_ registry: Registry, app: AppName) throws(RegistryError) -> AppCatalog {
        let rules = try registry.throttleRules(app: app)
        var metadata: [String: HTTPResponse] = [:]
        let rootVersion = try registry.latestMetadata(app: app, role: .root).version
        for version in 1...rootVersion {
            if let bytes = try registry.metadata(app: app, role: .root, version: version) {
                metadata["\(version).root.json"] = metadataResponse(bytes, immutable: true)
            }
        }
        for role in [Role.snapshot, .targets] {
            let latest = try registry.latestMetadata(app: app, role: role).version
            for version in max(1, latest - keptVersions + 1)...latest {
                if let bytes = try registry.metadata(app: app, role: role, version: version) {
                    metadata["\(version).\(role.rawValue).json"] = metadataResponse(bytes, immutable: true)
                }
            }
        }
        let timestamp = try registry.latestMetadata(app: app, role: .timestamp)
        metadata["timestamp.json"] = metadataResponse(timestamp.bytes, immutable: false)

        let targetsBytes = try registry.latestMetadata(app: app, role: .targets).bytes
        let body: TargetsBody
        do { body = try SignedTargets(bytes: targetsBytes).body } catch { throw .internalError("stored targets of \(app) do not parse: \(error)") }
        // Delegated roles (`keys delegate`): `{V}.{role}.json`, the kept versions of each, and
        // the targets the newest lists served like top-level ones (a retired role's files stay
        // servable for a client mid-sync; its targets are top-level's again). `olderListings`:
        // the kept older versions of every targets role, whose bundles stay servable below.
        var listed = body.targets
        var olderListings: [[UInt8]] = []
        var withholds = Withholds()
        for (role, latest) in try registry.latestDelegatedMetadata(app: app) {
            for version in max(1, latest.version - keptVersions + 1)...latest.version {
                if let bytes = try registry.delegatedMetadata(app: app, role: role, version: version) {
                    metadata["\(version).\(role).json"] = metadataResponse(bytes, immutable: true)
                    if version < latest.version || !latest.active { olderListings.append(bytes) }
                }
            }
            guard latest.active else { continue }
            guard let delegated = try? SignedTargets(bytes: latest.bytes).body else {
                throw .internalError("stored \(role) metadata of \(app) does not parse")
            }
            if role == Withholds.roleName {
                do { withholds = try Withholds(body: delegated) } catch { throw .internalError("stored withhold metadata of \(app): \(error)") }
                continue
            }
            listed.merge(delegated.targets) { first, _ in first }
        }
        // The withhold role, as PatchClient reads it: a target withheld to roll back is served
        // to no one (a device that runs it drops it, and a client that does not know the role
        // cannot fetch it); one withheld as a halt is offered to no device, as at rollout 0.
        let halted: Set<String>
        (listed, halted) = withholds.apply(to: listed)
        var targets: [String: ServedTarget] = [:]
        var versions: [String: [CheckEntry]] = [:]
        /// The bundle of one target under each of its hashes; nil for an entry that is not a patch.
        func serve(_ path: String, _ file: TargetFile) throws(RegistryError) -> (info: PatchTargetInfo, sha256: String, bytes: [UInt8])? {
            guard let signed = PatchTargetInfo(path: path, file: file), let sha256 = file.hashes["sha256"],
                  let version = try? AppVersion(signed.appVersion) else { return nil }
            let info = halted.contains(path) ? signed.withRollout(0) : signed
            let bytes = try registry.servedBytes(sha256: sha256)
            let contentType = info.encryption == nil ? "application/javascript; charset=utf-8" : "application/octet-stream"
            let served = ServedTarget(response: HTTPResponse(status: 200, headers: [
                ("Content-Type", contentType), immutable, ("ETag", "\"\(sha256)\""),
            ], body: bytes, prepared: true), key: PatchKey(appVersion: version, channel: info.channel, patch: info.patch),
                                      rollout: info.rollout, conditions: info.conditions)
            for hash in file.hashes.values { targets[info.servedPath(hash: hash)] = served }
            return (info, sha256, bytes)
        }
        for (path, file) in listed {
            guard let (info, sha256, bytes) = try serve(path, file) else { continue }
            let contentType = info.encryption == nil ? "application/javascript; charset=utf-8" : "application/octet-stream"
            let etag = "\"\(sha256)\""
            var patchHeaders = [
                ("X-Patch-Number", String(info.patch)), ("X-Patch-SHA256", sha256), ("X-Patch-MD5", file.hashes["md5"] ?? ""),
                ("ETag", etag),
            ]
            if let encryption = info.encryption {
                patchHeaders += [("X-Patch-Encryption", encryption.algorithm), ("X-Patch-Plaintext-SHA256", info.plaintext.sha256)]
            }
            // The answer depends on the device (rollout, conditions), so shared caches must not reuse it.
            let common = [("Cache-Control", "private, no-cache"), PatchService.checkVary]
            versions[info.appVersion, default: []].append(CheckEntry(
                number: info.patch, channel: info.channel, rollout: info.rollout, conditions: info.conditions, etag: etag,
                ok: HTTPResponse(status: 200, headers: [("Content-Type", contentType)] + patchHeaders + common, body: bytes, prepared: true),
                notModified: HTTPResponse(status: 304, headers: patchHeaders + common, prepared: true)))
        }
        for key in versions.keys { versions[key]!.sort { $0.number > $1.number } }
        // The targets the older kept versions of each targets role list stay servable while their
        // patch is active: a device that read one of those files a moment before a publish
        // unlisted a patch (a newer one at 100 % supersedes it) still gets the bundle it was
        // told of, from this instance or from another that reloaded sooner. A revoked patch is
        // not among them: a revoke stops serving its bundle at once.
        let current = try registry.latestMetadata(app: app, role: .targets).version
        let active = Set(try registry.patches(app: app, appVersion: nil, activeOnly: true).map {
            PatchKey(appVersion: $0.appVersion, channel: $0.channel, patch: $0.number)
        })
        for version in max(1, current - keptVersions + 1)..<current {
            if let bytes = try registry.metadata(app: app, role: .targets, version: version) { olderListings.append(bytes) }
        }
        for bytes in olderListings {
            guard let older = try? SignedTargets(bytes: bytes).body else { continue }
            for (path, file) in older.targets where !listed.keys.contains(path) && withholds.entry(path: path, file: file)?.rollBack != true {
                guard let info = PatchTargetInfo(path: path, file: file), let version = try? AppVersion(info.appVersion),
                      active.contains(PatchKey(appVersion: version, channel: info.channel, patch: info.patch)) else { continue }
                _ = try serve(path, file)
            }
        }
        // The legacy JSPatch packages must not take the TUF repository down with them: a
        // missing or wrong JSPatch key disables only the /jspatch routes of this app.
        var jspatch: JSPatchCatalog?
        var jspatchFailure: RegistryError?
        do { jspatch = try JSPatchCatalog.build(registry, app: app) } catch { jspatchFailure = error }
        return AppCatalog(app: app, rules: rules, metadata: metadata, targets: targets, versions: versions, jspatch: jspatch,
                          jspatchFailure: jspatchFailure, timestampVersion: timestamp.version)
    }

    /// Whether a file this catalog does not have could be in a newer state of the app, so a
    /// miss is worth a catch-up (PatchService.catchUp) before its 404: a snapshot or targets
    /// version above the newest served, or a patch numbered above the newest listed for its app
    /// version (numbers are one sequence per version across channels). Anything else (an old
    /// version pruned, a revoked patch's target, a made-up name) is a 404 at once.
    func mayBeNewer(metadata file: String) -> Bool {
        guard let (version, role) = AppCatalog.versioned(file) else { return false }
        let newest = metadata.keys.compactMap { AppCatalog.versioned($0) }.filter { $0.role == role }.map(\.version).max() ?? 0
        return version > newest
    }

    func mayBeNewer(patch: Int, of version: AppVersion) -> Bool {
        patch > (versions[version.rawValue]?.first?.number ?? 0)
    }

    /// `N.snapshot.json`, `N.targets.json` → (N, role); nil for any other name (`N.root.json`
    /// too: every sync asks for the next root, which is normally missing).
    static func versioned(_ file: String) -> (version: Int64, role: Substring)? {
        let parts = file.split(separator: ".", maxSplits: 1)
        guard parts.count == 2, parts[1] == "snapshot.json" || parts[1] == "targets.json", parts[0].count <= 18,
              parts[0].utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let version = Int64(parts[0]) else { return nil }
        return (version, parts[1])
    }

    private static func metadataResponse(_ bytes: [UInt8], immutable: Bool) -> HTTPResponse {
        HTTPResponse(status: 200, headers: [
            ("Content-Type", "application/json"),
            immutable ? AppCatalog.immutable : ("Cache-Control", "no-cache"),
            ("ETag", "\"\(Digest.sha256Hex(bytes).prefix(32))\""),
        ], body: bytes, prepared: true)
    }

    /// The app versions and channels where `new` takes code away from some device: a listed
    /// patch gone (revoked). A lowered rollout (a pause, a guard's halt) takes nothing: the
    /// devices that run the patch keep it while it is listed (`Selection.choose`), so it needs
    /// nothing to land early. A patch gone because a newer unconditional 100 % patch now
    /// reaches every device first was superseded, not withdrawn: every device gets newer code.
    static func withdrawn(from old: AppCatalog, to new: AppCatalog) -> [(appVersion: String, channel: ChannelName)] {
        var result: [(appVersion: String, channel: ChannelName)] = []
        for (version, entries) in old.versions {
            for channel in Set(entries.map(\.channel)) {
                let now = (new.versions[version] ?? []).filter { $0.channel == channel }
                let took = entries.filter { $0.channel == channel }.contains { entry in
                    !now.contains { $0.number == entry.number } && !now.contains { $0.number > entry.number && $0.rollout >= 100 && $0.conditions == nil }
                }
                if took { result.append((version, channel)) }
            }
        }
        return result
    }

    /// The patch this device should run, under the rule PatchClient applies (`Selection.choose`):
    /// the newest listed patch of its channel whose rollout includes it and whose delivery
    /// conditions (if any) admit it — unless the device presents (`etags`, its `If-None-Match`)
    /// a listed patch it runs that is not older: that one is kept, whatever its rollout, so a
    /// halt or a lowered rollout takes nothing from devices that run the patch. Without a
    /// device ID only full (100%) rollouts are offered. `conditional: false` leaves
    /// conditional patches out (the JSPatch Loader, which cannot say what OS it runs on).
    public func patch(for appVersion: String, channel: ChannelName = .production, deviceID: String?, osVersion: String? = nil,
                      conditional: Bool = true, etags: EntityTags = EntityTags([])) -> CheckEntry? {
        guard let list = checks[CheckScope(appVersion: appVersion, channel: channel)] else { return nil }
        let device = Selection.Device(app: app.rawValue, appVersion: appVersion, deviceID: deviceID, osVersion: osVersion, conditional: conditional)
        // Entries are newest first: a device presenting several tags runs the newest of them.
        let running = etags.isEmpty ? nil : list.entries.first { entry in etags.contains(entry.etag) }.map { Selection.Running(number: $0.number, digest: $0.etag) }
        switch Selection.choose(list.candidates, for: device, running: running) {
        case .keep(let number), .install(let number): return list.entries.first { $0.number == number }
        case .none: return nil
        }
    }
}

/// A patch bundle as served, and which patch it is: a download that names its device gets
/// the patch's receipt with it (`PatchService.receipted`).
public struct ServedTarget: Sendable {
    public let response: HTTPResponse
    public let key: PatchKey
    /// What the selection rule delivers it by: the rollout and the delivery conditions.
    public let rollout: Int
    public let conditions: DeliveryConditions?

    /// Whether the rule (PROTOCOL.md section 5) gives this patch to `device`: what a receipt
    /// for its reports is issued on (issue 43), so a device the rollout or conditions leave
    /// out cannot report on a patch it was never given.
    func delivers(to device: String, osVersion: String?, app: AppName) -> Bool {
        Rollout.includes(percent: rollout, app: app.rawValue, appVersion: key.appVersion.rawValue, patch: key.patch, deviceID: device)
            && conditions?.admits(deviceID: device, osVersion: osVersion) != false
    }
}

/// What a fixed URL of an app leads to, found by one dictionary lookup of the request path:
/// a cache of routing (`getMetadata`, the `get…Target` operations, `checkPatch`). The routed
/// handlers answer through the same `PatchService.answer`, so the cache holds no rule.
/// A class: the request that finds one hands it from routing to its handler, one reference
/// rather than a catalog, a name and a target retained at every copy.
public final class PublishedFile: Sendable {
    public enum Kind: Sendable {
        /// A metadata file (`getMetadata`) by name; timestamp.json is subject to the per-device interval.
        case metadata(name: String)
        /// A patch bundle, under one of its hashes.
        case target(ServedTarget)
        /// The simple check of an app version with listed patches.
        case simpleCheck(version: String)
    }

    public let app: AppCatalog
    public let kind: Kind

    init(app: AppCatalog, kind: Kind) {
        self.app = app
        self.kind = kind
    }

    /// The metric of the operation it answers.
    var metric: Metrics.Route {
        switch kind {
        case .metadata: return .metadata
        case .target: return .target
        case .simpleCheck: return .check
        }
    }
}

/// The current catalogs of all apps. Replaced whole per app on every change.
public final class Catalog: Sendable {
    private struct State: Sendable {
        var apps: [AppName: AppCatalog] = [:]
        /// Every metadata and target URL of every app → its prepared response.
        var files: [String: PublishedFile] = [:]
    }

    private let state = Locked(State())
    private let fingerprints = Locked<[AppName: String]>([:])

    public init() {}

    public func app(_ name: AppName) -> AppCatalog? { state.withLock { $0.apps[name] } }

    public var appCount: Int { state.withLock { $0.apps.count } }

    /// The prepared response for a metadata or target URL, if it is one.
    public func file(at path: String) -> PublishedFile? { state.withLock { $0.files[path] } }

    /// Installs a new catalog of an app and says from which app versions and channels it took
    /// something away: a listed patch gone (`withdrawn`).
    @discardableResult
    func install(_ catalog: AppCatalog) -> [(appVersion: String, channel: ChannelName)] {
        // The operation table's paths: the TUF layout under the app's repository root, and
        // the simple check (OperationTableTests holds the templates to this layout).
        let root = DeviceRoutes.repositoryRoot(app: catalog.app.rawValue) + "/"
        let metadataPath = { (name: String) in root + RepositoryFile.metadata(name).relativePath }
        let targetPath = { (path: String) in root + RepositoryFile.target(path).relativePath }
        let checkPath = { (version: String) in APIOperation.checkPatch.path(["app": catalog.app.rawValue, "appVersion": version]) }
        var files: [String: PublishedFile] = [:]
        for name in catalog.metadata.keys {
            files[metadataPath(name)] = PublishedFile(app: catalog, kind: .metadata(name: name))
        }
        for (path, target) in catalog.targets {
            files[targetPath(path)] = PublishedFile(app: catalog, kind: .target(target))
        }
        for version in catalog.versions.keys {
            files[checkPath(version)] = PublishedFile(app: catalog, kind: .simpleCheck(version: version))
        }
        return state.withLock { state in
            var withdrawn: [(appVersion: String, channel: ChannelName)] = []
            if let old = state.apps[catalog.app] {
                withdrawn = AppCatalog.withdrawn(from: old, to: catalog)
                for name in old.metadata.keys { state.files[metadataPath(name)] = nil }
                for path in old.targets.keys { state.files[targetPath(path)] = nil }
                for version in old.versions.keys { state.files[checkPath(version)] = nil }
            }
            state.apps[catalog.app] = catalog
            state.files.merge(files) { _, new in new }
            return withdrawn
        }
    }

    public struct Refresh: Sendable {
        public var rebuilt: [AppName] = []
        /// Apps whose stored state could not be prepared: they keep their previous catalog
        /// (or stay absent), and every other app is served as usual.
        public var failed: [(AppName, RegistryError)] = []
        /// Apps served, but without their JSPatch Loader packages, and why.
        public var withoutJSPatch: [(AppName, RegistryError)] = []
        /// App versions and channels from which the change took a patch away (a revoke or a
        /// rollback; a halt takes nothing): their devices' intervals are lifted.
        public var withdrawn: [(app: AppName, appVersion: String, channel: ChannelName)] = []
    }

    /// Apps the registry has, built or not yet.
    private let known = Locked<Set<AppName>>([])

    public func isKnown(_ name: AppName) -> Bool { known.withLock { $0.contains(name) } }

    /// Records apps the registry has without building anything (start-up).
    public func noteKnown(_ names: [AppName]) { known.withLock { $0.formUnion(names) } }

    /// Rebuilds the catalogs whose registry fingerprint changed. Only apps already built
    /// (served at least once) are rebuilt; the others are just noted as known and built on
    /// their first request (`build(_:from:)`), so start-up does not grow with the registry.
    @discardableResult
    public func refresh(from registry: Registry, app: AppName? = nil, all: Bool = false) throws(RegistryError) -> Refresh {
        let current = try registry.servingFingerprints(app: app)
        known.withLock { $0.formUnion(current.keys) }
        let built = fingerprints.withLock { $0 }
        var result = Refresh()
        for (app, fingerprint) in current where built[app] != fingerprint && (all || built[app] != nil) {
            build(app, fingerprint: fingerprint, from: registry, into: &result)
        }
        return result
    }

    /// Builds one app's catalog now (its first request, or after a change made through this
    /// server), whatever was built before.
    @discardableResult
    public func build(_ app: AppName, from registry: Registry) throws(RegistryError) -> Refresh {
        var result = Refresh()
        guard let fingerprint = try registry.servingFingerprints(app: app)[app] else { return result }
        known.withLock { _ = $0.insert(app) }
        build(app, fingerprint: fingerprint, from: registry, into: &result)
        return result
    }

    private func build(_ app: AppName, fingerprint: String, from registry: Registry, into result: inout Refresh) {
        do {
            for (version, channel) in install(try AppCatalog.build(registry, app: app)) {
                result.withdrawn.append((app, version, channel))
            }
            fingerprints.withLock { $0[app] = fingerprint }
            result.rebuilt.append(app)
            if let failure = self.app(app)?.jspatchFailure { result.withoutJSPatch.append((app, failure)) }
        } catch {
            result.failed.append((app, error))
        }
    }
}
