import Foundation
import HTTPClientKit
import PatchCore

/// Downloads, verifies and decrypts the patch for one app version into a cache directory,
/// following the TUF client workflow from the root the app pins. It never leaves the app
/// without a working patch state: every failure keeps what was installed, and every write
/// is atomic.
///
/// At launch call `beginLaunch()` to get the script to evaluate; once the patched app has
/// run fine call `confirmLaunch(_:)` with it. A new patch not confirmed within
/// `maxUnconfirmedLaunches` launches (or `confirmationTimeout` seconds in the foreground) is
/// rolled back to the last confirmed one and not retried until a newer patch number is
/// published. What happens to each patch is reported to the server (`configuration.reporting`).
public actor PatchClient {
    public nonisolated let configuration: ClientConfiguration
    /// The cache's file locations, worked out once: `URL.appendingPathComponent` on Linux
    /// costs thousands of instructions, and every state read asked for them again (issue 23).
    nonisolated let paths: ClientPaths
    /// The TUF workflow, shared with `patchctl verify`; it owns the metadata cache.
    private nonisolated let updater: Updater
    /// The server, for the reports request (the updater reads metadata through the same one).
    nonisolated let repository: HTTPRepository
    nonisolated let reports: ReportQueue
    /// Guards state.json and the script files; launch calls come from any thread.
    nonisolated let files = NSLock()
    /// `lastError` as the running sync read it from the state (nil: not read yet), so
    /// `remember` need not read state.json again to see that a success changes nothing.
    var observedLastError: ClientState.Failure??
    /// The sync under way: a second `sync()` waits for it and returns its outcome. Behind a
    /// lock rather than on the actor, so starting or joining a sync takes no hop to the actor
    /// and `syncBlocking` waits on it without a task of its own (issue 23).
    private nonisolated let running = RunningSync()
    nonisolated var inFlightSync: Task<SyncOutcome, Never>? { running.current?.task }
    /// The patch the running sync is downloading: a refusal names it.
    private(set) var attempting: Int?
    /// Whether the running sync got past the local interval checks and asked the server.
    private var askedServer = false
    /// The timestamp version a push announced (handlePush), sent once with the next check's
    /// timestamp request as `X-Push-Timestamp`, so patchd lets it through the interval.
    var pushAnnounced: Int64?
    /// The installation's `X-Device-Secret`, read (or made) by the first sync that asks the
    /// server, then kept: later syncs of this client do not read the file again.
    private var secret: DeviceSecret?

    public init(configuration: ClientConfiguration) {
        self.configuration = configuration
        let paths = ClientPaths(configuration)
        self.paths = paths
        var limits = Updater.Limits()
        limits.root = configuration.maxRootSize
        limits.timestamp = configuration.maxTimestampSize
        limits.rootRotations = configuration.maxRootRotations
        let repository = HTTPRepository(server: configuration.server, app: configuration.app,
                                        requestTimeout: configuration.requestTimeout, transferTimeout: configuration.syncTimeout)
        self.repository = repository
        self.reports = ReportQueue(url: paths.reportsURL)
        self.updater = Updater(fetcher: repository, pinnedRoot: Array(configuration.trustedRoot),
                               cache: MetadataCache(directory: paths.metadataDirectory), limits: limits,
                               // The version and channel let a revoke lift this device's
                               // server-side interval (docs/PROTOCOL.md, Throttling).
                               timestampHeaders: ["X-Device-ID": configuration.deviceID, "X-App-Version": configuration.appVersion.rawValue,
                                                  "X-Channel": configuration.channel.rawValue])
    }

    // MARK: Sync

    /// Checks for a new patch unless the last check is younger than the minimum interval
    /// (`force` skips that, never a server's Retry-After). Never throws: failures are the
    /// `.failed` outcome, with the installed patch untouched. One sync runs at a time: a call
    /// made while one is under way waits for it and returns its outcome (its own `force` and
    /// `now` are not used). Cancelling a caller cancels the shared sync: every caller then
    /// gets `.failed(.cancelled)`.
    public nonisolated func sync(force: Bool = false, now: Date = Date()) async -> SyncOutcome {
        let run = startOrJoin(force: force, now: now)
        return await withTaskCancellationHandler { await run.task.value } onCancel: { run.task.cancel() }
    }

    /// `sync` for synchronous callers (command-line tools): blocks the calling thread, which
    /// must not be one of Swift concurrency's own. A sync this call starts runs on that thread
    /// (`LentThread`), its transfers too, instead of waking pool threads and the HTTP client's
    /// queue for each step; joining one under way just waits for it.
    public nonisolated func syncBlocking(force: Bool = false) -> SyncOutcome {
        if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) {
            let lent = LentThread()
            var started = false
            let run = startOrJoin(force: force, now: Date()) { body in
                started = true
                return lent.start(body)
            }
            if started { lent.run() }
            return run.wait()
        }
        return startOrJoin(force: force, now: Date()).wait()
    }

    /// The sync under way, or a new one: its task (`start` makes it from the sync's body).
    private nonisolated func startOrJoin(force: Bool, now: Date,
                                         start: (@escaping @Sendable () async -> SyncOutcome) -> Task<SyncOutcome, Never> = { body in Task { await body() } }) -> SyncRun {
        running.join {
            let run = SyncRun()
            run.task = start { await self.runSync(run, force: force, now: now) }
            return run
        }
    }

    private func runSync(_ run: SyncRun, force: Bool, now: Date) async -> SyncOutcome {
        observedLastError = nil
        // The whole sync runs against one deadline (a slow-retrieval server cannot hold the
        // client past it, however it paces its bytes): every transfer of the sync ends by it
        // (`HTTPClient.deadline`), and one asked for after it is refused as `.timeout`. The
        // reports request after the outcome is decided is cut the same way and changes nothing.
        let deadline = ContinuousClock.now + .seconds(configuration.syncTimeout)
        let outcome = await HTTPClient.$deadline.withValue(deadline) { await syncAndReport(force: force, now: now) }
        remember(outcome, now: now)
        running.end(run, outcome)
        return outcome
    }

    /// The sync, then (when it reached the server) the one reports request, whose result
    /// changes nothing about the outcome.
    private func syncAndReport(force: Bool, now: Date) async -> SyncOutcome {
        attempting = nil
        askedServer = false
        let outcome: SyncOutcome
        do throws(PatchClientError) { outcome = try await performSync(force: force, now: now) } catch {
            // A cancelled transfer reads as a timeout to the fetcher.
            if Task.isCancelled { return .failed(.cancelled) }
            record(failure: error, patch: attempting, now: now)
            outcome = .failed(error)
        }
        if askedServer, Self.serverReachable(outcome) { await sendReports() }
        return outcome
    }

    /// Whether a reports request may get through after `outcome`: not after the server could
    /// not be reached (it would only wait out another timeout).
    private static func serverReachable(_ outcome: SyncOutcome) -> Bool {
        switch outcome {
        case .failed(.network), .failed(.timeout), .failed(.cancelled): return false
        default: return true
        }
    }

    private func performSync(force: Bool, now: Date) async throws(PatchClientError) -> SyncOutcome {
        let state = lockedState()
        // A forced sync goes through the device's own interval (a revoke lifts it on the
        // server, so the kill switch lands), never through backpressure (the per-IP bucket).
        if let retry = state.retryAfter, retry > now.timeIntervalSince1970, !(force && state.retryAfterDeviceScoped == true) {
            return .throttled(until: Date(timeIntervalSince1970: retry))
        }
        if !force, let last = state.lastCheck, now.timeIntervalSince1970 - last < configuration.minimumInterval {
            return .throttled(until: Date(timeIntervalSince1970: last + configuration.minimumInterval))
        }
        askedServer = true
        var refresher = updater
        // With the timestamp request only, where patchd meters the device: its interval and
        // the check a revoke or a push grants it are then its own, not spendable by whoever
        // knows its ID (docs/PROTOCOL.md, Throttling).
        refresher.timestampHeaders[DeviceSecret.header] = try installationSecret().rawValue
        if let announced = pushAnnounced {
            refresher.timestampHeaders["X-Push-Timestamp"] = String(announced)
            pushAnnounced = nil
        }
        // What the targets search can find: top-level targets and any delegated role.
        let listing: TargetListing
        let withholds: Withholds
        do {
            var trusted = try await refresher.refresh(now: now)
            listing = try await refresher.listTargets(in: &trusted)
            withholds = try await refresher.withholds(in: &trusted)
        } catch {
            if case .throttled(let header, let deviceScoped) = error {
                let until = retryAfter(header, now: now)
                try updateState {
                    $0.retryAfter = until.timeIntervalSince1970
                    $0.retryAfterDeviceScoped = deviceScoped
                    $0.lastCheck = now.timeIntervalSince1970
                }
                return .throttled(until: until)
            }
            throw Self.clientError(error)
        }
        return try await apply(listing.found, withholds: withholds, now: now)
    }

    private func installationSecret() throws(PatchClientError) -> DeviceSecret {
        if let secret { return secret }
        let kept = try CacheFiles.deviceSecret(atPath: paths.secretPath)
        secret = kept
        return kept
    }

    /// The updater's errors as this API has always named them (metadata by file name, targets by URL).
    private static func clientError(_ error: UpdateError) -> PatchClientError {
        switch error {
        case .verification(let error): return .verification(error)
        case .tooLarge(let what, let limit): return .tooLarge(what: what, limit: limit)
        case .status(let status, .metadata(let name), _, let body): return .server(status: status, url: name, message: serverMessage(body))
        case .status(let status, .target, let location, let body): return .server(status: status, url: location, message: serverMessage(body))
        case .fetch(.timeout): return .timeout
        case .fetch(.network(let message)), .fetch(.unreadable(let message)): return .network(message)
        case .throttled: return .server(status: 429, url: "timestamp.json")
        case .storage(let message): return .storage(message)
        }
    }

    /// Picks the patch for this version and device and installs, keeps or removes it, under
    /// the rule the simple check applies too (`Selection.choose`, docs/PROTOCOL.md section 5):
    /// the installed patch is kept while targets lists it, whatever its rollout (a halt offers
    /// it to no new device but takes it from none) and even when a lower number would be
    /// picked now (no downgrade); once it is no longer listed (revoked) the signed targets
    /// decide. Patches rolled back on this device are skipped.
    /// `targets` are what the targets search finds (top-level targets and delegated roles);
    /// `withholds` what the withhold role says of them (`Withholds.apply`): a target withheld to
    /// roll back counts as not listed (a device that runs it drops it and reports `rolledBack`
    /// with the withhold's reason), one withheld as a halt as listed at rollout 0.
    private func apply(_ targets: [FoundTarget], withholds: Withholds = Withholds(), now: Date) async throws(PatchClientError) -> SyncOutcome {
        // One read of the state for the decision: the installed patch (reconciled with
        // main.js) and the rolled-back floor under the same lock.
        let (state, installed) = stateAndCurrentPatch()
        observedLastError = .some(state.lastError)
        var listed: [Int: (info: PatchTargetInfo, file: TargetFile)] = [:]
        let (kept, halted) = withholds.apply(to: Dictionary(targets.map { ($0.path, $0.file) }) { first, _ in first })
        var withdrawn: [Int: String] = [:]
        for target in targets {
            let file = target.file
            guard let signed = PatchTargetInfo(path: target.path, file: file), signed.appVersion == configuration.appVersion.rawValue,
                  signed.channel == configuration.channel else { continue }
            guard kept[target.path] != nil else {
                withdrawn[signed.patch] = withholds.entry(path: target.path, file: file)?.reason
                continue
            }
            listed[signed.patch] = (halted.contains(target.path) ? signed.withRollout(0) : signed, file)
        }
        let device = Selection.Device(app: configuration.app.rawValue, appVersion: configuration.appVersion.rawValue,
                                      deviceID: configuration.deviceID, osVersion: configuration.osVersion)
        let choice = Selection.choose(
            listed.values.map { Selection.Candidate(number: $0.info.patch, rollout: $0.info.rollout, conditions: $0.info.conditions,
                                                    digest: $0.info.plaintext.sha256) },
            for: device, running: installed.map { Selection.Running(number: $0.number, digest: $0.sha256) },
            rolledBackThrough: state.rolledBackThrough)
        // The running patch withheld to roll back: dropped below, and said so with the reason.
        if let running = installed, let reason = withdrawn[running.number], choice != .keep(running.number) {
            record(.rolledBack, patch: running.number, reason: "withheld: " + reason, receipt: state.installed?.receipt, now: now)
        }
        let best: (info: PatchTargetInfo, file: TargetFile)
        switch choice {
        case .keep:
            try recordCheck(now: now, after: state)
            return .unchanged(installed)
        case .none:
            if installed != nil || state.good != nil {
                try remove(now: now)
                return .removed
            }
            try recordCheck(now: now, after: state)
            return .unchanged(nil)
        case .install(let number):
            guard let chosen = listed[number] else { throw .malformedTarget("patch \(number)") }
            best = chosen
        }
        attempting = best.info.patch
        let (plaintext, receipt) = try await download(info: best.info, file: best.file)
        record(.downloaded, patch: best.info.patch, receipt: receipt, now: now)
        let patch = ClientState.Patch(number: best.info.patch, sha256: best.info.plaintext.sha256, confirmed: false, launches: 0, receipt: receipt)
        try install(plaintext, as: patch, now: now)
        record(.installed, patch: patch.number, receipt: receipt, now: now)
        return .updated(InstalledPatch(number: patch.number, path: paths.scriptURL, sha256: patch.sha256, confirmed: false))
    }

    /// The state names the patch being installed before main.js is replaced, and the patch
    /// installed after: `reconcile` finishes an install a kill cut short in between.
    private nonisolated func install(_ plaintext: [UInt8], as patch: ClientState.Patch, now: Date) throws(PatchClientError) {
        files.lock()
        defer { files.unlock() }
        var state = CacheFiles.loadState(atPath: paths.statePath)
        state.installing = patch
        try CacheFiles.saveState(state, toPath: paths.statePath)
        // The script's contents are fsynced before its rename; the rename itself is made
        // durable by the state save below, which fsyncs the same directory. A power cut before
        // that leaves `installing` set, and `reconcile` keeps the new patch only when the
        // script on disk has its digest (one directory fsync fewer per install; issue 23).
        try CacheFiles.write(plaintext, toPath: paths.scriptPath, syncDirectory: false)
        state.installing = nil
        state.installed = patch
        state.lastCheck = now.timeIntervalSince1970
        state.retryAfter = nil
        try CacheFiles.saveState(state, toPath: paths.statePath)
    }

    /// Downloads under the sha256 name, checks length and hashes, decrypts, checks the signed
    /// plaintext digests. The request names the device, so the answer carries the patch's
    /// receipt (`X-Patch-Receipt`), which this device's reports about the patch need to count.
    private func download(info: PatchTargetInfo, file: TargetFile) async throws(PatchClientError) -> (plaintext: [UInt8], receipt: String?) {
        guard file.length <= configuration.maxBundleSize else { throw .tooLarge(what: info.path, limit: configuration.maxBundleSize) }
        guard let hash = file.hashes["sha256"] ?? file.hashes.values.sorted().first else { throw .malformedTarget(info.path) }
        let served: [UInt8]
        let receipt: String?
        do {
            let answer = try await updater.downloadTarget(file, path: info.path, servedAs: info.servedPath(hash: hash),
                                                          headers: ["X-Device-ID": configuration.deviceID])
            served = answer.body
            receipt = answer.head.headers["x-patch-receipt"].flatMap(ReportEvent.receipt)
        } catch {
            throw Self.clientError(error)
        }
        var plaintext = served
        if let encryption = info.encryption {
            guard let key = configuration.contentKey else { throw .missingContentKey }
            let keyBytes = Array(key)
            guard BundleCipher.keyID(keyBytes) == encryption.keyID else { throw .decryption("the configured content key is not the one this patch was encrypted with") }
            do {
                plaintext = try BundleCipher.open(served, key: keyBytes, app: configuration.app.rawValue,
                                                  appVersion: info.appVersion, patch: info.patch)
            } catch { throw .decryption(error.description) }
        }
        guard BundleDigests(of: plaintext) == info.plaintext else {
            throw .verification(.hashMismatch(what: "plaintext of \(info.path)", algorithm: "sha256/md5/length"))
        }
        return (plaintext, receipt)
    }

    private nonisolated func remove(now: Date) throws(PatchClientError) {
        files.lock()
        defer { files.unlock() }
        var state = CacheFiles.loadState(atPath: paths.statePath)
        state.installed = nil
        state.good = nil
        state.lastCheck = now.timeIntervalSince1970
        state.retryAfter = nil
        try CacheFiles.saveState(state, toPath: paths.statePath)
        CacheFiles.remove(atPath: paths.scriptPath)
        CacheFiles.remove(atPath: paths.goodScriptPath)
    }

    // MARK: Helpers

    /// When a 429 says to come back: delay-seconds or an HTTP-date (RFC 9110), at least one
    /// second away and at most `maxRetryAfter`, so a hostile server cannot silence a device
    /// for years; an unreadable value counts as the minimum interval.
    nonisolated func retryAfter(_ value: String?, now: Date) -> Date {
        let wait = RetryAfter.seconds(value, now: now) ?? configuration.minimumInterval
        return now.addingTimeInterval(min(configuration.maxRetryAfter, max(1, wait)))
    }

    nonisolated func lockedState() -> ClientState {
        files.lock()
        defer { files.unlock() }
        return CacheFiles.loadState(atPath: paths.statePath)
    }

    /// A sync that changed nothing: the check's time, and a Retry-After no longer in force
    /// cleared. Only when there is one to clear (or no state.json yet) is state.json
    /// rewritten (durably); otherwise just `last-check` moves (`CacheFiles.saveCheck`): no
    /// fsync for a no-change sync (issue 23). `seen` is the state this sync decided on: only
    /// a sync sets or clears `retryAfter`, and one sync runs at a time.
    nonisolated func recordCheck(now: Date, after seen: ClientState) throws(PatchClientError) {
        if seen.retryAfter == nil, seen != ClientState() {
            files.lock()
            defer { files.unlock() }
            try CacheFiles.saveCheck(now.timeIntervalSince1970, besideState: paths.statePath)
            return
        }
        try updateState { $0.lastCheck = now.timeIntervalSince1970; $0.retryAfter = nil }
    }

    /// The state and the installed patch (`currentPatch`), read once under the lock.
    nonisolated func stateAndCurrentPatch() -> (ClientState, InstalledPatch?) {
        files.lock()
        defer { files.unlock() }
        var state = CacheFiles.loadState(atPath: paths.statePath)
        let installed = reconcile(&state)
        return (state, installed)
    }

    nonisolated func updateState(_ change: (inout ClientState) -> Void) throws(PatchClientError) {
        files.lock()
        defer { files.unlock() }
        var state = CacheFiles.loadState(atPath: paths.statePath)
        change(&state)
        try CacheFiles.saveState(state, toPath: paths.statePath)
    }
}

