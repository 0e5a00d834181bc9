import Foundation
import PatchCore

/// One app version's cache files — state.json (and `last-check` beside it), main.js and
/// good.js — and the changes made to them, each a read, a change and a save that must not
/// interleave with another. A client reaches them only inside its `files` lock
/// (`PatchClient.files`): a sync installs while the app's launch calls come from any thread.
struct VersionFiles: Sendable {
    let paths: ClientPaths

    func loadState() -> ClientState { CacheFiles.loadState(atPath: paths.statePath) }

    func saveState(_ state: ClientState) throws(PatchClientError) { try CacheFiles.saveState(state, toPath: paths.statePath) }

    /// A check that changed nothing else: `last-check` alone (`CacheFiles.saveCheck`).
    func saveCheck(_ time: Double) throws(PatchClientError) { try CacheFiles.saveCheck(time, besideState: paths.statePath) }

    /// The state names the patch being installed before main.js is replaced, and the patch
    /// installed after: `reconcile` finishes an install a kill cut short in between.
    func install(_ plaintext: [UInt8], as patch: ClientState.Patch, now: Date) throws(PatchClientError) {
        var state = loadState()
        state.installing = patch
        try saveState(state)
        // The script's contents are fsynced before its rename; the rename itself is made
        // durable by the state save below, which fsyncs the same directory. A power cut before
        // that leaves `installing` set, and `reconcile` keeps the new patch only when the
        // script on disk has its digest (one directory fsync fewer per install; issue 23).
        try CacheFiles.write(plaintext, toPath: paths.scriptPath, syncDirectory: false)
        state.installing = nil
        state.installed = patch
        state.lastCheck = now.timeIntervalSince1970
        state.retryAfter = nil
        try saveState(state)
    }

    /// No patch for this version any more: the installed and the good one go.
    func removePatches(now: Date) throws(PatchClientError) {
        var state = loadState()
        state.installed = nil
        state.good = nil
        state.lastCheck = now.timeIntervalSince1970
        state.retryAfter = nil
        try saveState(state)
        CacheFiles.remove(atPath: paths.scriptPath)
        CacheFiles.remove(atPath: paths.goodScriptPath)
    }

    /// Brings state and files into agreement after a crash, and returns the installed
    /// patch only if main.js really holds it.
    func reconcile(_ state: inout ClientState) -> InstalledPatch? {
        let bytes = CacheFiles.read(atPath: paths.scriptPath)
        let digest = bytes.map { Verification.crypto.sha256Hex($0) }
        if let installing = state.installing {
            // Cut short between renaming main.js and saving the state: finish or forget.
            if digest == installing.sha256 { state.installed = installing }
            state.installing = nil
            try? saveState(state)
        }
        guard let installed = state.installed, digest == installed.sha256 else { return nil }
        return InstalledPatch(number: installed.number, path: paths.scriptURL, sha256: installed.sha256, confirmed: installed.confirmed)
    }

    /// `clearCache`: the version's directory and the app's trusted metadata (which the
    /// updater reads only during a sync, and `clearCache` waits for the one under way).
    func removeAll() throws(PatchClientError) {
        for directory in [paths.versionDirectory, paths.metadataDirectory] {
            guard FileManager.default.fileExists(atPath: directory.path) else { continue }
            do { try FileManager.default.removeItem(at: directory) } catch {
                throw .storage("cannot remove \(directory.path): \(error.localizedDescription)")
            }
        }
    }
}
