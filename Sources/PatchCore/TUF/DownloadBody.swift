import Foundation

/// The body of one download, capped. Fetchers call `announce` with a declared length
/// (Content-Length) and `append` with each chunk; once either returns false the transfer
/// must stop, and nothing more is kept even if a fetcher went on.
public final class DownloadBody: @unchecked Sendable {
    // @unchecked: every field is guarded by `lock` (chunks arrive on a fetcher's thread).
    public let limit: Int
    private let lock = NSLock()
    private var bytes: [UInt8] = []
    private var overflowed = false

    public init(limit: Int) { self.limit = max(0, limit) }

    /// False when the declared length is over the limit: the body should not be read at all.
    public func announce(length: Int64) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        if length > Int64(limit) { overflowed = true }
        return !overflowed
    }

    /// Appends `chunk`; false (and nothing kept) when it would take the body past the limit.
    public func append(_ chunk: UnsafeRawBufferPointer) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard !overflowed else { return false }
        guard chunk.count <= limit - bytes.count else {
            overflowed = true
            bytes = []
            return false
        }
        bytes.append(contentsOf: chunk)
        return true
    }

    public func append(_ chunk: [UInt8]) -> Bool { chunk.withUnsafeBytes { append($0) } }

    public var isOverLimit: Bool { lock.lock(); defer { lock.unlock() }; return overflowed }
    public var received: [UInt8] { lock.lock(); defer { lock.unlock() }; return bytes }
}
