import Foundation
import Locking

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
        try replace(atPath: url.path, with: bytes, mode: mode, sync: sync)
    }

    /// `replace` by path: the names are joined as strings (URL's path operations cost
    /// thousands of instructions on Linux, and a client sync writes a file or two; issue 23).
    /// `syncDirectory: false` fsyncs the contents but leaves the rename to the caller's next
    /// fsync of the same directory (a file written just before the record that names it: one
    /// directory fsync makes both durable).
    /// `makingDirectory`: the file's directory (and its parents) is created when missing,
    /// found by the temporary file's open failing, so a write where it is there (every
    /// cache write but the first) costs no access(2) for it.
    public static func replace(atPath path: String, with bytes: [UInt8], mode: mode_t = 0o644, sync: Bool = true,
                               syncDirectory: Bool = true, makingDirectory: Bool = false) throws(Failure) {
        let temporary = try writeTemporary(bytes, beside: path, mode: mode, sync: sync, makingDirectory: makingDirectory)
        guard rename(temporary, path) == 0 else { throw failure("cannot write \(path)", removing: temporary) }
        if sync, syncDirectory { DurableFile.sync(directoryPath: directory(of: path)) }
    }

    /// Creates `url` with `bytes`, refusing to replace an existing file (link(2) fails
    /// where rename(2) would overwrite): for secrets that must never be clobbered.
    public static func create(_ url: URL, with bytes: [UInt8], mode: mode_t = 0o600) throws(Failure) {
        let path = url.path
        let temporary = try writeTemporary(bytes, beside: path, mode: mode)
        guard link(temporary, path) == 0 else { throw failure("cannot create \(path)", removing: temporary) }
        unlink(temporary)
        sync(directoryPath: directory(of: path))
    }

    /// Creates the directory `path` and whichever of its parents are missing (mode 0777
    /// less the umask, as FileManager's `withIntermediateDirectories` does). mkdir(2) first,
    /// climbing only on ENOENT: FileManager stats every component from the top and cost about
    /// a twentieth of a cold client sync (issue 23). A directory that is already there is fine.
    public static func makeDirectories(atPath path: String) throws(Failure) {
        var path = path
        while path.utf8.count > 1, path.utf8.last == UInt8(ascii: "/") { path.removeLast() }
        if mkdir(path, 0o777) == 0 || errno == EEXIST { return }
        let parent = directory(of: path)
        guard errno == ENOENT, parent != path, parent != "." else {
            throw Failure(message: "cannot create \(path): \(String(cString: strerror(errno)))")
        }
        try makeDirectories(atPath: parent)
        guard mkdir(path, 0o777) == 0 || errno == EEXIST else {
            throw Failure(message: "cannot create \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// The directory part of `path` ("." for a bare name).
    public static func directory(of path: String) -> String { split(path).directory }

    /// `path`'s directory ("." for a bare name) and last component, found in its UTF-8 bytes:
    /// `String.lastIndex(of:)` walks grapheme clusters, ~80 k instructions a cold client sync.
    static func split(_ path: String) -> (directory: String, name: String) {
        let utf8 = path.utf8
        guard let slash = utf8.lastIndex(of: UInt8(ascii: "/")) else { return (".", path) }
        let name = String(path[utf8.index(after: slash)...])
        return (slash == utf8.startIndex ? "/" : String(path[..<slash]), name)
    }

    /// What makes this process's temporary names its own: its pid and a random number, read
    /// once (a getpid and a getrandom per write were two system calls of each), then a count.
    private static let temporaryPrefix = "\(getpid()).\(UInt32.random(in: 0...UInt32.max))"
    private static let temporaryCount = TemporaryCount()

    /// A count under a lock (PatchCore also builds for iOS 15, before `Atomic`).
    private final class TemporaryCount: Sendable {
        private let value = Locked<UInt64>(0)

        func next() -> UInt64 {
            value.withLock { value in
                value &+= 1
                return value
            }
        }

        var current: UInt64 { value.withLock { $0 } }
    }

    /// The temporary file for `name` in `directory` with the process's `count`-th number.
    static func temporaryPath(directory: String, name: String, count: UInt64) -> String {
        directory + "/.\(name).\(temporaryPrefix).\(count).tmp"
    }

    /// The last count given out (tests take the names after it).
    static func temporaryCountForTests() -> UInt64 { temporaryCount.current }

    private static func writeTemporary(_ bytes: [UInt8], beside path: String, mode: mode_t, sync: Bool = true,
                                       makingDirectory: Bool = false) throws(Failure) -> String {
        let (directory, name) = split(path)
        var temporary = "", fd: Int32 = -1, madeDirectory = false
        // A name taken (a forked child shares the prefix; a crash left a file): the next count.
        for _ in 0..<8 {
            temporary = temporaryPath(directory: directory, name: name, count: temporaryCount.next())
            fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
            if fd >= 0 { break }
            if errno == ENOENT, makingDirectory, !madeDirectory {
                try makeDirectories(atPath: directory)
                madeDirectory = true
            } else if errno != EEXIST {
                break
            }
        }
        guard fd >= 0 else { throw Failure(message: "cannot write in \(directory): \(String(cString: strerror(errno)))") }
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
        guard written else { throw failure("cannot write \(path)", removing: temporary) }
        return temporary
    }

    private static func failure(_ what: String, removing temporary: String) -> Failure {
        let reason = String(cString: strerror(errno))
        unlink(temporary)
        return Failure(message: "\(what): \(reason)")
    }

    /// fsyncs a directory, so a rename or unlink in it survives a power cut.
    public static func sync(directory: URL) { sync(directoryPath: directory.path) }

    static func sync(directoryPath: String) {
        let fd = open(directoryPath, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd >= 0 {
            fsync(fd)
            close(fd)
        }
    }
}
