import Foundation
import PatchCore
import PatchSigning
import Testing

/// The client workflow of TUF spec 5.3–5.6, one threat per test.
@Suite("Trusted metadata update workflow")
struct TrustedMetadataTests {
    typealias Repo = TestRepository

    /// A client that has accepted `files` in order.
    private func client(_ repo: Repo, loading files: Repo.Files, at time: Date = Repo.now) throws -> TrustedMetadata {
        var client = try repo.client(at: time)
        try client.updateTimestamp(files.timestamp)
        try client.updateSnapshot(files.snapshot)
        try client.updateTargets(files.targets)
        return client
    }

    @Test("accepts a good chain and the target it describes")
    func acceptsGoodChain() throws {
        let repo = try Repo()
        let files = try repo.files()
        var client = try repo.client()
        #expect(try client.updateTimestamp(files.timestamp))
        try client.updateSnapshot(files.snapshot)
        try client.updateTargets(files.targets)
        let target = try client.targetFile(Repo.bundlePath)
        try target.verify(Repo.bundle, path: Repo.bundlePath)
        #expect(target.custom == ["rollout": 100])
        #expect(throws: TUFError.unknownTarget("2.3/9/main.js")) { try client.targetFile("2.3/9/main.js") }
    }

    @Test("accepts thresholds above one when enough distinct keys sign")
    func acceptsThreshold() throws {
        let repo = try Repo(keysPerRole: [.root: 3, .timestamp: 2], thresholds: [.root: 2, .timestamp: 2])
        var client = try TrustedMetadata(trustedRoot: repo.root(signedBy: Array(repo.keys(.root).prefix(2))), referenceTime: Repo.now)
        let snapshotPin = MetaFile(version: 1, bytes: try repo.files().snapshot)
        try client.updateTimestamp(repo.timestamp(pinning: snapshotPin))
    }

    @Test("refuses metadata signed by a key the role does not list")
    func refusesWrongKey() throws {
        let repo = try Repo()
        let files = try repo.files()
        var client = try repo.client()
        let pin = MetaFile(version: 1, bytes: files.snapshot)
        let forged = try repo.timestamp(pinning: pin, signedBy: repo.keys(.snapshot))
        #expect(throws: TUFError.unsignedThreshold(role: "timestamp", valid: 0, threshold: 1)) { try client.updateTimestamp(forged) }
        let outsider = try repo.timestamp(pinning: pin, signedBy: [Ed25519PrivateKey.generate()])
        #expect(throws: TUFError.unsignedThreshold(role: "timestamp", valid: 0, threshold: 1)) { try client.updateTimestamp(outsider) }

        let targets = try repo.targets(signedBy: repo.keys(.root))
        let snapshot = try repo.snapshot(pinning: MetaFile(version: 1), signedBy: repo.keys(.snapshot))
        var fresh = try repo.client()
        try fresh.updateTimestamp(repo.timestamp(pinning: MetaFile(version: 1, bytes: snapshot)))
        try fresh.updateSnapshot(snapshot)
        #expect(throws: TUFError.unsignedThreshold(role: "targets", valid: 0, threshold: 1)) { try fresh.updateTargets(targets) }
    }

    @Test("refuses metadata signed by fewer keys than the threshold")
    func refusesBelowThreshold() throws {
        let repo = try Repo(keysPerRole: [.timestamp: 3], thresholds: [.timestamp: 2])
        var client = try repo.client()
        let pin = MetaFile(version: 1, bytes: try repo.files().snapshot)
        let once = try repo.timestamp(pinning: pin, signedBy: [repo.keys(.timestamp)[0]])
        #expect(throws: TUFError.unsignedThreshold(role: "timestamp", valid: 1, threshold: 2)) { try client.updateTimestamp(once) }
    }

