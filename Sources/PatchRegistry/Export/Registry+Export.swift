import Foundation
import PatchCore

/// Where `export` puts an app's repository inside the output directory.
public enum ExportLayout: String, Sendable, CaseIterable {
    /// `DIR/v1/apps/{app}/metadata/` and `…/targets/`: patchd's own paths, so the URL that
    /// serves DIR is what PatchClient's `server` (and `patchctl fetch`/`verify --server`) takes,
    /// and several apps can share one DIR.
    case server
    /// `DIR/metadata/` and `DIR/targets/`, the layout before it, for TUF clients that are given
    /// the two base URLs (python-tuf's `metadata_base_url`, `target_base_url`).
    case flat

    /// The directory holding `metadata/` and `targets/`.
    public func appRoot(_ directory: URL, app: AppName) -> URL {
        switch self {
        case .server: return directory.appendingPathComponent(String(DeviceRoutes.repositoryRoot(app: app.rawValue).dropFirst()), isDirectory: true)
        case .flat: return directory
        }
    }
}

/// What `export` wrote and removed.
public struct ExportSummary: Sendable {
    public let metadataFiles: Int
    public let targetFiles: Int
    /// Files under targets/ that no longer belong there (revoked or superseded patches), deleted.
    public let removedFiles: Int
    public let rootVersion: Int64
    public let timestampVersion: Int64
    public let timestampExpires: Date
    /// Where metadata/ and targets/ are (`ExportLayout.appRoot`).
    public let appRoot: URL
}

extension Registry {
    /// The longest `timestampLifetime` `export` signs: past it, a mirror that stops updating
    /// could hold devices at an old state for too long (docs/SECURITY.md).
    public static let maxExportLifetime: TimeInterval = 90 * 86_400

    /// Writes the app as a static TUF repository with consistent snapshots:
    /// `metadata/N.root.json` (every root version, for the chain walk), `metadata/timestamp.json`,
    /// `metadata/V.snapshot.json`, `metadata/V.targets.json`, and each listed target under
    /// `targets/[{channel}/]{appVersion}/{patch}/{hash}.main.js` for every hash, inside `layout.appRoot`.
    /// Each file is written to a temporary name and renamed, and timestamp.json last, so a CDN
    /// syncing the directory never sees a timestamp that points at files not there yet. Then
    /// every other file under targets/ is deleted: an export over an older one must not leave a
    /// revoked bundle downloadable. With `timestampLifetime`, metadata that would expire before
    /// `now + timestampLifetime` is re-signed to last that long first (static hosting has no
    /// server to re-sign the one-day timestamp).
    @discardableResult
    public func export(app name: AppName, to directory: URL, layout: ExportLayout = .server, timestampLifetime: TimeInterval? = nil,
                       now: Date = Date()) throws(RegistryError) -> ExportSummary {
        _ = try app(name)
        try refreshExpiring(app: name, now: now)
        if let timestampLifetime { try extendExpiry(app: name, lifetime: timestampLifetime, now: now) }
        let root = layout.appRoot(directory, app: name)
        // One read transaction: the files written pin each other, so they come from one state.
        return try consistentRead { () throws -> ExportSummary in
            let rootVersion = try latestMetadata(app: name, role: .root).version
            var files: [RepositoryFile: [UInt8]] = [:]
            for version in 1...rootVersion {
                guard let bytes = try metadata(app: name, role: .root, version: version) else { throw RegistryError.internalError("root \(version) is missing") }
                files[.metadata("\(version).root.json")] = bytes
            }
            let targets = try latestMetadata(app: name, role: .targets)
            CrashPoint.hit("export.targets-read")
            let snapshot = try latestMetadata(app: name, role: .snapshot)
            let timestamp = try latestMetadata(app: name, role: .timestamp)
            let body: TargetsBody
            do { body = try SignedTargets(bytes: targets.bytes).body } catch { throw RegistryError.internalError("stored targets do not parse: \(error)") }
            var listed = body.targets
            for (role, latest) in try latestDelegatedMetadata(app: name) {
                // A retired role's file stays (snapshot lists it); its targets are top-level's again.
                files[.metadata("\(latest.version).\(role).json")] = latest.bytes
                guard latest.active else { continue }
                do { listed.merge(try SignedTargets(bytes: latest.bytes).body.targets) { first, _ in first } } catch {
                    throw RegistryError.internalError("stored \(role) metadata does not parse: \(error)")
                }
            }
            for (path, file) in listed {
                guard let sha256 = file.hashes["sha256"] else { continue }
                let bytes = try servedBytes(sha256: sha256)
                // Consistent snapshots: `{dir}/{hash}.{name}` for every hash of the target.
                let slash = path.lastIndex(of: "/")
                let dir = slash.map { String(path[...$0]) } ?? "", name = slash.map { String(path[path.index(after: $0)...]) } ?? path
                for hash in file.hashes.values { files[.target("\(dir)\(hash).\(name)")] = bytes }
            }
            files[.metadata("\(targets.version).targets.json")] = targets.bytes
            files[.metadata("\(snapshot.version).snapshot.json")] = snapshot.bytes
            files[.metadata("timestamp.json")] = timestamp.bytes
            return try ExportWriter.write(files, appRoot: root, now: now)
        }
    }

    /// True when `directory` holds an export of this app in `layout`: its `metadata/1.root.json`
    /// is this app's root v1, byte for byte.
    public func holdsExport(app name: AppName, in directory: URL, layout: ExportLayout) throws(RegistryError) -> Bool {
        let file = layout.appRoot(directory, app: name).appendingPathComponent("metadata/1.root.json")
        guard let bytes = FileManager.default.contents(atPath: file.path) else { return false }
        return Array(bytes) == (try initialRoot(app: name))
    }

