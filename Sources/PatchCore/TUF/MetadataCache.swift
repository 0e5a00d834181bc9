import Foundation

/// The client's copy of the metadata it trusted (`{cache}/{app}/metadata/`): `N.root.json`
/// past the pinned root, `timestamp.json`, `snapshot.json`, `targets.json`, and each delegated
/// role the targets search loaded under `RoleFileName.cached` (`qa.json`, `a%2Fb.json`), a
/// name that never leaves this directory nor is a top-level file's. Being on disk makes
/// nothing trusted: `Updater` checks every file it reads here again, from the pinned root on,
/// exactly as if it had just been downloaded. Writes are atomic but not fsynced: a file lost
/// to a power cut is fetched again, one that no longer verifies is not used.
public struct MetadataCache: Sendable {
    public let directory: URL

    /// `directory`'s path with a final slash: names are joined to it as strings
    /// (`URL.appendingPathComponent` costs thousands of instructions on Linux; issue 23).
    private let base: String

    public init(directory: URL) {
        self.directory = directory
        let path = directory.path
        base = path.hasSuffix("/") ? path : path + "/"
    }

    /// The file's bytes, nil when it is missing or larger than `limit` (nothing that large
    /// was ever written here, so it was not written by the updater).
    func read(_ name: String, limit: Int) -> [UInt8]? {
        FileContents.read(atPath: path(name), limit: limit)
    }

    /// The version of the timestamp the last refresh accepted, nil before the first. Not
    /// verified again here: it only decides whether a push is worth an early check
    /// (PatchClient.handlePush), never what is trusted.
    public func cachedTimestampVersion() -> Int64? {
        guard let bytes = read("timestamp.json", limit: TrustedMetadata.maxTimestampLength) else { return nil }
        return (try? SignedTimestamp(bytes: bytes, maxLength: TrustedMetadata.maxTimestampLength))?.body.version
    }

    func write(_ name: String, _ bytes: [UInt8]) throws(UpdateError) {
        do { try DurableFile.replace(atPath: path(name), with: bytes, mode: 0o600, sync: false, makingDirectory: true) } catch { throw .storage(error.message) }
    }

    func remove(_ name: String) { unlink(path(name)) }

    private func path(_ name: String) -> String { base + name }
}
