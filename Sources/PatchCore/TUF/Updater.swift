import Foundation

/// Why an update stopped. The trusted state on disk is never widened by a failed update.
public enum UpdateError: Error, Equatable, CustomStringConvertible {
    /// A file was served and did not verify (signature, version, expiry, length, hash).
    case verification(TUFError)
    /// The body passed the cap: the signed length, or the client's limit when that is lower.
    case tooLarge(what: String, limit: Int)
    /// An answer other than the file (a 404 for a required file, a 5xx, a redirect), with the
    /// body that came with it (capped like the file was), for the server's error message.
    case status(Int, file: RepositoryFile, location: String, body: [UInt8] = [])
    case fetch(FetchError)
    /// The timestamp request was answered 429 (patchd's per-device interval).
    /// `deviceScoped`: the server said (`X-Throttle-Scope: device`) that the wait is this
    /// device's own check interval, which a revoke lifts, not overload backpressure.
    case throttled(retryAfter: String?, deviceScoped: Bool = false)
    /// The metadata cache could not be written.
    case storage(String)

    public var description: String {
        switch self {
        case .verification(let error): return "verification failed: \(error)"
        case .tooLarge(let what, let limit): return "\(what) exceeds \(limit) bytes (endless data?)"
        case .status(let status, _, let location, _): return "\(location) answered HTTP \(status)"
        case .fetch(let error): return error.description
        case .throttled: return "the server asked to wait (HTTP 429)"
        case .storage(let message): return "cache error: \(message)"
        }
    }
}

/// The TUF client workflow (spec 5.3–5.6), once, for every client of a repository: the
/// device library (`PatchClient`, over HTTP, with a cache) and `patchctl verify` (a
/// directory or a server, no cache). It drives the pure `TrustedMetadata` with bytes from a
/// `RepositoryFetcher`, as python-tuf's `Updater.refresh()` drives `TrustedMetadataSet`;
/// every byte passes through `download`, the one place a cap is applied.
public struct Updater: Sendable {
    /// The most the updater reads of each file, whatever a signed length says.
    public struct Limits: Sendable, Equatable {
        public var root = TrustedMetadata.maxRootLength
        public var timestamp = TrustedMetadata.maxTimestampLength
        public var snapshot = TrustedMetadata.maxSnapshotLength
        public var targets = TrustedMetadata.maxTargetsLength
        /// How many new root versions one refresh may download (spec 5.3.3's bound).
        public var rootRotations = 32
        /// How many targets roles one targets search visits, top-level targets included
        /// (python-tuf's `max_delegations`): a delegation cycle or fan-out ends here.
        public var delegations = 32

        public init() {}
    }

    public struct Download: Sendable {
        public let head: FetchHead
        public let body: [UInt8]
    }

    public let fetcher: any RepositoryFetcher
    /// The root the app ships (or `verify --root` names): where all trust starts, every time.
    public let pinnedRoot: [UInt8]
    /// nil: nothing is remembered between refreshes (`patchctl verify`).
    public let cache: MetadataCache?
    public var limits: Limits
    /// Sent with the timestamp request only: patchd meters devices there (X-Device-ID).
    public var timestampHeaders: [String: String]

    public init(fetcher: any RepositoryFetcher, pinnedRoot: [UInt8], cache: MetadataCache? = nil,
                limits: Limits = Limits(), timestampHeaders: [String: String] = [:]) {
        self.fetcher = fetcher
        self.pinnedRoot = pinnedRoot
        self.cache = cache
        self.limits = limits
        self.timestampHeaders = timestampHeaders
    }

    /// Root chain, timestamp, snapshot, targets; each accepted file is cached before the next
    /// is fetched. Returns metadata that `checkComplete()` has passed.
    public func refresh(now: Date = Date()) async throws(UpdateError) -> TrustedMetadata {
        var trusted = try verified { () throws(TUFError) in try TrustedMetadata(trustedRoot: pinnedRoot, referenceTime: now) }
        try loadCachedRoots(&trusted)
        try await updateRoot(&trusted)
        try await updateTimestamp(&trusted)
        try await updateSnapshot(&trusted)
        try await updateTargets(&trusted)
        try verified { () throws(TUFError) in try trusted.checkComplete() }
        return trusted
    }

    /// Spec 5.3 from the cache: `N.root.json` for N past the pinned root, each checked as a
    /// downloaded root would be, so only a chain signed from the pinned root's keys is used.
    /// A root that does not chain is discarded and the walk goes on over the network.
    private func loadCachedRoots(_ trusted: inout TrustedMetadata) throws(UpdateError) {
        guard let cache else { return }
        // Clients before the chain kept the newest root as root.json and trusted it on its own
        // signatures, so a planted file there chose every key (issue 10, item 11).
        cache.remove("root.json")
        while true {
            let name = "\(trusted.root.body.version + 1).root.json"
            guard let bytes = cache.read(name, limit: limits.root) else { return }
            do { try trusted.updateRoot(bytes) } catch {
                cache.remove(name)
                return
            }
        }
    }

