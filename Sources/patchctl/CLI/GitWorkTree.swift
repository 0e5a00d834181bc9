import Foundation

/// Whether a directory would be committed with an app's repository: `apps create` writes the
/// root key there, and a key in git history cannot be taken back.
enum GitWorkTree {
    /// The work tree holding `directory` (it, or its nearest existing parent), when git would
    /// track files there: nil outside any work tree, or when git ignores the path
    /// (`git check-ignore`; without git on PATH, a work tree counts as tracking).
    static func tracking(_ directory: URL) -> URL? {
        var candidate = directory.standardizedFileURL
        while !FileManager.default.fileExists(atPath: candidate.path), candidate.path != "/" { candidate.deleteLastPathComponent() }
        var root = candidate
        while !FileManager.default.fileExists(atPath: root.appendingPathComponent(".git").path) {
            guard root.path != "/" else { return nil }
            root.deleteLastPathComponent()
        }
        guard let git = ["/usr/bin/git", "/usr/local/bin/git", "/bin/git"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else { return root }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: git)
        process.arguments = ["-C", root.path, "check-ignore", "-q", directory.standardizedFileURL.path + "/root.pem"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return root }
        process.waitUntilExit()
        // 0: ignored; 1: not ignored; anything else (not a repository after all): say nothing.
        return process.terminationStatus == 1 ? root : nil
    }
}