    /// Re-signs, from the highest role that would expire before `now + lifetime`, with every
    /// role lasting at least `lifetime`.
    private func extendExpiry(app name: AppName, lifetime: TimeInterval, now: Date) throws(RegistryError) {
        guard lifetime > 0, lifetime <= Registry.maxExportLifetime else {
            throw .invalidInput("the export lifetime must be more than 0 and at most \(Int(Registry.maxExportLifetime / 86_400)) days")
        }
        var policy = expiry
        policy.targets = max(policy.targets, lifetime)
        policy.snapshot = max(policy.snapshot, lifetime)
        policy.timestamp = max(policy.timestamp, lifetime)
        let deadline = now.addingTimeInterval(lifetime)
        try write { () throws in
            // A delegated role lasts as long too; one whose keys are not here stops the export.
            let delegated = try refreshDelegated(app: name, now: now, deadline: deadline, lifetime: policy.targets)
            if let failure = delegated.failure { throw failure }
            for role in [Role.targets, .snapshot, .timestamp] where try latestExpiry(app: name, role: role) < deadline || (role == .snapshot && !delegated.roles.isEmpty) {
                try resign(app: name, from: role, now: now, lifetimes: policy)
                return
            }
        }
    }

    /// When the newest stored version of a role expires (now, for one that does not parse).
    func latestExpiry(app name: AppName, role: Role) throws(RegistryError) -> Date {
        let stored = try latestMetadata(app: name, role: role)
        switch role {
        case .targets: return (try? SignedTargets(bytes: stored.bytes))?.body.expires ?? .distantPast
        case .snapshot: return (try? SignedSnapshot(bytes: stored.bytes))?.body.expires ?? .distantPast
        case .timestamp: return (try? SignedTimestamp(bytes: stored.bytes))?.body.expires ?? .distantPast
        case .root: return (try? SignedRoot(bytes: stored.bytes))?.body.expires ?? .distantPast
        }
    }
}

/// Writes a repository's files under an app root as `export` lays them out, for the
/// registry's own export and for `patchctl export --server`'s mirror of what a server serves.
public enum ExportWriter {
    /// Each file to a temporary name and renamed; the root chain and the targets first and
    /// timestamp.json last, so a CDN syncing the directory never sees a timestamp that points
    /// at files not there yet. Then every other file under targets/ is deleted: an export over
    /// an older one must not leave a revoked bundle downloadable.
    public static func write(_ files: [RepositoryFile: [UInt8]], appRoot root: URL, now: Date = Date()) throws(RegistryError) -> ExportSummary {
        func order(_ file: RepositoryFile) -> Int {
            switch file {
            case .metadata(let name) where name.hasSuffix(".root.json"): return 0
            case .target: return 1
            case .metadata(let name) where name.hasSuffix(".targets.json"): return 2
            case .metadata(let name) where name.hasSuffix(".snapshot.json"): return 3
            case .metadata(let name) where name != "timestamp.json": return 2  // a delegated role's {V}.{role}.json
            case .metadata: return 4
            }
        }
        guard let timestamp = files[.metadata("timestamp.json")], let signed = try? SignedTimestamp(bytes: timestamp) else {
            throw .invalidInput("the repository to export has no timestamp.json that parses")
        }
        var written: Set<String> = []
        var metadataFiles = 0, rootVersion: Int64 = 0
        for (file, bytes) in files.sorted(by: { (order($0.key), $0.key.relativePath) < (order($1.key), $1.key.relativePath) }) {
            let url = root.appendingPathComponent(file.relativePath)
            try AtomicFile.write(bytes, to: url)
            switch file {
            case .target: written.insert(url.standardizedFileURL.path)
            case .metadata(let name):
                metadataFiles += 1
                if name.hasSuffix(".root.json"), let version = Int64(name.dropLast(".root.json".count)) { rootVersion = max(rootVersion, version) }
            }
        }
        // After timestamp.json: until then the old timestamp may still name these files.
        let removed = try AtomicFile.prune(root.appendingPathComponent("targets", isDirectory: true), keeping: written)
        return ExportSummary(metadataFiles: metadataFiles, targetFiles: written.count, removedFiles: removed, rootVersion: rootVersion,
                             timestampVersion: signed.body.version, timestampExpires: signed.body.expires, appRoot: root)
    }
}

enum AtomicFile {
    static func write(_ bytes: [UInt8], to url: URL) throws(RegistryError) {
        do {
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        } catch { throw .io("cannot create \(url.deletingLastPathComponent().path): \(error.localizedDescription)") }
        do { try DurableFile.replace(url, with: bytes) } catch { throw .io(error.message) }
    }

    /// Deletes every file under `directory` whose path is not in `keeping`, then the
    /// directories left empty; returns how many files it deleted.
    static func prune(_ directory: URL, keeping: Set<String>) throws(RegistryError) -> Int {
        let manager = FileManager.default
        guard let walk = manager.enumerator(at: directory, includingPropertiesForKeys: [.isDirectoryKey]) else { return 0 }
        var removed = 0
        var directories: [URL] = []
        for case let url as URL in walk {
            let isDirectory = (try? url.resourceValues(forKeys: [.isDirectoryKey]))?.isDirectory == true
            if isDirectory { directories.append(url); continue }
            guard !keeping.contains(url.standardizedFileURL.path) else { continue }
            do { try manager.removeItem(at: url) } catch { throw .io("cannot remove \(url.path): \(error.localizedDescription)") }
            removed += 1
        }
        // Deepest first, so a parent is empty by the time it is looked at.
        for dir in directories.sorted(by: { $0.path.count > $1.path.count }) where (try? manager.contentsOfDirectory(atPath: dir.path))?.isEmpty == true {
            try? manager.removeItem(at: dir)
        }
        return removed
    }
}
