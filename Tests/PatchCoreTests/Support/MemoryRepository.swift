import Foundation
import PatchCore

/// A repository served from memory as a CDN would serve the exported directory; it
/// remembers what was asked for, so a test can count the roles a search downloaded.
final class MemoryRepository: RepositoryFetcher, @unchecked Sendable {
    // @unchecked: `asked` is only touched under `lock`; the files never change.
    let metadataFiles: [String: [UInt8]]
    let targetFiles: [String: [UInt8]]
    private let lock = NSLock()
    private var asked: [RepositoryFile] = []

    init(metadataFiles: [String: [UInt8]], targetFiles: [String: [UInt8]] = [:]) {
        self.metadataFiles = metadataFiles
        self.targetFiles = targetFiles
    }

    func location(of file: RepositoryFile) -> String { file.relativePath }

    func fetch(_ file: RepositoryFile, headers: [String: String], into body: DownloadBody) async throws(FetchError) -> FetchHead {
        record(file)
        let bytes: [UInt8]?
        switch file {
        case .metadata(let name): bytes = metadataFiles[name]
        case .target(let path): bytes = targetFiles[path]
        }
        guard let bytes else { return FetchHead(status: 404) }
        _ = body.append(bytes)
        return FetchHead(status: 200)
    }

    private func record(_ file: RepositoryFile) {
        lock.lock()
        asked.append(file)
        lock.unlock()
    }

    /// Every file asked for so far, in order.
    var requests: [RepositoryFile] {
        lock.lock()
        defer { lock.unlock() }
        return asked
    }
}
