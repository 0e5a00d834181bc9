import Foundation
import Locking

/// A fetcher that keeps every file another fetcher served in full (status 200, under its
/// cap), so that what a walk verified can be written out as it was verified — `patchctl
/// export --server` mirrors a repository through `RepositoryVerifier` and writes exactly the
/// recorded bytes, with no second fetch that could differ from the first.
public final class RecordingFetcher: RepositoryFetcher, Sendable {
    private let inner: any RepositoryFetcher
    private let recorded = Locked<[RepositoryFile: [UInt8]]>([:])

    public init(_ inner: any RepositoryFetcher) { self.inner = inner }

    public func location(of file: RepositoryFile) -> String { inner.location(of: file) }

    public func fetch(_ file: RepositoryFile, headers: [String: String], into body: DownloadBody) async throws(FetchError) -> FetchHead {
        let head = try await inner.fetch(file, headers: headers, into: body)
        if head.status == 200, !body.isOverLimit {
            record(file, body.received)
        }
        return head
    }

    private func record(_ file: RepositoryFile, _ bytes: [UInt8]) {
        recorded.withLock { $0[file] = bytes }
    }

    /// Every file served in full so far, by the name it was asked for.
    public var files: [RepositoryFile: [UInt8]] {
        recorded.withLock { $0 }
    }
}
