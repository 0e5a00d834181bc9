import Foundation

/// A small file's bytes by path, read with open/fstat/read. `FileManager.contents(atPath:)`
/// and `FileHandle` build `Data` through Foundation's file machinery, tens of thousands of
/// instructions for a file of a few hundred bytes, and a client sync reads several (issue 23).
public enum FileContents {
    /// The file's bytes; nil when it cannot be opened or read, or is larger than `limit`.
    public static func read(atPath path: String, limit: Int = Int.max) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        // The size is a hint (the file may grow while read): read to the end, one byte past the
        // limit at most, so a file over it is refused rather than cut.
        let cap = limit == Int.max ? Int.max : limit + 1
        var bytes = [UInt8]()
        bytes.reserveCapacity(min(Int(info.st_size) + 1, cap))
        var chunk = [UInt8](repeating: 0, count: max(64, min(16_384, Int(info.st_size) + 1)))
        while bytes.count < cap {
            let want = min(chunk.count, cap - bytes.count)
            let n = chunk.withUnsafeMutableBytes { Foundation.read(fd, $0.baseAddress!, want) }
            if n < 0, errno == EINTR { continue }
            guard n >= 0 else { return nil }
            if n == 0 { break }
            bytes.append(contentsOf: chunk[..<n])
        }
        return bytes.count <= limit ? bytes : nil
    }
}
