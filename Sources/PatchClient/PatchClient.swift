import Foundation
import HTTPClientKit
import Locking
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
///
/// Call it from any thread or task. It is a `final class` whose state is behind `Locked`, not
/// an actor: what an app calls at launch (`beginLaunch`, `currentPatch`, `confirmLaunch`) is
/// synchronous file work that must not wait for an `await`, so an actor would keep it
/// `nonisolated` beside its isolated state, two models in one type; and `syncBlocking` runs a
/// whole sync on the caller's thread (`LentThread`, issue 23), where each actor-isolated step
/// would be a job for the actor's executor to take. `Locked`, not `Mutex`: iOS 15.
public final class PatchClient: Sendable {
    public let configuration: ClientConfiguration
    /// The cache's file locations, worked out once: `URL.appendingPathComponent` on Linux
    /// costs thousands of instructions, and every state read asked for them again (issue 23).
    let paths: ClientPaths
    /// The TUF workflow, shared with `patchctl verify`; it owns the metadata cache.
    private let updater: Updater
    /// The server, for the reports request (the updater reads metadata through the same one).
    let repository: HTTPRepository
    let reports: ReportQueue

    // What changes while a client lives, in two locks: `files` is held across fsyncs, and
    // `session` never waits for a disk, so starting or joining a sync never waits for an
    // install's writes. Neither is taken while the other is held.

    /// The version's cache files (state.json, main.js, good.js): each change is a read, a
    /// change and a save, and launch calls come from any thread while a sync installs.
    let files: Locked<VersionFiles>
    /// What the client keeps in memory between calls.
    let session = Locked(Session())

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
        self.files = Locked(VersionFiles(paths: paths))
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
    public func sync(force: Bool = false, now: Date = Date()) async -> SyncOutcome {
        let run = startOrJoin(force: force, now: now)
        return await withTaskCancellationHandler { await run.task.value } onCancel: { run.task.cancel() }
    }

