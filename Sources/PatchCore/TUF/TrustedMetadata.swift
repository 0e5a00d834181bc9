import Foundation

/// The TUF client workflow's state (spec 5.3–5.6): the metadata trusted so far and the rules
/// for accepting the next file. Pure: it is handed bytes and never does I/O; `Updater`
/// drives it for the client library and `patchctl verify` alike.
public struct TrustedMetadata: Sendable {
    public private(set) var root: SignedRoot
    public private(set) var timestamp: SignedTimestamp?
    public private(set) var snapshot: SignedSnapshot?
    public private(set) var targets: SignedTargets?
    /// Delegated targets roles loaded by the targets search (spec 5.6.7), by role name; only
    /// under the targets trusted now, so emptied whenever `targets` is.
    public private(set) var delegatedTargets: [String: SignedTargets] = [:]
    /// The version of each delegated role's copy in the client's cache whose signatures
    /// verified under its delegator's keys: what a download of the role may not go below,
    /// even when the copy itself was not trusted (not what snapshot pins, expired). Emptied
    /// with `delegatedTargets`.
    private var delegatedFloors: [String: Int64] = [:]
    /// The snapshot as it was received, for checking it against a later timestamp's pin
    /// (a re-encoding need not hash the same).
    private var snapshotBytes: [UInt8]?
    /// Expiry is judged against one instant for the whole update, as python-tuf does,
    /// so a refresh that straddles an expiry sees one consistent answer.
    public let referenceTime: Date

    /// Size caps for files whose length no signed metadata gives (python-tuf's defaults).
    public static let maxRootLength = 512_000
    public static let maxTimestampLength = 16_384
    public static let maxSnapshotLength = 2_000_000
    public static let maxTargetsLength = 5_000_000

    /// Starts from a root the caller trusts (pinned in the app, or passed to `verify`).
    /// It must be signed by its own root keys; expiry is checked after the root walk.
    public init(trustedRoot bytes: [UInt8], referenceTime: Date = Date()) throws(TUFError) {
        // Parsed once per process for the same bytes (ParsedMetadata), as every file is.
        let root = try SignedRoot(bytes: bytes, maxLength: Self.maxRootLength)
        try root.verify(role: .root, delegator: root.body)
        try Self.checkHasSuccessor(root)
        self.root = root
        self.referenceTime = referenceTime
    }

    /// Resumes from state persisted by an earlier run (client cache), as `Updater` loads it:
    /// timestamp, then snapshot as the rollback floor, then targets if that snapshot is the
    /// one the timestamp names. A file that fails its checks is dropped, so a cache edited on
    /// disk cannot widen trust.
    public init(trustedRoot: [UInt8], timestamp: [UInt8]?, snapshot: [UInt8]?, targets: [UInt8]?, referenceTime: Date = Date()) throws(TUFError) {
        try self.init(trustedRoot: trustedRoot, referenceTime: referenceTime)
        if let timestamp { try? loadCachedTimestamp(timestamp) }
        if let snapshot { try? loadCachedSnapshot(snapshot) }
        if let targets { try? loadCachedTargets(targets) }
    }

    /// Spec 5.3.4–5.3.8: the next root must be version N+1, signed by a threshold of the
    /// old root's root keys and of its own. Expiry of intermediate roots does not matter.
    public mutating func updateRoot(_ bytes: [UInt8]) throws(TUFError) {
        guard timestamp == nil else { throw .malformed(role: "root", reason: "root must be updated before timestamp") }
        let new = try SignedRoot(bytes: bytes, maxLength: Self.maxRootLength)
        try new.verify(role: .root, delegator: root.body)
        guard new.body.version == root.body.version + 1 else {
            throw .versionMismatch(role: "root", expected: root.body.version + 1, got: new.body.version)
        }
        try new.verify(role: .root, delegator: new.body)
        try Self.checkHasSuccessor(new)
        root = new
    }

    /// Clients look for root N+1 after root N (`Updater`, python-tuf),
    /// so a root at the largest version is refused rather than trusted and overflowed on.
    private static func checkHasSuccessor(_ root: SignedRoot) throws(TUFError) {
        guard root.body.version < Int64.max else {
            throw .malformed(role: "root", reason: "version \(root.body.version) leaves no version for the next root")
        }
    }

