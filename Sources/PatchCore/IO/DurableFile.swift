import Foundation

/// Writing files so that a crash leaves the old content or the new, never a mix: the bytes
/// go to a temporary file in the same directory, are fsynced, then take the final name in
/// one step, and the directory entry is fsynced too.
public enum DurableFile {
    public struct Failure: Error, CustomStringConvertible {
        public let message: String
        public var description: String { message }
    }

    /// Replaces (or creates) `url` with `bytes`. With `sync: false` the rename is still
    /// atomic (a killed process leaves old or new), but a power cut may lose the new content:
    /// for caches that are fetched again when missing or invalid.
    public static func replace(_ url: URL, with bytes: [UInt8], mode: mode_t = 0o644, sync: Bool = true) throws(Failure) {
        let temporary = try writeTemporary(bytes, beside: url, mode: mode, sync: sync)
        guard rename(temporary.path, url.path) == 0 else { throw failure("cannot write \(url.path)", removing: temporary) }
        if sync { syncDirectory(of: url) }
    }

    /// Creates `url` with `bytes`, refusing to replace an existing file (link(2) fails
    /// where rename(2) would overwrite): for secrets that must never be clobbered.
    public static func create(_ url: URL, with bytes: [UInt8], mode: mode_t = 0o600) throws(Failure) {
        let temporary = try writeTemporary(bytes, beside: url, mode: mode)
        guard link(temporary.path, url.path) == 0 else { throw failure("cannot create \(url.path)", removing: temporary) }
        unlink(temporary.path)
        syncDirectory(of: url)
    }

    private static func writeTemporary(_ bytes: [UInt8], beside url: URL, mode: mode_t, sync: Bool = true) throws(Failure) -> URL {
        let directory = url.deletingLastPathComponent()
        let temporary = directory.appendingPathComponent(".\(url.lastPathComponent).\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp")
        let fd = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard fd >= 0 else { throw Failure(message: "cannot write in \(directory.path): \(String(cString: strerror(errno)))") }
        let written = bytes.withUnsafeBytes { raw -> Bool in
            var offset = 0
            while offset < raw.count {
                let n = write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n <= 0 { return false }
                offset += n
            }
            return !sync || fsync(fd) == 0
        }
        close(fd)
        guard written else { throw failure("cannot write \(url.path)", removing: temporary) }
        return temporary
    }

    private static func failure(_ what: String, removing temporary: URL) -> Failure {
        let reason = String(cString: strerror(errno))
        unlink(temporary.path)
        return Failure(message: "\(what): \(reason)")
    }

    private static func syncDirectory(of url: URL) { sync(directory: url.deletingLastPathComponent()) }

    /// fsyncs a directory, so a rename or unlink in it survives a power cut.
    public static func sync(directory: URL) {
        let fd = open(directory.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd >= 0 {
            fsync(fd)
            close(fd)
        }
    }
}
