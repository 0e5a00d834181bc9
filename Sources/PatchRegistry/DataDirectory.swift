import Foundation
import Locking

/// The registry's data directory: `registry.sqlite` and SQLite's `-wal`/`-shm` beside it hold
/// every token hash, the audit log and every bundle, so they are created 0600 in a 0700
/// directory (`SQLiteStore` makes the file private before SQLite opens it). A directory or file
/// that others can read (made by an older hotpatch, or by hand) is not changed behind the
/// operator's back; it is reported once per process on stderr, with the command that fixes it.
enum DataDirectory {
    static let files = ["registry.sqlite", "registry.sqlite-wal", "registry.sqlite-shm"]

    private static let warned = Locked<Set<String>>([])

    /// What is open to others, as one line per problem; empty when all is private.
    static func exposures(of directory: URL) -> [String] {
        var problems: [String] = []
        var info = stat()
        if stat(directory.path, &info) == 0, info.st_mode & 0o007 != 0 {
            problems.append("the data directory \(directory.path) is open to other users (mode \(String(info.st_mode & 0o777, radix: 8))): chmod 700 \(directory.path)")
        }
        for name in files {
            let path = directory.appendingPathComponent(name).path
            if stat(path, &info) == 0, info.st_mode & 0o077 != 0 {
                problems.append("\(path) is readable by group or others (mode \(String(info.st_mode & 0o777, radix: 8))): chmod 600 \(path)")
            }
        }
        return problems
    }

    /// Writes the exposures of `directory` to stderr, the first time it is opened in this
    /// process (patchd and the tests open a registry many times); true when it wrote.
    @discardableResult
    static func warnIfExposed(_ directory: URL) -> Bool {
        let problems = exposures(of: directory)
        guard !problems.isEmpty, warned.withLock({ $0.insert(directory.standardizedFileURL.path).inserted }) else { return false }
        // Prefixed like the binaries' own messages ("patchctl: …", "patchd: …").
        let program = ProcessInfo.processInfo.processName
        let text = problems.map { "\(program): warning: \($0) (it holds token hashes, the audit log and every bundle)\n" }.joined()
        FileHandle.standardError.write(Data(text.utf8))
        return true
    }

    /// Names this registry file (device and inode), so that files it leaves in a key
    /// directory shared with another registry are never taken for that registry's.
    static func identity(of file: URL) -> String {
        FileNode(path: file.path)?.description ?? "unknown"
    }
}