    /// Spec 5.3.10 then 5.4: the final root may not be expired; the timestamp must be signed,
    /// unexpired and never older than the one trusted.
    @discardableResult
    public mutating func updateTimestamp(_ bytes: [UInt8]) throws(TUFError) -> Bool {
        try updateTimestamp(bytes, allowExpired: false)
    }

    /// A timestamp from the cache: the same checks except expiry (an expired file is still a
    /// floor against rollback, as in python-tuf).
    public mutating func loadCachedTimestamp(_ bytes: [UInt8]) throws(TUFError) {
        guard timestamp == nil else { throw .malformed(role: "timestamp", reason: "a cached timestamp loads before any other") }
        try updateTimestamp(bytes, allowExpired: true)
    }

    @discardableResult
    private mutating func updateTimestamp(_ bytes: [UInt8], allowExpired: Bool) throws(TUFError) -> Bool {
        guard allowExpired || !root.body.isExpired(at: referenceTime) else { throw .expired(role: "root", expires: TUFTime.format(root.body.expires)) }
        let new = try SignedTimestamp(bytes: bytes, maxLength: Self.maxTimestampLength)
        try new.verify(role: .timestamp, delegator: root.body)
        if let old = timestamp {
            guard new.body.version >= old.body.version else {
                throw .rollback(role: "timestamp", trusted: old.body.version, offered: new.body.version)
            }
            guard new.body.snapshot.version >= old.body.snapshot.version else {
                throw .rollback(role: "snapshot", trusted: old.body.snapshot.version, offered: new.body.snapshot.version)
            }
            if new.body.version == old.body.version {
                // Same version: nothing changed, keep what we have (python-tuf does the same).
                guard allowExpired || !old.body.isExpired(at: referenceTime) else { throw .expired(role: "timestamp", expires: TUFTime.format(old.body.expires)) }
                return false
            }
        }
        guard allowExpired || !new.body.isExpired(at: referenceTime) else { throw .expired(role: "timestamp", expires: TUFTime.format(new.body.expires)) }
        timestamp = new
        // A snapshot the new timestamp does not name stays as the rollback floor; the targets
        // it named are no longer current.
        if !hasFinalSnapshot { dropTargets() }
        return true
    }


    /// Spec 5.5: length and hashes as pinned by timestamp, signed, the version timestamp
    /// names, no role going backwards from the snapshot trusted so far, not expired.
    public mutating func updateSnapshot(_ bytes: [UInt8]) throws(TUFError) {
        guard let timestamp else { throw .missingRole("timestamp") }
        let pin = timestamp.body.snapshot
        try check(bytes, against: pin, what: "snapshot metadata")
        let new = try SignedSnapshot(bytes: bytes, maxLength: Self.maxSnapshotLength)
        try new.verify(role: .snapshot, delegator: root.body)
        guard new.body.version == pin.version else { throw .versionMismatch(role: "snapshot", expected: pin.version, got: new.body.version) }
        if let old = snapshot {
            for (name, oldMeta) in old.body.meta {
                guard let newMeta = new.body.meta[name] else { throw .malformed(role: "snapshot", reason: "\(name) disappeared from snapshot") }
                guard newMeta.version >= oldMeta.version else { throw .rollback(role: name, trusted: oldMeta.version, offered: newMeta.version) }
            }
        }
        guard !new.body.isExpired(at: referenceTime) else { throw .expired(role: "snapshot", expires: TUFTime.format(new.body.expires)) }
        snapshot = new
        snapshotBytes = bytes
        dropTargets()
    }

    /// Spec 5.5.5 across runs: the cached snapshot is trusted as the rollback floor once its
    /// signatures verify under the current root, even when it is expired or no longer the
    /// version the (newer) timestamp names. Dropping it then would let the next download
    /// roll targets back: a timestamp stored on one sync whose snapshot was refused would
    /// otherwise erase the floor for the retry (python-tuf loads it with `trusted=True`).
    public mutating func loadCachedSnapshot(_ bytes: [UInt8]) throws(TUFError) {
        guard timestamp != nil else { throw .missingRole("timestamp") }
        guard snapshot == nil else { throw .malformed(role: "snapshot", reason: "a cached snapshot loads before any other") }
        let cached = try SignedSnapshot(bytes: bytes, maxLength: Self.maxSnapshotLength)
        try cached.verify(role: .snapshot, delegator: root.body)
        snapshot = cached
        snapshotBytes = bytes
        dropTargets()
    }

