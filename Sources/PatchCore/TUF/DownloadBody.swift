import Foundation
import Locking

/// The body of one download, capped. Fetchers call `announce` with a declared length
/// (Content-Length) and `append` with each chunk; once either returns false the transfer
/// must stop, and nothing more is kept even if a fetcher went on.
public final class DownloadBody: Sendable {
    public let limit: Int
    /// Chunks arrive on a fetcher's thread.
    private let state = Locked<(bytes: [UInt8], overflowed: Bool)>(([], false))

    public init(limit: Int) { self.limit = max(0, limit) }

    /// False when the declared length is over the limit: the body should not be read at all.
    public func announce(length: Int64) -> Bool {
        state.withLock { state in
            if length > Int64(limit) { state.overflowed = true }
            return !state.overflowed
        }
    }

    /// Appends `chunk`; false (and nothing kept) when it would take the body past the limit.
    public func append(_ chunk: UnsafeRawBufferPointer) -> Bool {
        state.withLock { state in
            guard !state.overflowed else { return false }
            guard chunk.count <= limit - state.bytes.count else {
                state.overflowed = true
                state.bytes = []
                return false
            }
            state.bytes.append(contentsOf: chunk)
            return true
        }
    }

    public func append(_ chunk: [UInt8]) -> Bool { chunk.withUnsafeBytes { append($0) } }

    public var isOverLimit: Bool { state.withLock { $0.overflowed } }
    public var received: [UInt8] { state.withLock { $0.bytes } }
}