    @Test("refuses an initial root that its own keys did not sign")
    func refusesUnsignedTrustedRoot() throws {
        let repo = try Repo()
        let unsigned = try repo.root(signedBy: repo.keys(.targets))
        #expect(throws: TUFError.unsignedThreshold(role: "root", valid: 0, threshold: 1)) {
            try TrustedMetadata(trustedRoot: unsigned, referenceTime: Repo.now)
        }
    }

    @Test("refuses an expired timestamp, snapshot or targets")
    func refusesExpired() throws {
        let repo = try Repo()
        let files = try repo.files()
        var client = try repo.client()
        let stale = try repo.timestamp(pinning: MetaFile(version: 1, bytes: files.snapshot), expires: Repo.yesterday)
        #expect(throws: TUFError.expired(role: "timestamp", expires: TUFTime.format(Repo.yesterday))) { try client.updateTimestamp(stale) }
        // Expiry at exactly the reference time counts as expired.
        let expiring = try repo.timestamp(pinning: MetaFile(version: 1, bytes: files.snapshot), expires: Repo.now)
        #expect(throws: TUFError.self) { try client.updateTimestamp(expiring) }

        let oldSnapshot = try repo.snapshot(pinning: MetaFile(version: 1, bytes: files.targets), expires: Repo.yesterday)
        try client.updateTimestamp(repo.timestamp(pinning: MetaFile(version: 1, bytes: oldSnapshot)))
        #expect(throws: TUFError.expired(role: "snapshot", expires: TUFTime.format(Repo.yesterday))) { try client.updateSnapshot(oldSnapshot) }

        let oldTargets = try repo.targets(expires: Repo.yesterday)
        let snapshot = try repo.snapshot(pinning: MetaFile(version: 1, bytes: oldTargets))
        var other = try repo.client()
        try other.updateTimestamp(repo.timestamp(pinning: MetaFile(version: 1, bytes: snapshot)))
        try other.updateSnapshot(snapshot)
        #expect(throws: TUFError.expired(role: "targets", expires: TUFTime.format(Repo.yesterday))) { try other.updateTargets(oldTargets) }
    }

    @Test("refuses to go on when the final root has expired")
    func refusesExpiredRoot() throws {
        let repo = try Repo()
        var client = try TrustedMetadata(trustedRoot: repo.root(expires: Repo.yesterday), referenceTime: Repo.now)
        #expect(throws: TUFError.expired(role: "root", expires: TUFTime.format(Repo.yesterday))) {
            try client.updateTimestamp(repo.files().timestamp)
        }
    }

    @Test("refuses a timestamp older than the trusted one and keeps an equal one")
    func refusesTimestampRollback() throws {
        let repo = try Repo()
        let v2 = try repo.files(version: 2)
        let v1 = try repo.files(version: 1)
        var client = try repo.client()
        #expect(try client.updateTimestamp(v2.timestamp))
        #expect(throws: TUFError.rollback(role: "timestamp", trusted: 2, offered: 1)) { try client.updateTimestamp(v1.timestamp) }
        #expect(try client.updateTimestamp(v2.timestamp) == false)
        #expect(client.timestamp?.body.version == 2)
    }

    @Test("refuses a newer timestamp that points to an older snapshot")
    func refusesSnapshotRollbackInTimestamp() throws {
        let repo = try Repo()
        var client = try repo.client()
        try client.updateTimestamp(repo.timestamp(version: 1, pinning: MetaFile(version: 5)))
        let rollback = try repo.timestamp(version: 2, pinning: MetaFile(version: 4))
        #expect(throws: TUFError.rollback(role: "snapshot", trusted: 5, offered: 4)) { try client.updateTimestamp(rollback) }
    }

    @Test("refuses a snapshot whose version is not the one timestamp names")
    func refusesSnapshotVersionMismatch() throws {
        let repo = try Repo()
        let files = try repo.files()
        var client = try repo.client()
        // Pinned by version only, so the version check is the one that must catch it.
        try client.updateTimestamp(repo.timestamp(pinning: MetaFile(version: 2)))
        #expect(throws: TUFError.versionMismatch(role: "snapshot", expected: 2, got: 1)) { try client.updateSnapshot(files.snapshot) }
    }

    @Test("refuses a snapshot that does not match the length or hash timestamp pins")
    func refusesSnapshotNotMatchingPin() throws {
        let repo = try Repo()
        let files = try repo.files()
        var client = try repo.client()
        try client.updateTimestamp(files.timestamp)
        let length = files.snapshot.count
        #expect(throws: TUFError.lengthMismatch(what: "snapshot metadata", expected: length, got: length + 1)) {
            try client.updateSnapshot(files.snapshot + [0x20])
        }
        // Same length, other bytes: the pinned hash is checked before anything is parsed.
        let tampered = files.snapshot.flippingByte(at: length - 10)
        #expect(throws: TUFError.hashMismatch(what: "snapshot metadata", algorithm: "sha256")) { try client.updateSnapshot(tampered) }
        try client.updateSnapshot(files.snapshot)
    }

    @Test("refuses targets whose version, length or hash differ from what snapshot pins")
    func refusesTargetsNotMatchingPin() throws {
        let repo = try Repo()
        let files = try repo.files()
        var client = try repo.client()
        try client.updateTimestamp(files.timestamp)
        try client.updateSnapshot(files.snapshot)
        let length = files.targets.count
        #expect(throws: TUFError.lengthMismatch(what: "targets metadata", expected: length, got: length - 1)) {
            try client.updateTargets(Array(files.targets.dropLast()))
        }
        #expect(throws: TUFError.hashMismatch(what: "targets metadata", algorithm: "sha256")) {
            try client.updateTargets(files.targets.flippingByte(at: length - 10))
        }
        #expect(throws: TUFError.missingRole("targets")) { try client.targetFile(Repo.bundlePath) }

        let unpinned = try repo.snapshot(pinning: MetaFile(version: 2))
        var other = try repo.client()
        try other.updateTimestamp(repo.timestamp(pinning: MetaFile(version: 1, bytes: unpinned)))
        try other.updateSnapshot(unpinned)
        #expect(throws: TUFError.versionMismatch(role: "targets", expected: 2, got: 1)) { try other.updateTargets(files.targets) }
    }

    @Test("checks sha512 pins of snapshot and targets metadata, and every listed hash of a target")
    func checksSHA512() throws {
        let repo = try Repo()
        let targets = try repo.targets()
        let snapshot = try repo.snapshot(pinning: MetaFile(version: 1, length: targets.count, hashes: ["sha512": Hex.encode(Digest.hash(.sha512, targets))]))
        let sha512Only = MetaFile(version: 1, length: snapshot.count, hashes: ["sha512": Hex.encode(Digest.hash(.sha512, snapshot))])
        var client = try repo.client()
        try client.updateTimestamp(repo.timestamp(pinning: sha512Only))
        #expect(throws: TUFError.hashMismatch(what: "snapshot metadata", algorithm: "sha512")) {
            try client.updateSnapshot(snapshot.flippingByte(at: snapshot.count - 10))
        }
        try client.updateSnapshot(snapshot)
        #expect(throws: TUFError.hashMismatch(what: "targets metadata", algorithm: "sha512")) {
            try client.updateTargets(targets.flippingByte(at: targets.count - 10))
        }
        try client.updateTargets(targets)

        let bundle = Repo.bundle
        let digests = BundleDigests(of: bundle)
        let sha512 = Hex.encode(Digest.hash(.sha512, bundle))
        try TargetFile(length: bundle.count, hashes: ["sha512": sha512]).verify(bundle, path: "p")
        try TargetFile(length: bundle.count, hashes: ["sha256": digests.sha256, "sha512": sha512, "md5": digests.md5]).verify(bundle, path: "p")
        // Every listed hash must match: a good sha256 does not excuse a wrong sha512.
        let wrong512 = String(repeating: "0", count: 128)
        #expect(throws: TUFError.hashMismatch(what: "target p", algorithm: "sha512")) {
            try TargetFile(length: bundle.count, hashes: ["sha256": digests.sha256, "sha512": wrong512]).verify(bundle, path: "p")
        }
    }

    @Test("refuses a file listed only by md5, or by any algorithm hotpatch does not compute")
    func refusesWeakOrUnknownHashes() throws {
        let bundle = Repo.bundle
        let digests = BundleDigests(of: bundle)
        #expect(throws: TUFError.uncheckableHashes(what: "target p", reason: "its hashes list no sha256, sha384 or sha512 (md5 alone is refused)")) {
            try TargetFile(length: bundle.count, hashes: ["md5": digests.md5]).verify(bundle, path: "p")
        }
        for unknown in ["blake2b-256", "sha3-256", "SHA256"] {
            #expect(throws: TUFError.uncheckableHashes(what: "target p", reason: "unsupported hash algorithm \(unknown)")) {
                try TargetFile(length: bundle.count, hashes: ["sha256": digests.sha256, unknown: digests.sha256]).verify(bundle, path: "p")
            }
        }
        // The same rule for metadata pins: an md5-only pin of snapshot refuses the snapshot.
        let repo = try Repo()
        let files = try repo.files()
        var client = try repo.client()
        try client.updateTimestamp(repo.timestamp(version: 2, pinning: MetaFile(version: 1, length: files.snapshot.count, hashes: ["md5": Digest.md5Hex(files.snapshot)])))
        #expect(throws: TUFError.uncheckableHashes(what: "snapshot metadata", reason: "its hashes list no sha256, sha384 or sha512 (md5 alone is refused)")) {
            try client.updateSnapshot(files.snapshot)
        }
    }

    @Test("refuses a snapshot in which a role's version goes down")
    func refusesRoleRollbackInSnapshot() throws {
        let repo = try Repo()
        var client = try repo.client()
        let first = try repo.snapshot(version: 1, pinning: MetaFile(version: 3))
        try client.updateTimestamp(repo.timestamp(version: 1, pinning: MetaFile(version: 1, bytes: first)))
        try client.updateSnapshot(first)
        let second = try repo.snapshot(version: 2, pinning: MetaFile(version: 2))
        try client.updateTimestamp(repo.timestamp(version: 2, pinning: MetaFile(version: 2, bytes: second)))
        #expect(throws: TUFError.rollback(role: "targets.json", trusted: 3, offered: 2)) { try client.updateSnapshot(second) }
    }

    @Test("enforces the order timestamp, snapshot, targets")
    func enforcesOrder() throws {
        let repo = try Repo()
        let files = try repo.files()
        var client = try repo.client()
        #expect(throws: TUFError.missingRole("timestamp")) { try client.updateSnapshot(files.snapshot) }
        #expect(throws: TUFError.missingRole("snapshot")) { try client.updateTargets(files.targets) }
        try client.updateTimestamp(files.timestamp)
        #expect(throws: TUFError.self) { try client.updateRoot(repo.root(version: 2)) }
    }

    @Test("accepts a key rotation cross-signed by the old and new root keys")
    func acceptsRootRotation() throws {
        let old = try Repo()
        var new = old
        new.keys[.root] = [try Ed25519PrivateKey.generate()]
        new.keys[.timestamp] = [try Ed25519PrivateKey.generate()]
        var client = try old.client()
        try client.updateRoot(new.root(version: 2, signedBy: old.keys(.root) + new.keys(.root)))
        #expect(client.root.body.version == 2)

        let files = try new.files()
        try client.updateTimestamp(files.timestamp)
        let staleKey = try old.timestamp(version: 2, pinning: MetaFile(version: 1, bytes: files.snapshot))
        #expect(throws: TUFError.unsignedThreshold(role: "timestamp", valid: 0, threshold: 1)) { try client.updateTimestamp(staleKey) }
    }

    @Test("refuses a new root not signed by the old root keys, or not by its own")
    func refusesRootWithoutCrossSigning() throws {
        let old = try Repo()
        var new = old
        new.keys[.root] = [try Ed25519PrivateKey.generate()]
        var client = try old.client()
        #expect(throws: TUFError.unsignedThreshold(role: "root", valid: 0, threshold: 1)) {
            try client.updateRoot(new.root(version: 2, signedBy: new.keys(.root)))
        }
        #expect(throws: TUFError.unsignedThreshold(role: "root", valid: 0, threshold: 1)) {
            try client.updateRoot(new.root(version: 2, signedBy: old.keys(.root)))
        }
        #expect(client.root.body.version == 1)
    }

    @Test("refuses a root that skips a version or repeats one")
    func refusesRootVersionSkip() throws {
        let repo = try Repo()
        var client = try repo.client()
        #expect(throws: TUFError.versionMismatch(role: "root", expected: 2, got: 3)) { try client.updateRoot(repo.root(version: 3)) }
        #expect(throws: TUFError.versionMismatch(role: "root", expected: 2, got: 1)) { try client.updateRoot(repo.root(version: 1)) }
        try client.updateRoot(repo.root(version: 2))
        try client.updateRoot(repo.root(version: 3))
        #expect(client.root.body.version == 3)
    }

    @Test("walks through an expired intermediate root to a valid one")
    func acceptsExpiredIntermediateRoot() throws {
        let repo = try Repo()
        var client = try repo.client()
        try client.updateRoot(repo.root(version: 2, expires: Repo.yesterday))
        try client.updateRoot(repo.root(version: 3))
        try client.updateTimestamp(repo.files().timestamp)
    }

    @Test("resumes from a cache, re-checking every file and dropping those that fail")
    func resumesFromCache() throws {
        let repo = try Repo()
        let files = try repo.files()
        let resumed = try TrustedMetadata(trustedRoot: files.root, timestamp: files.timestamp, snapshot: files.snapshot,
                                          targets: files.targets, referenceTime: Repo.now)
        #expect(try resumed.targetFile(Repo.bundlePath) == client(repo, loading: files).targetFile(Repo.bundlePath))

        let forged = try repo.timestamp(pinning: MetaFile(version: 1, bytes: files.snapshot), signedBy: repo.keys(.targets))
        let dropped = try TrustedMetadata(trustedRoot: files.root, timestamp: forged, snapshot: files.snapshot, targets: files.targets,
                                          referenceTime: Repo.now)
        #expect(dropped.timestamp == nil && dropped.snapshot == nil && dropped.targets == nil)
        let badTargets = try repo.targets(signedBy: repo.keys(.snapshot))
        let partial = try TrustedMetadata(trustedRoot: files.root, timestamp: files.timestamp, snapshot: files.snapshot,
                                          targets: badTargets, referenceTime: Repo.now)
        #expect(partial.snapshot != nil)
        #expect(partial.targets == nil)
    }

    @Test("spec 5.5.5 across runs: a cached snapshot the stored timestamp no longer names stays the rollback floor")
    func cachedSnapshotStaysRollbackFloor() throws {
        let repo = try Repo()
        let floor = try repo.snapshot(version: 1, pinning: MetaFile(version: 3))
        let rolledBack = try repo.snapshot(version: 2, pinning: MetaFile(version: 2))
        // The first run stored timestamp v2 and refused the snapshot it names; the cache now
        // holds timestamp v2 and snapshot v1, whose version no longer matches the pin.
        let timestamp = try repo.timestamp(version: 2, pinning: MetaFile(version: 2, bytes: rolledBack))
        var resumed = try TrustedMetadata(trustedRoot: repo.root(), timestamp: timestamp, snapshot: floor, targets: nil, referenceTime: Repo.now)
        #expect(resumed.snapshot?.body.version == 1, "the cached snapshot is kept as the floor")
        #expect(!resumed.hasFinalSnapshot)
        #expect(throws: TUFError.missingRole("snapshot")) { try resumed.checkComplete() }
        #expect(throws: TUFError.missingRole("snapshot"), "no targets under a floor snapshot") { try resumed.updateTargets(repo.targets(version: 3)) }
        #expect(throws: TUFError.rollback(role: "targets.json", trusted: 3, offered: 2)) { try resumed.updateSnapshot(rolledBack) }

        // The same with a meta entry removed instead of rolled back.
        let withDelegation = SnapshotBody(common: CommonFields(version: 1, expires: Repo.inAYear),
                                          meta: ["targets.json": MetaFile(version: 1), "extra.json": MetaFile(version: 1)])
        let dropped = try repo.snapshot(version: 2, pinning: MetaFile(version: 1))
        var other = try TrustedMetadata(trustedRoot: repo.root(), timestamp: repo.timestamp(version: 2, pinning: MetaFile(version: 2, bytes: dropped)),
                                        snapshot: Repo.sign(withDelegation, with: repo.keys(.snapshot)), targets: nil, referenceTime: Repo.now)
        #expect(throws: TUFError.malformed(role: "snapshot", reason: "extra.json disappeared from snapshot")) { try other.updateSnapshot(dropped) }

        // A cached snapshot that is expired still floors; one signed by another key does not load.
        let expired = try repo.snapshot(version: 1, pinning: MetaFile(version: 3), expires: Repo.yesterday)
        var stale = try TrustedMetadata(trustedRoot: repo.root(), timestamp: timestamp, snapshot: expired, targets: nil, referenceTime: Repo.now)
        #expect(throws: TUFError.rollback(role: "targets.json", trusted: 3, offered: 2)) { try stale.updateSnapshot(rolledBack) }
        let forged = try repo.snapshot(version: 1, pinning: MetaFile(version: 3), signedBy: repo.keys(.targets))
        let unsigned = try TrustedMetadata(trustedRoot: repo.root(), timestamp: timestamp, snapshot: forged, targets: nil, referenceTime: Repo.now)
        #expect(unsigned.snapshot == nil)
    }

    @Test("a signed length above the cap is cut to the cap (the holder of an online key cannot lift it)")
    func signedLengthsCapped() throws {
        let repo = try Repo()
        var client = try repo.client()
        let huge = 1_000_000_000_000
        let snapshot = try repo.snapshot(pinning: MetaFile(version: 1, length: huge))
        try client.updateTimestamp(repo.timestamp(pinning: MetaFile(version: 1, length: huge)))
        #expect(client.snapshotLengthLimit == TrustedMetadata.maxSnapshotLength)
        var other = try repo.client()
        try other.updateTimestamp(repo.timestamp(pinning: MetaFile(version: 1, bytes: snapshot)))
        try other.updateSnapshot(snapshot)
        #expect(other.targetsLengthLimit == TrustedMetadata.maxTargetsLength)
    }

    @Test("caps downloads at the pinned length or the default limits")
    func lengthLimits() throws {
        let repo = try Repo()
        let files = try repo.files()
        var client = try repo.client()
        #expect(client.snapshotLengthLimit == TrustedMetadata.maxSnapshotLength)
        try client.updateTimestamp(files.timestamp)
        #expect(client.snapshotLengthLimit == files.snapshot.count)
        try client.updateSnapshot(files.snapshot)
        #expect(client.targetsLengthLimit == files.targets.count)
    }
}
