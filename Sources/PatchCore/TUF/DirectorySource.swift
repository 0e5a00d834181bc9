import Foundation

/// A static repository on disk, as `patchctl export` writes it.
public struct DirectorySource: RepositoryFetcher {
    public let directory: URL

    public init(directory: URL) { self.directory = directory }

    public func location(of file: RepositoryFile) -> String { directory.appendingPathComponent(file.relativePath).path }

    public func fetch(_ file: RepositoryFile, headers: [String: String], into body: DownloadBody) async throws(FetchError) -> FetchHead {
        let path = location(of: file)
        guard let handle = FileHandle(forReadingAtPath: path) else {
            if FileManager.default.fileExists(atPath: path) { throw .unreadable("cannot read \(path)") }
            return FetchHead(status: 404)
        }
        defer { try? handle.close() }
        // In chunks, so a file that never ends (a FIFO, /dev/zero behind a symlink) is cut at the cap too.
        while true {
            let chunk: Data
            do { chunk = try handle.read(upToCount: 64 << 10) ?? Data() } catch { throw .unreadable("cannot read \(path): \(error.localizedDescription)") }
            if chunk.isEmpty { return FetchHead(status: 200) }
            guard chunk.withUnsafeBytes({ body.append($0) }) else { return FetchHead(status: 200) }
        }
    }
}