    /// Spec 5.3.3–5.3.9: `N+1.root.json` until the first 404 or 403.
    private func updateRoot(_ trusted: inout TrustedMetadata) async throws(UpdateError) {
        for _ in 0..<limits.rootRotations {
            let file = RepositoryFile.metadata("\(trusted.root.body.version + 1).root.json")
            let answer = try await download(file, limit: limits.root)
            if answer.head.status == 404 || answer.head.status == 403 { return }
            try expectOK(answer, file)
            try verified { () throws(TUFError) in try trusted.updateRoot(answer.body) }
            try persist(file, answer.body)
        }
    }

    /// Spec 5.4: the cached timestamp is the floor the new one is checked against.
    private func updateTimestamp(_ trusted: inout TrustedMetadata) async throws(UpdateError) {
        if let cached = cache?.read("timestamp.json", limit: limits.timestamp) { try? trusted.loadCachedTimestamp(cached) }
        let answer = try await download(.metadata("timestamp.json"), limit: limits.timestamp, headers: timestampHeaders)
        if answer.head.status == 429 {
            throw .throttled(retryAfter: answer.head.headers["retry-after"], deviceScoped: answer.head.headers["x-throttle-scope"] == "device")
        }
        try expectOK(answer, .metadata("timestamp.json"))
        if try verified({ () throws(TUFError) in try trusted.updateTimestamp(answer.body) }) {
            try cache?.write("timestamp.json", answer.body)
        }
    }

    /// Spec 5.5: the cached snapshot is loaded first as the rollback floor (5.5.5), then the
    /// one the timestamp names is downloaded unless the cached one is it.
    private func updateSnapshot(_ trusted: inout TrustedMetadata) async throws(UpdateError) {
        if let cached = cache?.read("snapshot.json", limit: limits.snapshot) { try? trusted.loadCachedSnapshot(cached) }
        guard !trusted.hasFinalSnapshot, let version = trusted.timestamp?.body.snapshot.version else { return }
        let file = RepositoryFile.metadata("\(version).snapshot.json")
        let answer = try await download(file, limit: min(trusted.snapshotLengthLimit, limits.snapshot))
        try expectOK(answer, file)
        try verified { () throws(TUFError) in try trusted.updateSnapshot(answer.body) }
        try cache?.write("snapshot.json", answer.body)
    }

    /// Spec 5.6: the cached targets are kept when they are the version the snapshot names.
    private func updateTargets(_ trusted: inout TrustedMetadata) async throws(UpdateError) {
        if let cached = cache?.read("targets.json", limit: limits.targets) { try? trusted.loadCachedTargets(cached) }
        guard trusted.targets == nil else { return }
        guard let version = trusted.snapshot?.body.meta["targets.json"]?.version else { throw .verification(.missingRole("targets")) }
        let file = RepositoryFile.metadata("\(version).targets.json")
        let answer = try await download(file, limit: min(trusted.targetsLengthLimit, limits.targets))
        try expectOK(answer, file)
        try verified { () throws(TUFError) in try trusted.updateTargets(answer.body) }
        try cache?.write("targets.json", answer.body)
    }

    /// A target's bytes, served as `servedPath`, checked against its signed length and every
    /// listed hash. Never reads past the signed length, nor past `limit` when given.
    /// `headers` go with the request (PatchClient names its device, and gets the patch's
    /// receipt in the answer's head).
    public func downloadTarget(_ target: TargetFile, path: String, servedAs servedPath: String, limit: Int? = nil,
                               headers: [String: String] = [:]) async throws(UpdateError) -> Download {
        let file = RepositoryFile.target(servedPath)
        let answer = try await download(file, limit: min(target.length, limit ?? target.length), headers: headers)
        try expectOK(answer, file)
        try verified { () throws(TUFError) in try target.verify(answer.body, path: path) }
        return answer
    }

    /// The one entry point for bytes (python-tuf's `download_bytes(max_length)`): the body is
    /// collected by a `DownloadBody` capped at `limit`, and passing it is `.tooLarge` whatever
    /// the fetcher made of the transfer it was told to stop.
    public func download(_ file: RepositoryFile, limit: Int, headers: [String: String] = [:]) async throws(UpdateError) -> Download {
        let body = DownloadBody(limit: limit)
        let head: FetchHead
        do { head = try await fetcher.fetch(file, headers: headers, into: body) } catch {
            if body.isOverLimit { throw .tooLarge(what: fetcher.location(of: file), limit: body.limit) }
            throw .fetch(error)
        }
        if body.isOverLimit {
            // A 404 page longer than the file it stands for is a missing file, not an attack:
            // the cap protects what would be read as the file, and an error body never is.
            // The caller sees the status (a missing next root ends the root walk).
            if head.status != 200 { return Download(head: head, body: []) }
            throw .tooLarge(what: fetcher.location(of: file), limit: body.limit)
        }
        return Download(head: head, body: body.received)
    }

    func expectOK(_ answer: Download, _ file: RepositoryFile) throws(UpdateError) {
        guard answer.head.status == 200 else { throw .status(answer.head.status, file: file, location: fetcher.location(of: file), body: answer.body) }
    }

    private func persist(_ file: RepositoryFile, _ bytes: [UInt8]) throws(UpdateError) {
        guard case .metadata(let name) = file else { return }
        try cache?.write(name, bytes)
    }

    func verified<T>(_ body: () throws(TUFError) -> T) throws(UpdateError) -> T {
        do { return try body() } catch { throw .verification(error) }
    }
}