    /// `sync` for synchronous callers (command-line tools): blocks the calling thread, which
    /// must not be one of Swift concurrency's own. A sync this call starts runs on that thread
    /// (`LentThread`), its transfers too, instead of waking pool threads and the HTTP client's
    /// queue for each step; joining one under way just waits for it.
    public func syncBlocking(force: Bool = false) -> SyncOutcome {
        if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) {
            let lent = LentThread()
            var started = false
            let run = startOrJoin(force: force, now: Date()) { body in
                started = true
                return lent.start(body)
            }
            if started { lent.run() }
            return run.outcome.wait()
        }
        return startOrJoin(force: force, now: Date()).outcome.wait()
    }

    /// The task of the sync under way, if any (`clearCache` waits for it).
    var inFlightSync: Task<SyncOutcome, Never>? { session.withLock { $0.running?.task } }

    /// The sync under way, or a new one (`start` makes its task from the sync's body). Under
    /// the session's lock, so two callers never both start one.
    private func startOrJoin(force: Bool, now: Date,
                             start: (@escaping @Sendable () async -> SyncOutcome) -> Task<SyncOutcome, Never> = { body in Task { await body() } }) -> SyncRun {
        session.withLock { session in
            if let running = session.running { return running }
            let outcome = SyncRun.Outcome()
            let run = SyncRun(task: start { await self.runSync(outcome, force: force, now: now) }, outcome: outcome)
            session.running = run
            return run
        }
    }

    private func runSync(_ delivery: SyncRun.Outcome, force: Bool, now: Date) async -> SyncOutcome {
        // The whole sync runs against one deadline (a slow-retrieval server cannot hold the
        // client past it, however it paces its bytes): every transfer of the sync ends by it
        // (`HTTPClient.deadline`), and one asked for after it is refused as `.timeout`. The
        // reports request after the outcome is decided is cut the same way and changes nothing.
        let deadline = ContinuousClock.now + .seconds(configuration.syncTimeout)
        let outcome = await HTTPClient.$deadline.withValue(deadline) { await syncAndReport(force: force, now: now) }
        // Over: the next call starts a new sync, and the blocked callers get this one's outcome.
        session.withLock { session in
            if session.running?.outcome === delivery { session.running = nil }
        }
        delivery.deliver(outcome)
        return outcome
    }

    /// The sync, then (when it reached the server) the one reports request, whose result
    /// changes nothing about the outcome, then the outcome kept for `lastError`.
    private func syncAndReport(force: Bool, now: Date) async -> SyncOutcome {
        var progress = SyncProgress()
        let outcome: SyncOutcome
        do throws(PatchClientError) { outcome = try await performSync(&progress, force: force, now: now) } catch {
            // A cancelled transfer reads as a timeout to the fetcher.
            if Task.isCancelled { return .failed(.cancelled) }
            record(failure: error, patch: progress.attempting, now: now)
            outcome = .failed(error)
        }
        if progress.askedServer, Self.serverReachable(outcome) { await sendReports() }
        remember(outcome, observed: progress.observedLastError, now: now)
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

    private func performSync(_ progress: inout SyncProgress, force: Bool, now: Date) async throws(PatchClientError) -> SyncOutcome {
        let state = lockedState()
        // A forced sync goes through the device's own interval (a revoke lifts it on the
        // server, so the kill switch lands), never through backpressure (the per-IP bucket).
        if let retry = state.retryAfter, retry > now.timeIntervalSince1970, !(force && state.retryAfterDeviceScoped == true) {
            return .throttled(until: Date(timeIntervalSince1970: retry))
        }
        if !force, let last = state.lastCheck, now.timeIntervalSince1970 - last < configuration.minimumInterval {
            return .throttled(until: Date(timeIntervalSince1970: last + configuration.minimumInterval))
        }
        progress.askedServer = true
        var refresher = updater
        // With the timestamp request only, where patchd meters the device: its interval and
        // the check a revoke or a push grants it are then its own, not spendable by whoever
        // knows its ID (docs/PROTOCOL.md, Throttling).
        refresher.timestampHeaders[DeviceSecret.header] = try installationSecret().rawValue
        if let announced = session.withLock({ $0.pushAnnounced.take() }) {
            refresher.timestampHeaders["X-Push-Timestamp"] = String(announced)
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
        return try await apply(listing.found, withholds: withholds, now: now, progress: &progress)
    }

    private func installationSecret() throws(PatchClientError) -> DeviceSecret {
        if let kept = session.withLock({ $0.secret }) { return kept }
        // Read (or made) outside the lock, which never waits for a disk; one sync runs at a time.
        let secret = try CacheFiles.deviceSecret(atPath: paths.secretPath)
        session.withLock { $0.secret = secret }
        return secret
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
    private func apply(_ targets: [FoundTarget], withholds: Withholds = Withholds(), now: Date,
                       progress: inout SyncProgress) async throws(PatchClientError) -> SyncOutcome {
        // One read of the state for the decision: the installed patch (reconciled with
        // main.js) and the rolled-back floor under the same lock.
        let (state, installed) = stateAndCurrentPatch()
        progress.observedLastError = .some(state.lastError)
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
                try files.withLock { (files) throws(PatchClientError) in try files.removePatches(now: now) }
                return .removed
            }
            try recordCheck(now: now, after: state)
            return .unchanged(nil)
        case .install(let number):
            guard let chosen = listed[number] else { throw .malformedTarget("patch \(number)") }
            best = chosen
        }
        progress.attempting = best.info.patch
        let (plaintext, receipt) = try await download(info: best.info, file: best.file)
        record(.downloaded, patch: best.info.patch, receipt: receipt, now: now)
        let patch = ClientState.Patch(number: best.info.patch, sha256: best.info.plaintext.sha256, confirmed: false, launches: 0, receipt: receipt)
        try files.withLock { (files) throws(PatchClientError) in try files.install(plaintext, as: patch, now: now) }
        record(.installed, patch: patch.number, receipt: receipt, now: now)
        return .updated(InstalledPatch(number: patch.number, path: paths.scriptURL, sha256: patch.sha256, confirmed: false))
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

    // MARK: Helpers

    /// When a 429 says to come back: delay-seconds or an HTTP-date (RFC 9110), at least one
    /// second away and at most `maxRetryAfter`, so a hostile server cannot silence a device
    /// for years; an unreadable value counts as the minimum interval.
    func retryAfter(_ value: String?, now: Date) -> Date {
        let wait = RetryAfter.seconds(value, now: now) ?? configuration.minimumInterval
        return now.addingTimeInterval(min(configuration.maxRetryAfter, max(1, wait)))
    }

    func lockedState() -> ClientState {
        files.withLock { $0.loadState() }
    }

    /// A sync that changed nothing: the check's time, and a Retry-After no longer in force
    /// cleared. Only when there is one to clear (or no state.json yet) is state.json
    /// rewritten (durably); otherwise just `last-check` moves (`CacheFiles.saveCheck`): no
    /// fsync for a no-change sync (issue 23). `seen` is the state this sync decided on: only
    /// a sync sets or clears `retryAfter`, and one sync runs at a time.
    func recordCheck(now: Date, after seen: ClientState) throws(PatchClientError) {
        if seen.retryAfter == nil, seen != ClientState() {
            try files.withLock { (files) throws(PatchClientError) in try files.saveCheck(now.timeIntervalSince1970) }
            return
        }
        try updateState { $0.lastCheck = now.timeIntervalSince1970; $0.retryAfter = nil }
    }

    /// The state and the installed patch (`currentPatch`), read once under the lock.
    func stateAndCurrentPatch() -> (ClientState, InstalledPatch?) {
        files.withLock { files in
            var state = files.loadState()
            let installed = files.reconcile(&state)
            return (state, installed)
        }
    }

    func updateState(_ change: (inout ClientState) -> Void) throws(PatchClientError) {
        try files.withLock { (files) throws(PatchClientError) in
            var state = files.loadState()
            change(&state)
            try files.saveState(state)
        }
    }
}
