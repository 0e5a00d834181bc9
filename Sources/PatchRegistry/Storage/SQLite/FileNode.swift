import Foundation

/// Which file a path names: device and inode (`FileIdentity` adds size and time, to tell a
/// key file rewritten in place). A path names the same file at two moments exactly when these
/// are equal; a file deleted, or replaced by another moved over it (`mv`, a restore), gives
/// another node or none.
struct FileNode: Equatable, CustomStringConvertible {
    let device: UInt64
    let inode: UInt64

    /// The file at `path` now; nil when there is none.
    init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }

    /// `803-1a2b`: how the registry names its file in markers it leaves (`DataDirectory.identity`).
    var description: String { "\(String(device, radix: 16))-\(String(inode, radix: 16))" }
}