    /// Whether the trusted snapshot is the one the timestamp names (version, and length and
    /// hashes where pinned), so it need not be downloaded again.
    public var hasFinalSnapshot: Bool {
        guard let pin = timestamp?.body.snapshot, let snapshot, let snapshotBytes, snapshot.body.version == pin.version else { return false }
        return (try? check(snapshotBytes, against: pin, what: "snapshot metadata")) != nil
    }

    /// Spec 5.6: as pinned by snapshot, signed, the version snapshot names, not expired.
    public mutating func updateTargets(_ bytes: [UInt8]) throws(TUFError) {
        try updateTargets(bytes, allowExpired: false)
    }

    /// Targets from the cache: as `updateTargets` except expiry.
    public mutating func loadCachedTargets(_ bytes: [UInt8]) throws(TUFError) {
        try updateTargets(bytes, allowExpired: true)
    }

    /// Only under the final snapshot: the targets a floor snapshot names are about to be replaced.
    private mutating func updateTargets(_ bytes: [UInt8], allowExpired: Bool) throws(TUFError) {
        guard let snapshot, hasFinalSnapshot else { throw .missingRole("snapshot") }
        guard let pin = snapshot.body.meta["targets.json"] else { throw .malformed(role: "snapshot", reason: "no targets.json") }
        try check(bytes, against: pin, what: "targets metadata")
        let new = try SignedTargets(bytes: bytes, maxLength: Self.maxTargetsLength)
        try new.verify(role: .targets, delegator: root.body)
        guard new.body.version == pin.version else { throw .versionMismatch(role: "targets", expected: pin.version, got: new.body.version) }
        guard allowExpired || !new.body.isExpired(at: referenceTime) else { throw .expired(role: "targets", expires: TUFTime.format(new.body.expires)) }
        targets = new
        delegatedTargets = [:]
        delegatedFloors = [:]
    }

    private mutating func dropTargets() {
        targets = nil
        delegatedTargets = [:]
        delegatedFloors = [:]
    }

    /// Spec 5.6.7's step for one delegated role, as for targets: pinned by snapshot
    /// `meta["{role}.json"]` (version, and length and hashes where given), signed by a
    /// threshold of the keys `delegator` (a targets role already trusted) lists for it, never
    /// below a version trusted before (loaded, or the cache's floor), not expired. A role
    /// reached again from another delegator is checked against that delegator's keys too, so
    /// each delegator's word holds for its own delegation.
    @discardableResult
    public mutating func updateDelegatedTargets(_ bytes: [UInt8], role: String, delegator: String) throws(TUFError) -> SignedTargets {
        guard let snapshot, hasFinalSnapshot else { throw .missingRole("snapshot") }
        let (keys, threshold) = try delegatedVerifier(role, delegator: delegator)
        guard let pin = snapshot.body.meta["\(role).json"] else {
            throw .malformed(role: "snapshot", reason: "no \(role.debugSanitized).json for a delegated role")
        }
        try check(bytes, against: pin, what: "\(role) metadata")
        let new = try SignedTargets(bytes: bytes, maxLength: Self.maxTargetsLength)
        try new.verify(role: role, keys: keys, threshold: threshold)
        if let floor = [delegatedTargets[role]?.body.version, delegatedFloors[role]].compactMap({ $0 }).max(), new.body.version < floor {
            throw .rollback(role: role, trusted: floor, offered: new.body.version)
        }
        guard new.body.version == pin.version else { throw .versionMismatch(role: role, expected: pin.version, got: new.body.version) }
        guard !new.body.isExpired(at: referenceTime) else { throw .expired(role: role, expires: TUFTime.format(new.body.expires)) }
        delegatedTargets[role] = new
        return new
    }