/// The slot for the sync under way (`PatchClient.running`).
final class RunningSync: @unchecked Sendable {
    // @unchecked: `run` is only touched under `lock`.
    private let lock = NSLock()
    private var run: SyncRun?

    var current: SyncRun? {
        lock.lock()
        defer { lock.unlock() }
        return run
    }

    /// The run under way, or the one `start` makes (under the lock: one run at a time).
    func join(_ start: () -> SyncRun) -> SyncRun {
        lock.lock()
        defer { lock.unlock() }
        if let run { return run }
        let started = start()
        run = started
        return started
    }

    /// The run is over: the next `join` starts a new one, and its waiters get `outcome`.
    func end(_ ended: SyncRun, _ outcome: SyncOutcome) {
        lock.lock()
        if run === ended { run = nil }
        lock.unlock()
        ended.deliver(outcome)
    }
}

/// One sync: its task, and its outcome for blocking waiters.
final class SyncRun: @unchecked Sendable {
    // @unchecked: `task` is set once, before the run is shared (under RunningSync's lock);
    // `outcome` is only touched under `condition`.
    var task: Task<SyncOutcome, Never>!
    private let condition = NSCondition()
    private var outcome: SyncOutcome?

    func deliver(_ value: SyncOutcome) {
        condition.lock()
        outcome = value
        condition.broadcast()
        condition.unlock()
    }

    /// Blocks until the outcome is delivered.
    func wait() -> SyncOutcome {
        condition.lock()
        defer { condition.unlock() }
        while outcome == nil { condition.wait() }
        return outcome!
    }
}
