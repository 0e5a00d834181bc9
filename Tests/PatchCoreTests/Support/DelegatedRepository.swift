import Foundation
import PatchCore
import PatchSigning

/// A `TestRepository` whose top-level targets delegate: the test names each delegation and
/// what each role lists, and `publish()` signs every role, pins each in snapshot (version,
/// length, sha256) and serves `{V}.{role}.json` as a consistent-snapshot repository does.
struct DelegatedRepository {
    var repo: TestRepository
    /// Every targets role by name, `targets` included.
    var bodies: [String: TargetsBody]
    var signers: [String: [Ed25519PrivateKey]]
    /// Replaces the pin `publish()` computes for a role (a test of a mismatching snapshot).
    var pins: [String: MetaFile] = [:]
    var snapshotVersion: Int64 = 1

    init() throws {
        repo = try TestRepository()
        bodies = ["targets": TargetsBody(common: CommonFields(version: 1, expires: TestRepository.inAYear), targets: [:])]
        signers = ["targets": repo.keys(.targets)]
    }

    /// A patch-shaped entry; what is in it does not matter to the search.
    static func file(_ text: String = "patch") -> TargetFile {
        let digests = BundleDigests(of: Array(text.utf8))
        return TargetFile(length: digests.length, hashes: ["sha256": digests.sha256], custom: ["rollout": 100])
    }

    /// `delegator` delegates `name` to `keys` (new keys when nil); the role starts empty
    /// and is signed with those keys.
    @discardableResult
    mutating func delegate(_ name: String, from delegator: String = "targets", scope: DelegatedRole.Scope,
                           terminating: Bool = false, threshold: Int = 1, keys: [Ed25519PrivateKey]? = nil) throws -> [Ed25519PrivateKey] {
        let keys = try keys ?? [Ed25519PrivateKey.generate()]
        var body = bodies[delegator]!
        var delegations = body.delegations ?? Delegations(keys: [:], roles: [])
        for key in keys { delegations.keys[key.tufKey.keyID] = key.tufKey }
        delegations.roles.append(DelegatedRole(name: name, keyIDs: keys.map(\.tufKey.keyID), threshold: threshold,
                                               scope: scope, terminating: terminating))
        body.delegations = delegations
        bodies[delegator] = body
        if bodies[name] == nil {
            bodies[name] = TargetsBody(common: CommonFields(version: 1, expires: TestRepository.inAYear), targets: [:])
            signers[name] = keys
        }
        return keys
    }

    mutating func list(_ path: String, in role: String, _ file: TargetFile = file()) {
        bodies[role]!.targets[path] = file
    }

    /// The metadata files of this publication by name, as `Updater` asks for them.
    func metadataFiles() throws -> [String: [UInt8]] {
        var files: [String: [UInt8]] = ["1.root.json": try repo.root()]
        var meta: [String: MetaFile] = [:]
        for (name, body) in bodies {
            let bytes = try TestRepository.sign(body, with: signers[name] ?? [])
            let pin = pins[name] ?? MetaFile(version: body.version, bytes: bytes)
            meta["\(name).json"] = pin
            let fileName = name.addingPercentEncoding(withAllowedCharacters: Self.unreserved) ?? name
            files["\(pin.version).\(fileName).json"] = bytes
        }
        let snapshot = try TestRepository.sign(SnapshotBody(common: CommonFields(version: snapshotVersion, expires: TestRepository.inAYear), meta: meta),
                                               with: repo.keys(.snapshot))
        files["\(snapshotVersion).snapshot.json"] = snapshot
        files["timestamp.json"] = try repo.timestamp(version: snapshotVersion, pinning: MetaFile(version: snapshotVersion, bytes: snapshot))
        return files
    }

    static let unreserved = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-~")

    func publish() throws -> MemoryRepository { MemoryRepository(metadataFiles: try metadataFiles()) }

    /// An updater over `source`, trusting this repository's root, and what `refresh` trusted.
    func refreshed(_ source: MemoryRepository, limits: Updater.Limits = Updater.Limits()) async throws -> (Updater, TrustedMetadata) {
        let updater = Updater(fetcher: source, pinnedRoot: try repo.root(), limits: limits)
        return (updater, try await updater.refresh(now: TestRepository.now))
    }
}