    /// A delegated role from the client's cache, as python-tuf's `_load_targets` tries its
    /// local file before a download. Thrown when its signatures do not verify under
    /// `delegator`'s keys for it (edited, or signed by keys the delegator no longer lists):
    /// then it counts for nothing. Otherwise its version becomes the floor for the role's
    /// download, and it is trusted (returned) when it passes every check of
    /// `updateDelegatedTargets`; nil when it is not what snapshot pins now, or expired.
    /// The floor is more than python-tuf keeps: snapshot's rule already holds a role's version
    /// up, but only while the cached snapshot verifies, and a snapshot key rotation (or a
    /// cache restored in part) loses it.
    public mutating func loadCachedDelegatedTargets(_ bytes: [UInt8], role: String, delegator: String) throws(TUFError) -> SignedTargets? {
        guard hasFinalSnapshot else { throw .missingRole("snapshot") }
        let (keys, threshold) = try delegatedVerifier(role, delegator: delegator)
        let cached = try SignedTargets(bytes: bytes, maxLength: Self.maxTargetsLength)
        try cached.verify(role: role, keys: keys, threshold: threshold)
        delegatedFloors[role] = max(delegatedFloors[role] ?? cached.body.version, cached.body.version)
        return try? updateDelegatedTargets(bytes, role: role, delegator: delegator)
    }

    /// The delegated role `role` as loaded earlier, checked against `delegator`'s keys for
    /// it (the role may have been loaded through another delegator); nil when not loaded.
    public func loadedDelegatedTargets(_ role: String, delegator: String) throws(TUFError) -> SignedTargets? {
        guard let loaded = delegatedTargets[role] else { return nil }
        let (keys, threshold) = try delegatedVerifier(role, delegator: delegator)
        try loaded.verify(role: role, keys: keys, threshold: threshold)
        return loaded
    }

    /// The keys and threshold `delegator` (a targets role trusted now) lists for `role`.
    private func delegatedVerifier(_ role: String, delegator: String) throws(TUFError) -> (keys: [TUFKey], threshold: Int) {
        guard let parent = targetsRole(delegator) else { throw .missingRole(delegator) }
        guard let verifier = parent.body.delegations?.verifier(for: role) else {
            throw .malformed(role: delegator, reason: "it delegates nothing to \(role.debugSanitized)")
        }
        return verifier
    }

    /// A targets role trusted now: `targets`, or a delegated role the search loaded.
    public func targetsRole(_ name: String) -> SignedTargets? {
        name == Role.targets.rawValue ? targets : delegatedTargets[name]
    }

    /// The download cap for a delegated role's file, as `targetsLengthLimit` for targets.
    public func delegatedTargetsLengthLimit(_ role: String) -> Int {
        Self.limit(snapshot?.body.meta["\(role).json"]?.length, cap: Self.maxTargetsLength)
    }


    /// Spec 5.4–5.6 done: everything trusted agrees with the timestamp and nothing is
    /// expired, including the snapshot and targets kept from the cache because nothing changed.
    public func checkComplete() throws(TUFError) {
        guard let timestamp else { throw .missingRole("timestamp") }
        guard let snapshot, hasFinalSnapshot else { throw .missingRole("snapshot") }
        guard let targets else { throw .missingRole("targets") }
        for (role, expires) in [("timestamp", timestamp.body.expires), ("snapshot", snapshot.body.expires), ("targets", targets.body.expires)]
        where expires <= referenceTime {
            throw .expired(role: role, expires: TUFTime.format(expires))
        }
    }

    /// The size cap to apply when downloading the snapshot or targets file: the signed length
    /// where one is given, never more than the cap. A signed length is what the holder of an
    /// online key says; the cap is what this client can afford, whoever signed otherwise.
    public var snapshotLengthLimit: Int { Self.limit(timestamp?.body.snapshot.length, cap: Self.maxSnapshotLength) }
    public var targetsLengthLimit: Int { Self.limit(snapshot?.body.meta["targets.json"]?.length, cap: Self.maxTargetsLength) }

    static func limit(_ signed: Int?, cap: Int) -> Int { min(signed ?? cap, cap) }

    /// An entry of top-level targets only; the search through delegated roles is
    /// `Updater.targetInfo(path:in:)`.
    public func targetFile(_ path: String) throws(TUFError) -> TargetFile {
        guard let targets else { throw .missingRole("targets") }
        guard let file = targets.body.targets[path] else { throw .unknownTarget(path) }
        return file
    }

    private func check(_ bytes: [UInt8], against pin: MetaFile, what: String) throws(TUFError) {
        if let length = pin.length, bytes.count != length { throw .lengthMismatch(what: what, expected: length, got: bytes.count) }
        if let hashes = pin.hashes { try Hashes.verify(bytes, against: hashes, what: what) }
    }
}
