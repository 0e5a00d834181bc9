import Foundation
import PatchCore
import PatchSigning

/// A complete TUF repository in memory: generated keys for every role and builders for
/// each role's signed file, so a test states only what differs from a good repository.
/// It is a value: copy it and replace a role's keys to model a key rotation.
struct TestRepository {
    /// The instant every test judges expiry against (2025-06-15T15:06:40Z).
    static let now = Date(timeIntervalSince1970: 1_750_000_000)
    static let inAYear = now.addingTimeInterval(365 * 86_400)
    static let yesterday = now.addingTimeInterval(-86_400)

    static let bundlePath = "2.3/1/main.js"
    static let bundle = "console.log('patched');\n".bytes

    var keys: [Role: [Ed25519PrivateKey]]
    var thresholds: [Role: Int]

    init(keysPerRole: [Role: Int] = [:], thresholds: [Role: Int] = [:]) throws {
        var keys: [Role: [Ed25519PrivateKey]] = [:]
        for role in Role.allCases {
            keys[role] = try (0..<(keysPerRole[role] ?? 1)).map { _ in try Ed25519PrivateKey.generate() }
        }
        self.keys = keys
        self.thresholds = thresholds
    }

    func keys(_ role: Role) -> [Ed25519PrivateKey] { keys[role, default: []] }

    /// The files of one consistent publication, as a client downloads them.
    struct Files {
        var root: [UInt8]
        var timestamp: [UInt8]
        var snapshot: [UInt8]
        var targets: [UInt8]
    }

    static func sign<Body: RoleBody>(_ body: Body, with keys: [Ed25519PrivateKey]) throws -> [UInt8] {
        try SignedMetadata(signing: body, with: keys).bytes
    }

    func rootBody(version: Int64 = 1, expires: Date = inAYear) -> RootBody {
        var tufKeys: [String: TUFKey] = [:]
        var roles: [Role: RoleKeys] = [:]
        for role in Role.allCases {
            let roleKeys = keys(role).map(\.tufKey)
            for key in roleKeys { tufKeys[key.keyID] = key }
            roles[role] = RoleKeys(keyIDs: roleKeys.map(\.keyID), threshold: thresholds[role] ?? 1)
        }
        return RootBody(common: CommonFields(version: version, expires: expires), keys: tufKeys, roles: roles)
    }

    func root(version: Int64 = 1, expires: Date = inAYear, signedBy signers: [Ed25519PrivateKey]? = nil) throws -> [UInt8] {
        try Self.sign(rootBody(version: version, expires: expires), with: signers ?? keys(.root))
    }

    func targetsBody(version: Int64 = 1, expires: Date = inAYear) -> TargetsBody {
        let digests = BundleDigests(of: Self.bundle)
        let file = TargetFile(length: digests.length, hashes: ["sha256": digests.sha256, "md5": digests.md5],
                              custom: ["rollout": 100])
        return TargetsBody(common: CommonFields(version: version, expires: expires), targets: [Self.bundlePath: file])
    }

    func targets(version: Int64 = 1, expires: Date = inAYear, signedBy signers: [Ed25519PrivateKey]? = nil) throws -> [UInt8] {
        try Self.sign(targetsBody(version: version, expires: expires), with: signers ?? keys(.targets))
    }

    func snapshot(version: Int64 = 1, pinning targets: MetaFile, expires: Date = inAYear,
                  signedBy signers: [Ed25519PrivateKey]? = nil) throws -> [UInt8] {
        let body = SnapshotBody(common: CommonFields(version: version, expires: expires), meta: ["targets.json": targets])
        return try Self.sign(body, with: signers ?? keys(.snapshot))
    }

    func timestamp(version: Int64 = 1, pinning snapshot: MetaFile, expires: Date = inAYear,
                   signedBy signers: [Ed25519PrivateKey]? = nil) throws -> [UInt8] {
        let body = TimestampBody(common: CommonFields(version: version, expires: expires), snapshot: snapshot)
        return try Self.sign(body, with: signers ?? keys(.timestamp))
    }

    /// A good publication: every file at `version`, each pinned by length and sha256.
    func files(version: Int64 = 1) throws -> Files {
        let targets = try targets(version: version)
        let snapshot = try snapshot(version: version, pinning: MetaFile(version: version, bytes: targets))
        let timestamp = try timestamp(version: version, pinning: MetaFile(version: version, bytes: snapshot))
        return Files(root: try root(), timestamp: timestamp, snapshot: snapshot, targets: targets)
    }

    /// A client that trusts this repository's version 1 root.
    func client(at time: Date = now) throws -> TrustedMetadata {
        try TrustedMetadata(trustedRoot: root(), referenceTime: time)
    }
}

extension Array where Element == UInt8 {
    /// The same bytes with one byte changed: a length-preserving tamper.
    func flippingByte(at index: Int) -> [UInt8] {
        var copy = self
        copy[index] ^= 0x01
        return copy
    }
}
