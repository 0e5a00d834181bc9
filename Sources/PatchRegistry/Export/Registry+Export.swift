import Foundation
import PatchCore

/// What `export` wrote.
public struct ExportSummary: Sendable {
    public let metadataFiles: Int
    public let targetFiles: Int
    public let rootVersion: Int64
    public let timestampVersion: Int64
}

extension Registry {
    /// Writes the app as a static TUF repository with consistent snapshots:
    /// `metadata/N.root.json` (every root version, for the chain walk), `metadata/timestamp.json`,
    /// `metadata/V.snapshot.json`, `metadata/V.targets.json`, and each listed target under
    /// `targets/{appVersion}/{patch}/{hash}.main.js` for every hash. Each file is written to a
    /// temporary name and renamed, and timestamp.json last, so a CDN syncing the directory
    /// never sees a timestamp that points at files not there yet.
    @discardableResult
    public func export(app name: AppName, to directory: URL, now: Date = Date()) throws(RegistryError) -> ExportSummary {
        _ = try app(name)
        try refreshExpiring(app: name, now: now)
        let metadataDir = directory.appendingPathComponent("metadata", isDirectory: true)
        let targetsDir = directory.appendingPathComponent("targets", isDirectory: true)
        // One read transaction: the files written pin each other, so they come from one state.
        return try consistentRead { () throws -> ExportSummary in
            let rootVersion = try latestMetadata(app: name, role: .root).version
            var metadataFiles = 0
            for version in 1...rootVersion {
                guard let bytes = try metadata(app: name, role: .root, version: version) else { throw RegistryError.internalError("root \(version) is missing") }
                try AtomicFile.write(bytes, to: metadataDir.appendingPathComponent("\(version).root.json"))
                metadataFiles += 1
            }
            let targets = try latestMetadata(app: name, role: .targets)
            CrashPoint.hit("export.targets-read")
            let snapshot = try latestMetadata(app: name, role: .snapshot)
            let timestamp = try latestMetadata(app: name, role: .timestamp)
            let body: TargetsBody
            do { body = try SignedTargets(bytes: targets.bytes).body } catch { throw RegistryError.internalError("stored targets do not parse: \(error)") }
            var targetFiles = 0
            for (path, file) in body.targets.sorted(by: { $0.key < $1.key }) {
                guard let sha256 = file.hashes["sha256"] else { continue }
                let bytes = try servedBytes(sha256: sha256)
                let url = targetsDir.appendingPathComponent(path)
                let dir = url.deletingLastPathComponent()
                for hash in file.hashes.values.sorted() {
                    try AtomicFile.write(bytes, to: dir.appendingPathComponent("\(hash).\(url.lastPathComponent)"))
                    targetFiles += 1
                }
            }
            try AtomicFile.write(targets.bytes, to: metadataDir.appendingPathComponent("\(targets.version).targets.json"))
            try AtomicFile.write(snapshot.bytes, to: metadataDir.appendingPathComponent("\(snapshot.version).snapshot.json"))
            try AtomicFile.write(timestamp.bytes, to: metadataDir.appendingPathComponent("timestamp.json"))
            metadataFiles += 3
            return ExportSummary(metadataFiles: metadataFiles, targetFiles: targetFiles, rootVersion: rootVersion, timestampVersion: timestamp.version)
        }
    }
}

enum AtomicFile {
    static func write(_ bytes: [UInt8], to url: URL) throws(RegistryError) {
        do {
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        } catch { throw .io("cannot create \(url.deletingLastPathComponent().path): \(error.localizedDescription)") }
        do { try DurableFile.replace(url, with: bytes) } catch { throw .io(error.message) }
    }
}
