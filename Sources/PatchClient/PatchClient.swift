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
    /// The TUF workflow, shared with `patchctl verify`; it owns the metadata cache.
    private nonisolated let updater: Updater
    /// Guards state.json and the script files; launch calls come from any thread.
    private nonisolated let files = NSLock()

    public init(configuration: ClientConfiguration) {
        self.configuration = configuration
        var limits = Updater.Limits()
        limits.root = configuration.maxRootSize
        limits.timestamp = configuration.maxTimestampSize
        limits.rootRotations = configuration.maxRootRotations
        let repository = HTTPRepository(server: configuration.server, app: configuration.app,
                                        requestTimeout: configuration.requestTimeout, transferTimeout: configuration.syncTimeout)
        self.updater = Updater(fetcher: repository, pinnedRoot: configuration.trustedRoot,
                               cache: MetadataCache(directory: configuration.metadataDirectory), limits: limits,
                               // The version and channel let a revoke lift this device's
                               // server-side interval (docs/PROTOCOL.md, Throttling).
                               timestampHeaders: ["X-Device-ID": configuration.deviceID, "X-App-Version": configuration.appVersion.rawValue,
                                                  "X-Channel": configuration.channel.rawValue])
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
        blockingWait { await self.sync(force: force) }
    }

    private func performSync(force: Bool, now: Date) async throws(PatchClientError) -> SyncOutcome {
        let state = lockedState()
        if let retry = state.retryAfter, retry > now.timeIntervalSince1970 {
            return .throttled(until: Date(timeIntervalSince1970: retry))
        }
        if !force, let last = state.lastCheck, now.timeIntervalSince1970 - last < configuration.minimumInterval {
            return .throttled(until: Date(timeIntervalSince1970: last + configuration.minimumInterval))
        }
        let trusted: TrustedMetadata
        do { trusted = try await updater.refresh(now: now) } catch {
            if case .throttled(let header) = error {
                let until = retryAfter(header, now: now)
                try updateState { $0.retryAfter = until.timeIntervalSince1970; $0.lastCheck = now.timeIntervalSince1970 }
                return .throttled(until: until)
            }
            throw Self.clientError(error)
        }
        guard let targets = trusted.targets?.body else { throw .verification(.missingRole("targets")) }
        return try await apply(targets, now: now)
    }

    /// The updater's errors as this API has always named them (metadata by file name, targets by URL).
    private static func clientError(_ error: UpdateError) -> PatchClientError {
        switch error {
        case .verification(let error): return .verification(error)
        case .tooLarge(let what, let limit): return .tooLarge(what: what, limit: limit)
        case .status(let status, .metadata(let name), _): return .server(status: status, url: name)
        case .status(let status, .target, let location): return .server(status: status, url: location)
        case .fetch(.timeout): return .timeout
        case .fetch(.network(let message)), .fetch(.unreadable(let message)): return .network(message)
        case .throttled: return .server(status: 429, url: "timestamp.json")
        case .storage(let message): return .storage(message)
        }
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
            guard let info = PatchTargetInfo(path: path, file: file), info.appVersion == version, info.channel == configuration.channel else { continue }
            listed[info.patch] = (info, file)
        }
        let os = configuration.osVersion
        // Delivery conditions exclude a patch for this device as if it were not listed: it is
        // neither picked nor kept (an OS update out of a patch's range drops the patch).
        listed = listed.filter { $0.value.info.admits(deviceID: device, osVersion: os) }
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
        let served: [UInt8]
        do { served = try await updater.downloadTarget(file, path: info.path, servedAs: info.servedPath(hash: hash)) } catch {
            throw Self.clientError(error)
        }
        var plaintext = served
        if let encryption = info.encryption {
            guard let key = configuration.contentKey else { throw .missingContentKey }
            guard BundleCipher.keyID(key) == encryption.keyID else { throw .decryption("the configured content key is not the one this patch was encrypted with") }
            do {
                plaintext = try BundleCipher.open(served, key: key, app: configuration.app.rawValue,
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
}
