import Foundation
import PatchCore

/// Launch confirmation (docs/PROTOCOL.md, "Launch confirmation"): the app names the patch it
/// confirms, so a confirm is never credited to a patch the app did not run (a patch a sync
/// installed while the previous one was running — capacitor-updater issue 907); a launch not
/// confirmed within `confirmationTimeout` seconds in the foreground, or `maxUnconfirmedLaunches`
/// launches, is rolled back.
extension PatchClient {
    /// The verified script to evaluate, if any. Reading it re-checks its SHA-256, so a file
    /// changed on disk is not run.
    public func currentPatch() -> InstalledPatch? {
        files.withLock { files in
            var state = files.loadState()
            return files.reconcile(&state)
        }
    }

    /// Call once per app launch, before evaluating the patch: counts the launch, rolls an
    /// unconfirmed patch back when it has had its launches (or its previous launch ran out its
    /// foreground time), and returns what to run. Pass what it returns to `confirmLaunch(_:)`.
    @discardableResult
    public func beginLaunch(now: Date = Date()) -> InstalledPatch? {
        files.withLock { files in
            var state = files.loadState()
            let previous = state.launch
            guard files.reconcile(&state) != nil, var installed = state.installed, !installed.confirmed else {
                if state.launch != nil {
                    state.launch = nil
                    try? files.saveState(state)
                }
                return files.reconcile(&state)
            }
            let expired = previous.map { $0.number == installed.number && $0.sha256 == installed.sha256 && timedOut($0, now: now) } ?? false
            if expired || installed.launches >= configuration.maxUnconfirmedLaunches {
                rollBack(&state, in: files, now: now)
                state.launch = nil
            } else {
                installed.launches += 1
                state.installed = installed
                state.launch = ClientState.Launch(number: installed.number, sha256: installed.sha256, foreground: 0, foregroundSince: now.timeIntervalSince1970)
                record(.launched, patch: installed.number, receipt: installed.receipt, now: now)
            }
            try? files.saveState(state)
            return files.reconcile(&state)
        }
    }

    /// Call after the patched app ran fine, with the patch `beginLaunch()` returned: it
    /// becomes the one to fall back to. Refused (false) when `patch` is not the patch this
    /// launch runs — not the one `beginLaunch()` returned, or no longer the installed one — or
    /// when the launch already ran out its foreground time.
    @discardableResult
    public func confirmLaunch(_ patch: InstalledPatch, now: Date = Date()) -> Bool {
        confirm(number: patch.number, sha256: patch.sha256, now: now)
    }

    /// Confirms the patch the last `beginLaunch()` returned, if it is still installed; never
    /// the one a sync installed since (that one has not run). Prefer `confirmLaunch(_:)`,
    /// which also says whether the confirm was taken.
    public func confirmLaunch() {
        let launched = lockedState().launch
        guard let launched else { return }
        _ = confirm(number: launched.number, sha256: launched.sha256, now: Date())
    }

    /// The app left the foreground: the running launch's foreground time stops counting.
    public func didEnterBackground(now: Date = Date()) {
        changeLaunch { launch in
            guard let since = launch.foregroundSince else { return }
            launch.foreground += max(0, now.timeIntervalSince1970 - since)
            launch.foregroundSince = nil
        }
    }

    /// The app is back in the foreground: the running launch's foreground time counts again.
    public func willEnterForeground(now: Date = Date()) {
        changeLaunch { launch in
            if launch.foregroundSince == nil { launch.foregroundSince = now.timeIntervalSince1970 }
        }
    }

    private func confirm(number: Int, sha256: String, now: Date) -> Bool {
        files.withLock { files in
            var state = files.loadState()
            guard files.reconcile(&state) != nil, var installed = state.installed, installed.number == number, installed.sha256 == sha256 else { return false }
            if installed.confirmed { return true }
            guard let launch = state.launch, launch.number == number, launch.sha256 == sha256, !timedOut(launch, now: now),
                let script = CacheFiles.read(atPath: files.paths.scriptPath) else { return false }
            installed.confirmed = true
            do {
                try CacheFiles.write(script, toPath: files.paths.goodScriptPath)
                state.installed = installed
                state.good = installed
                state.launch = nil
                try files.saveState(state)
            } catch {
                // Unconfirmed stays unconfirmed; the next confirm tries again.
                return false
            }
            record(.confirmed, patch: number, receipt: installed.receipt, now: now)
            return true
        }
    }

    /// Whether `launch` has had its foreground time; a launch still in the foreground counts
    /// up to `now` (a process killed in the foreground counts up to the next launch).
    private func timedOut(_ launch: ClientState.Launch, now: Date) -> Bool {
        guard let limit = configuration.confirmationTimeout else { return false }
        let running = launch.foregroundSince.map { max(0, now.timeIntervalSince1970 - $0) } ?? 0
        return launch.foreground + running >= limit
    }

    private func changeLaunch(_ change: (inout ClientState.Launch) -> Void) {
        files.withLock { files in
            var state = files.loadState()
            guard var launch = state.launch else { return }
            change(&launch)
            guard launch != state.launch else { return }
            state.launch = launch
            try? files.saveState(state)
        }
    }

    /// Restores the last confirmed patch (or none) and blocks the rolled-back number. Called
    /// inside the files' lock, with the `files` it handed out.
    private func rollBack(_ state: inout ClientState, in files: VersionFiles, now: Date) {
        guard let bad = state.installed else { return }
        state.rolledBackThrough = max(state.rolledBackThrough, bad.number)
        if let good = state.good, let bytes = CacheFiles.read(atPath: files.paths.goodScriptPath), Verification.crypto.sha256Hex(bytes) == good.sha256,
            (try? CacheFiles.write(bytes, toPath: files.paths.scriptPath)) != nil {
            state.installed = good
        } else {
            CacheFiles.remove(atPath: files.paths.scriptPath)
            state.installed = nil
        }
        record(.rolledBack, patch: bad.number, receipt: bad.receipt, now: now)
    }
}
