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

/// File operations of the cache: atomic writes and reads, with storage errors typed.
enum CacheFiles {
    static func read(_ url: URL) -> [UInt8]? {
        FileManager.default.contents(atPath: url.path).map { Array($0) }
    }

    /// `sync: false` for the metadata cache: a file lost to a power cut is fetched again, and
    /// one that no longer verifies is dropped, so fsync there only costs time.
    static func write(_ bytes: [UInt8], to url: URL, sync: Bool = true) throws(PatchClientError) {
        let directory = url.deletingLastPathComponent()
        do { try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true) } catch {
            throw .storage("cannot create \(directory.path): \(error.localizedDescription)")
        }
        do { try DurableFile.replace(url, with: bytes, mode: 0o600, sync: sync) } catch { throw .storage(error.message) }
    }

    static func remove(_ url: URL) {
        unlink(url.path)
    }

    /// state.json, with `lastCheck` from `last-check` beside it when that file is there.
    static func loadState(_ url: URL) -> ClientState {
        guard let bytes = read(url), var state = try? JSONDecoder().decode(ClientState.self, from: Data(bytes)) else { return ClientState() }
        if let check = loadCheck(checkPath(beside: url)) { state.lastCheck = check }
        return state
    }

    /// Durable (fsync, rename, directory fsync). The saved state holds the current
    /// `lastCheck`, so `last-check` is then removed.
    static func saveState(_ state: ClientState, to url: URL) throws(PatchClientError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data: Data
        do { data = try encoder.encode(state) } catch { throw .storage("cannot encode state: \(error)") }
        try write(Array(data), to: url)
        unlink(checkPath(beside: url))
    }

    /// A check that changed nothing else (issue 23): its time goes to `last-check`, a few
    /// bytes renamed into place without fsync, and state.json is not rewritten. Losing the
    /// file to a power cut only loses the time of the last check (the next sync asks the
    /// server sooner); what must survive one (the installed, good and rolled-back patches)
    /// stays in state.json, written durably whenever it changes.
    static func saveCheck(_ time: Double, beside stateURL: URL) throws(PatchClientError) {
        try write(Array("\(time)\n".utf8), to: URL(fileURLWithPath: checkPath(beside: stateURL)), sync: false)
    }

    /// `last-check` in state.json's directory (a string operation: URL's path operations cost
    /// thousands of instructions on Linux, and every state read needs this).
    static func checkPath(beside stateURL: URL) -> String {
        let path = stateURL.path
        guard let slash = path.lastIndex(of: "/") else { return "last-check" }
        return path[...slash] + "last-check"
    }

    /// The time in `last-check`; nil when missing or not a finite number (then state.json's counts).
    static func loadCheck(_ path: String) -> Double? {
        guard let bytes = FileManager.default.contents(atPath: path).map(Array.init), bytes.count <= 64,
              let time = Double(String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)), time.isFinite else { return nil }
        return time
    }
}
