import Foundation
import PatchCore

/// What the client remembers per app version, in `state.json`. Written atomically (temp
/// file, fsync, rename) after the files it names are in place, so a kill at any point
/// leaves either the previous state or the new one.
struct ClientState: Codable, Equatable {
    struct Patch: Codable, Equatable {
        var number: Int
        var sha256: String
        var confirmed: Bool
        var launches: Int
        /// The server's receipt for this patch and device (`X-Patch-Receipt`), put on every
        /// report about it; nil in a state written before receipts, or from a server without.
        var receipt: String?
    }

    /// The unconfirmed patch the last `beginLaunch()` returned, and its foreground time so far.
    struct Launch: Codable, Equatable {
        var number: Int
        var sha256: String
        /// Seconds in the foreground before the current stretch.
        var foreground: Double
        /// When the current foreground stretch began; nil while in the background.
        var foregroundSince: Double?
    }

    /// Why the last sync failed (nil once one succeeds).
    struct Failure: Codable, Equatable {
        var at: Double
        var code: String
        var message: String
    }

    /// When the last network check was made (seconds since 1970).
    var lastCheck: Double?
    /// A server's Retry-After, as an absolute time.
    var retryAfter: Double?
    /// Whether that Retry-After was the device's own check interval (`X-Throttle-Scope:
    /// device`): a forced sync goes through it, since a revoke lifts it on the server.
    var retryAfterDeviceScoped: Bool?
    /// The patch in `main.js`.
    var installed: Patch?
    /// The last confirmed patch, kept in `good.js` for rollbacks.
    var good: Patch?
    /// A patch being written: lets a restart finish an install cut short between the rename
    /// of main.js and this file.
    var installing: Patch?
    /// Patches rolled back after unconfirmed launches are not retried; only a newer number is.
    var rolledBackThrough: Int = 0
    var launch: Launch?
    var lastError: Failure?
}

/// File operations of the cache: atomic writes and reads, with storage errors typed. By path:
/// URL's path operations cost thousands of instructions on Linux, and a sync does several
/// (issue 23); the URL forms are for callers that hold URLs.
enum CacheFiles {
    static func read(_ url: URL) -> [UInt8]? { read(atPath: url.path) }

    static func read(atPath path: String) -> [UInt8]? { FileContents.read(atPath: path) }

    /// `sync: false` for the metadata cache: a file lost to a power cut is fetched again, and
    /// one that no longer verifies is dropped, so fsync there only costs time.
    static func write(_ bytes: [UInt8], to url: URL, sync: Bool = true) throws(PatchClientError) {
        try write(bytes, toPath: url.path, sync: sync)
    }

    static func write(_ bytes: [UInt8], toPath path: String, sync: Bool = true, syncDirectory: Bool = true) throws(PatchClientError) {
        do {
            try DurableFile.replace(atPath: path, with: bytes, mode: 0o600, sync: sync, syncDirectory: syncDirectory, makingDirectory: true)
        } catch {
            throw .storage(error.message)
        }
    }

    static func remove(_ url: URL) { unlink(url.path) }

    static func remove(atPath path: String) { unlink(path) }

    /// state.json, with `lastCheck` from `last-check` beside it when that file is there.
    static func loadState(_ url: URL) -> ClientState { loadState(atPath: url.path) }

    static func loadState(atPath path: String) -> ClientState {
        guard let bytes = read(atPath: path), var state = StateCoding.decode(bytes) else { return ClientState() }
        if let check = loadCheck(checkPath(besideState: path)) { state.lastCheck = check }
        return state
    }

    /// Durable (fsync, rename, directory fsync). The saved state holds the current
    /// `lastCheck`, so `last-check` is then removed.
    static func saveState(_ state: ClientState, to url: URL) throws(PatchClientError) { try saveState(state, toPath: url.path) }

    static func saveState(_ state: ClientState, toPath path: String) throws(PatchClientError) {
        try write(try StateCoding.encode(state), toPath: path)
        unlink(checkPath(besideState: path))
    }

    /// A check that changed nothing else (issue 23): its time goes to `last-check`, a few
    /// bytes renamed into place without fsync, and state.json is not rewritten. Losing the
    /// file to a power cut only loses the time of the last check (the next sync asks the
    /// server sooner); what must survive one (the installed, good and rolled-back patches)
    /// stays in state.json, written durably whenever it changes.
    static func saveCheck(_ time: Double, besideState statePath: String) throws(PatchClientError) {
        try write(Array("\(time)\n".utf8), toPath: checkPath(besideState: statePath), sync: false)
    }

    /// `last-check` in state.json's directory.
    static func checkPath(beside stateURL: URL) -> String { checkPath(besideState: stateURL.path) }

    static func checkPath(besideState path: String) -> String {
        // In UTF-8 bytes: `String.lastIndex(of:)` walks grapheme clusters.
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return "last-check" }
        return path[...slash] + "last-check"
    }

    /// The installation's `X-Device-Secret` at `path` (`{cache}/{app}/device-secret`), made
    /// the first time: 256 random bits, written whole and fsynced under a temporary name, then
    /// linked into place, which refuses to replace a file there. So two clients of one install
    /// (two app versions, two processes) that both find none agree on the first one linked;
    /// the loser reads the winner's. A file that does not hold a secret (edited, or from
    /// something else) is replaced. Kept for every app version: an app update is the same
    /// installation and keeps its slot.
    static func deviceSecret(atPath path: String) throws(PatchClientError) -> DeviceSecret {
        if let kept = loadSecret(path) { return kept }
        let made = DeviceSecret.generate()
        let bytes = Array((made.rawValue + "\n").utf8)
        do {
            try DurableFile.makeDirectories(atPath: DurableFile.directory(of: path))
            try DurableFile.create(URL(fileURLWithPath: path, isDirectory: false), with: bytes, mode: 0o600)
            return made
        } catch {
            if let kept = loadSecret(path) { return kept }
            guard access(path, F_OK) == 0 else { throw .storage(error.message) }
        }
        do { try DurableFile.replace(atPath: path, with: bytes, mode: 0o600) } catch { throw .storage(error.message) }
        return made
    }

    /// The secret in the file at `path`, nil when it is missing or does not hold one.
    private static func loadSecret(_ path: String) -> DeviceSecret? {
        guard let bytes = FileContents.read(atPath: path, limit: 256) else { return nil }
        var text = Substring(String(decoding: bytes, as: UTF8.self))
        if text.last == "\n" { text.removeLast() }
        return try? DeviceSecret(String(text))
    }

    /// The time in `last-check`; nil when missing or not a finite number (then state.json's counts).
    static func loadCheck(_ path: String) -> Double? {
        guard let bytes = FileContents.read(atPath: path, limit: 64) else { return nil }
        var text = Substring(String(decoding: bytes, as: UTF8.self))
        while let last = text.last, last.isWhitespace { text.removeLast() }
        while let first = text.first, first.isWhitespace { text.removeFirst() }
        guard let time = Double(text), time.isFinite else { return nil }
        return time
    }
}
