import Foundation
import PatchCore

/// Downloads, verifies and decrypts the patch for one app version into a cache directory,
/// following the TUF client workflow from the root the app pins. It never leaves the app
/// without a working patch state: every failure keeps what was installed, and every write
/// is atomic.
///
/// At launch call `beginLaunch()` to get the script to evaluate; once the patched app has
/// run fine call `confirmLaunch()`. A new patch not confirmed within
/// `maxUnconfirmedLaunches` launches is rolled back to the last confirmed one and not
/// retried until a newer patch number is published.
public actor PatchClient {
    public nonisolated let configuration: ClientConfiguration
    private nonisolated let fetcher: HTTPFetcher
    /// Guards state.json and the script files; launch calls come from any thread.
    private nonisolated let files = NSLock()

    public init(configuration: ClientConfiguration) {
        self.configuration = configuration
        self.fetcher = HTTPFetcher(requestTimeout: configuration.requestTimeout, resourceTimeout: configuration.syncTimeout)
    }

    // MARK: Launch

    /// The verified script to evaluate, if any. Reading it re-checks its SHA-256, so a file
    /// changed on disk is not run.
    public nonisolated func currentPatch() -> InstalledPatch? {
        files.lock()
        defer { files.unlock() }
        var state = CacheFiles.loadState(configuration.stateURL)
        return reconcile(&state)
    }

    /// Call once per app launch, before evaluating the patch: counts the launch, rolls an
    /// unconfirmed patch back when it has had its launches, and returns what to run.
    @discardableResult
    public nonisolated func beginLaunch() -> InstalledPatch? {
        files.lock()
        defer { files.unlock() }
        var state = CacheFiles.loadState(configuration.stateURL)
        guard reconcile(&state) != nil, var installed = state.installed, !installed.confirmed else { return reconcile(&state) }
        if installed.launches >= configuration.maxUnconfirmedLaunches {
            rollBack(&state)
        } else {
            installed.launches += 1
            state.installed = installed
        }
        try? CacheFiles.saveState(state, to: configuration.stateURL)
        return reconcile(&state)
    }

    /// Call after the patched app ran fine: the patch becomes the one to fall back to.
    public nonisolated func confirmLaunch() {
        files.lock()
        defer { files.unlock() }
        var state = CacheFiles.loadState(configuration.stateURL)
        guard reconcile(&state) != nil, var installed = state.installed, !installed.confirmed,
            let script = CacheFiles.read(configuration.scriptURL) else { return }
        installed.confirmed = true
        do {
            try CacheFiles.write(script, to: configuration.goodScriptURL)
            state.installed = installed
            state.good = installed
            try CacheFiles.saveState(state, to: configuration.stateURL)
        } catch {
            // Unconfirmed stays unconfirmed; the next confirm tries again.
        }
    }

    /// Restores the last confirmed patch (or none) and blocks the rolled-back number.
    private nonisolated func rollBack(_ state: inout ClientState) {
        guard let bad = state.installed else { return }
        state.rolledBackThrough = max(state.rolledBackThrough, bad.number)
        if let good = state.good, let bytes = CacheFiles.read(configuration.goodScriptURL), Digest.sha256Hex(bytes) == good.sha256,
            (try? CacheFiles.write(bytes, to: configuration.scriptURL)) != nil {
            state.installed = good
        } else {
            CacheFiles.remove(configuration.scriptURL)
            state.installed = nil
        }
    }

    /// Brings state and files into agreement after a crash, and returns the installed
    /// patch only if main.js really holds it.
    private nonisolated func reconcile(_ state: inout ClientState) -> InstalledPatch? {
        let bytes = CacheFiles.read(configuration.scriptURL)
        let digest = bytes.map { Digest.sha256Hex($0) }
        if let installing = state.installing {
            // Cut short between renaming main.js and saving the state: finish or forget.
            if digest == installing.sha256 { state.installed = installing }
            state.installing = nil
            try? CacheFiles.saveState(state, to: configuration.stateURL)
        }
        guard let installed = state.installed, digest == installed.sha256 else { return nil }
        return InstalledPatch(number: installed.number, path: configuration.scriptURL, sha256: installed.sha256, confirmed: installed.confirmed)
    }

    // MARK: Sync

    /// Checks for a new patch unless the last check is younger than the minimum interval
    /// (`force` skips that, never a server's Retry-After). Never throws: failures are the
    /// `.failed` outcome, with the installed patch untouched.
    public func sync(force: Bool = false, now: Date = Date()) async -> SyncOutcome {
        // The whole sync runs against one deadline (a slow-retrieval server cannot hold the
        // client past it, however it paces its bytes); the first of the two to finish wins.
        let deadline = configuration.syncTimeout
        return await withTaskGroup(of: SyncOutcome.self) { group in
            group.addTask {
                do throws(PatchClientError) { return try await self.performSync(force: force, now: now) } catch { return .failed(error) }
            }
            group.addTask {
                try? await Task.sleep(nanoseconds: UInt64(max(0, deadline) * 1e9))
                return .failed(.timeout)
            }
            let first = await group.next() ?? .failed(.timeout)
            group.cancelAll()
            return first
        }
    }

    /// `sync` for synchronous callers (command-line tools): blocks the calling thread, which
    /// must not be one of Swift concurrency's own.
    public nonisolated func syncBlocking(force: Bool = false) -> SyncOutcome {
        let outcome = BlockingResult()
        Task {
            outcome.finish(await self.sync(force: force))
        }
        return outcome.wait()
    }

    private func performSync(force: Bool, now: Date) async throws(PatchClientError) -> SyncOutcome {
        let state = lockedState()
        if let retry = state.retryAfter, retry > now.timeIntervalSince1970 {
            return .throttled(until: Date(timeIntervalSince1970: retry))
        }
        if !force, let last = state.lastCheck, now.timeIntervalSince1970 - last < configuration.minimumInterval {
            return .throttled(until: Date(timeIntervalSince1970: last + configuration.minimumInterval))
        }
        let refreshed = try await refreshMetadata(now: now)
        guard case .fresh(let targets) = refreshed else {
            if case .throttled(let until) = refreshed {
                try updateState { $0.retryAfter = until.timeIntervalSince1970; $0.lastCheck = now.timeIntervalSince1970 }
                return .throttled(until: until)
            }
            return .failed(.network("unreachable"))
        }
        return try await apply(targets, now: now)
    }

    private enum Refreshed {
        case fresh(TargetsBody)
        case throttled(until: Date)
    }

    /// Spec 5.3–5.6: root chain, timestamp, snapshot, targets; each accepted file persisted.
    private func refreshMetadata(now: Date) async throws(PatchClientError) -> Refreshed {
        let cache = configuration.metadataDirectory
        let pinned = configuration.trustedRoot
        var rootBytes = pinned
        if let cached = CacheFiles.read(cache.appendingPathComponent("root.json")),
            let cachedVersion = try? SignedRoot(bytes: cached).body.version,
            let pinnedVersion = try? SignedRoot(bytes: pinned).body.version, cachedVersion >= pinnedVersion {
            rootBytes = cached
        }
        var trusted: TrustedMetadata
        do { trusted = try TrustedMetadata(trustedRoot: rootBytes, referenceTime: now) } catch { throw .verification(error) }

        for _ in 0..<configuration.maxRootRotations {
            let next = trusted.root.body.version + 1
            let response = try await fetchMetadata("\(next).root.json", limit: configuration.maxRootSize)
            if response.status == 404 || response.status == 403 { break }
            guard response.status == 200 else { throw .server(status: response.status, url: "\(next).root.json") }
            do { try trusted.updateRoot(response.body) } catch { throw .verification(error) }
            rootBytes = response.body
            try CacheFiles.write(response.body, to: cache.appendingPathComponent("root.json"), sync: false)
        }

        // Cached files are re-checked under the (possibly new) root; a file signed by a
        // rotated-out key is dropped and fetched again (spec 5.3.11).
        do {
            trusted = try TrustedMetadata(trustedRoot: rootBytes,
                                          timestamp: CacheFiles.read(cache.appendingPathComponent("timestamp.json")),
                                          snapshot: CacheFiles.read(cache.appendingPathComponent("snapshot.json")),
                                          targets: CacheFiles.read(cache.appendingPathComponent("targets.json")),
                                          referenceTime: now)
        } catch { throw .verification(error) }

        let timestamp = try await fetchMetadata("timestamp.json", limit: configuration.maxTimestampSize,
                                                headers: ["X-Device-ID": configuration.deviceID])
        if timestamp.status == 429 {
            return .throttled(until: retryAfter(timestamp.headers["retry-after"], now: now))
        }
        guard timestamp.status == 200 else { throw .server(status: timestamp.status, url: "timestamp.json") }
        do {
            if try trusted.updateTimestamp(timestamp.body) {
                try CacheFiles.write(timestamp.body, to: cache.appendingPathComponent("timestamp.json"), sync: false)
            }
        } catch let error as TUFError { throw .verification(error) } catch let error as PatchClientError { throw error } catch {
            throw .storage("\(error)")
        }

        let snapshotVersion = trusted.timestamp!.body.snapshot.version
        if trusted.snapshot?.body.version != snapshotVersion {
            let response = try await fetchMetadata("\(snapshotVersion).snapshot.json", limit: trusted.snapshotLengthLimit)
            guard response.status == 200 else { throw .server(status: response.status, url: "\(snapshotVersion).snapshot.json") }
            do { try trusted.updateSnapshot(response.body) } catch { throw .verification(error) }
            try CacheFiles.write(response.body, to: cache.appendingPathComponent("snapshot.json"), sync: false)
        }
        guard let targetsVersion = trusted.snapshot?.body.meta["targets.json"]?.version else {
            throw .verification(.missingRole("targets"))
        }
        if trusted.targets?.body.version != targetsVersion {
            let response = try await fetchMetadata("\(targetsVersion).targets.json", limit: trusted.targetsLengthLimit)
            guard response.status == 200 else { throw .server(status: response.status, url: "\(targetsVersion).targets.json") }
            do { try trusted.updateTargets(response.body) } catch { throw .verification(error) }
            try CacheFiles.write(response.body, to: cache.appendingPathComponent("targets.json"), sync: false)
        }
        // Expiry of cached snapshot/targets kept because nothing changed is still enforced.
        for (role, expires) in [("snapshot", trusted.snapshot!.body.expires), ("targets", trusted.targets!.body.expires)] where expires <= now {
            throw .verification(.expired(role: role, expires: TUFTime.format(expires)))
        }
        return .fresh(trusted.targets!.body)
    }

    /// Picks the patch for this version and device (docs/PROTOCOL.md section 5), and
    /// installs, keeps or removes. The installed patch is kept while targets lists it, even
    /// when a lower number would be picked now (no downgrade); once it is no longer listed
    /// (revoked) the signed targets decide. Patches rolled back on this device are skipped.
    private func apply(_ targets: TargetsBody, now: Date) async throws(PatchClientError) -> SyncOutcome {
        let version = configuration.appVersion.rawValue
        let device = configuration.deviceID
        let app = configuration.app.rawValue
        let state = lockedState()
        var listed: [Int: (info: PatchTargetInfo, file: TargetFile)] = [:]
        for (path, file) in targets.targets {
            guard let info = PatchTargetInfo(path: path, file: file), info.appVersion == version else { continue }
            listed[info.patch] = (info, file)
        }
        let best = listed.values
            .filter { $0.info.patch > state.rolledBackThrough }
            .filter { Rollout.includes(percent: $0.info.rollout, app: app, appVersion: version, patch: $0.info.patch, deviceID: device) }
            .max { $0.info.patch < $1.info.patch }
        let installed = currentPatch()
        // Kept: the installed patch while it is listed, or the good patch a launch rollback
        // restored while the patch rolled back from is still the one listed.
        let kept = installed.flatMap { patch -> InstalledPatch? in
            if listed[patch.number]?.info.plaintext.sha256 == patch.sha256 { return patch }
            if patch.number < state.rolledBackThrough, listed[state.rolledBackThrough] != nil { return patch }
            return nil
        }

        if let kept, (best?.info.patch ?? 0) <= kept.number {
            try updateState { $0.lastCheck = now.timeIntervalSince1970; $0.retryAfter = nil }
            return .unchanged(kept)
        }
        guard let best else {
            if installed != nil || state.good != nil {
                try remove(now: now)
                return .removed
            }
            try updateState { $0.lastCheck = now.timeIntervalSince1970; $0.retryAfter = nil }
            return .unchanged(nil)
        }
        let plaintext = try await download(info: best.info, file: best.file)
        let patch = ClientState.Patch(number: best.info.patch, sha256: best.info.plaintext.sha256, confirmed: false, launches: 0)
        try install(plaintext, as: patch, now: now)
        return .updated(InstalledPatch(number: patch.number, path: configuration.scriptURL, sha256: patch.sha256, confirmed: false))
    }

    /// The state names the patch being installed before main.js is replaced, and the patch
    /// installed after: `reconcile` finishes an install a kill cut short in between.
    private nonisolated func install(_ plaintext: [UInt8], as patch: ClientState.Patch, now: Date) throws(PatchClientError) {
        files.lock()
        defer { files.unlock() }
        var state = CacheFiles.loadState(configuration.stateURL)
        state.installing = patch
        try CacheFiles.saveState(state, to: configuration.stateURL)
        try CacheFiles.write(plaintext, to: configuration.scriptURL)
        state.installing = nil
        state.installed = patch
        state.lastCheck = now.timeIntervalSince1970
        state.retryAfter = nil
        try CacheFiles.saveState(state, to: configuration.stateURL)
    }

    /// Downloads under the sha256 name, checks length and hashes, decrypts, checks the signed plaintext digests.
    private func download(info: PatchTargetInfo, file: TargetFile) async throws(PatchClientError) -> [UInt8] {
        guard file.length <= configuration.maxBundleSize else { throw .tooLarge(what: info.path, limit: configuration.maxBundleSize) }
        guard let hash = file.hashes["sha256"] ?? file.hashes.values.sorted().first else { throw .malformedTarget(info.path) }
        let url = try endpoint("targets/\(info.servedPath(hash: hash))")
        let response = try await fetcher.get(url, limit: file.length)
        guard response.status == 200 else { throw .server(status: response.status, url: url.absoluteString) }
        do { try file.verify(response.body, path: info.path) } catch { throw .verification(error) }
        var plaintext = response.body
        if let encryption = info.encryption {
            guard let key = configuration.contentKey else { throw .missingContentKey }
            guard BundleCipher.keyID(key) == encryption.keyID else { throw .decryption("the configured content key is not the one this patch was encrypted with") }
            do {
                plaintext = try BundleCipher.open(response.body, key: key, app: configuration.app.rawValue,
                                                  appVersion: info.appVersion, patch: info.patch)
            } catch { throw .decryption(error.description) }
        }
        guard BundleDigests(of: plaintext) == info.plaintext else {
            throw .verification(.hashMismatch(what: "plaintext of \(info.path)", algorithm: "sha256/md5/length"))
        }
        return plaintext
    }

    private nonisolated func remove(now: Date) throws(PatchClientError) {
        files.lock()
        defer { files.unlock() }
        var state = CacheFiles.loadState(configuration.stateURL)
        state.installed = nil
        state.good = nil
        state.lastCheck = now.timeIntervalSince1970
        state.retryAfter = nil
        try CacheFiles.saveState(state, to: configuration.stateURL)
        CacheFiles.remove(configuration.scriptURL)
        CacheFiles.remove(configuration.goodScriptURL)
    }

    // MARK: Helpers

    /// When a 429 says to come back: delay-seconds or an HTTP-date (RFC 9110), at least one
    /// second away and at most `maxRetryAfter`, so a hostile server cannot silence a device
    /// for years; an unreadable value counts as the minimum interval.
    nonisolated func retryAfter(_ value: String?, now: Date) -> Date {
        let cap = configuration.maxRetryAfter
        let text = value?.trimmingCharacters(in: .whitespaces) ?? ""
        var wait: TimeInterval
        if !text.isEmpty, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) {
            wait = TimeInterval(text.prefix(12)) ?? cap
        } else if let date = HTTPDate.parse(text) {
            wait = date.timeIntervalSince(now)
        } else {
            wait = configuration.minimumInterval
        }
        return now.addingTimeInterval(min(cap, max(1, wait)))
    }

    private nonisolated func lockedState() -> ClientState {
        files.lock()
        defer { files.unlock() }
        return CacheFiles.loadState(configuration.stateURL)
    }

    private nonisolated func updateState(_ change: (inout ClientState) -> Void) throws(PatchClientError) {
        files.lock()
        defer { files.unlock() }
        var state = CacheFiles.loadState(configuration.stateURL)
        change(&state)
        try CacheFiles.saveState(state, to: configuration.stateURL)
    }

    private nonisolated func endpoint(_ path: String) throws(PatchClientError) -> URL {
        var base = configuration.server.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        guard let url = URL(string: "\(base)/v1/apps/\(configuration.app.rawValue)/\(path)") else { throw .network("bad server URL \(base)") }
        return url
    }

    private func fetchMetadata(_ name: String, limit: Int, headers: [String: String] = [:]) async throws(PatchClientError) -> HTTPFetcher.Response {
        try await fetcher.get(try endpoint("metadata/\(name)"), headers: headers, limit: limit)
    }
}

/// Hands one outcome from a task to a thread waiting for it.
private final class BlockingResult: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private var outcome: SyncOutcome?

    func finish(_ outcome: SyncOutcome) {
        self.outcome = outcome
        done.signal()
    }

    func wait() -> SyncOutcome {
        done.wait()
        return outcome!
    }
}
