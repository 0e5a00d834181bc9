import Foundation

/// The fields every role shares. `extra` keeps members we do not model so a document
/// from another implementation re-serialises to the bytes its signatures cover.
public struct CommonFields: Sendable, Equatable {
    public static let specVersion = "1.0.31"

    public var version: Int64
    public var expires: Date
    public var specVersion: String
    public var extra: [String: JSON]

    public init(version: Int64, expires: Date, specVersion: String = CommonFields.specVersion, extra: [String: JSON] = [:]) {
        self.version = version
        self.expires = expires
        self.specVersion = specVersion
        self.extra = extra
    }

    static let modelled: Set<String> = ["_type", "version", "expires", "spec_version"]

    init(json: [String: JSON], role: Role, modelled roleFields: Set<String>) throws(TUFError) {
        guard let type = json["_type"]?.stringValue else { throw .malformed(role: role.rawValue, reason: "missing _type") }
        guard type == role.rawValue else { throw .wrongType(expected: role.rawValue, got: type) }
        guard let version = json["version"]?.intValue, version >= 1 else {
            throw .malformed(role: role.rawValue, reason: "version must be an integer >= 1")
        }
        guard let expiresText = json["expires"]?.stringValue, let expires = TUFTime.parse(expiresText) else {
            throw .malformed(role: role.rawValue, reason: "expires must be YYYY-MM-DDTHH:MM:SSZ")
        }
        // As python-tuf: two or three dot-separated numbers, major version 1.
        guard let spec = json["spec_version"]?.stringValue,
            case let parts = spec.split(separator: ".", omittingEmptySubsequences: false), (2...3).contains(parts.count),
            parts.allSatisfy({ !$0.isEmpty && $0.utf8.allSatisfy { (0x30...0x39).contains($0) } }), parts[0] == "1" else {
            throw .malformed(role: role.rawValue, reason: "spec_version must be 1.0 or 1.0.x")
        }
        self.version = version
        self.expires = expires
        self.specVersion = spec
        self.extra = json.filter { !CommonFields.modelled.contains($0.key) && !roleFields.contains($0.key) }
    }

    func json(role: Role, adding members: [String: JSON]) -> JSON {
        var out = extra
        out["_type"] = .string(role.rawValue)
        out["version"] = .int(version)
        out["expires"] = .string(TUFTime.format(expires))
        out["spec_version"] = .string(specVersion)
        for (key, value) in members { out[key] = value }
        return .object(out)
    }
}

/// What a role body must provide to live in a signed envelope.
public protocol RoleBody: Sendable, Equatable {
    static var role: Role { get }
    var common: CommonFields { get set }
    init(signed: JSON) throws(TUFError)
    var signedJSON: JSON { get }
}

extension RoleBody {
    public var version: Int64 {
        get { common.version }
        set { common.version = newValue }
    }
    public var expires: Date {
        get { common.expires }
        set { common.expires = newValue }
    }
    public func isExpired(at now: Date) -> Bool { expires <= now }
}

/// `{"keyids": [...], "threshold": n}` for one role in root.
public struct RoleKeys: Sendable, Equatable {
    public var keyIDs: [String]
    public var threshold: Int

    public init(keyIDs: [String], threshold: Int = 1) {
        self.keyIDs = keyIDs
        self.threshold = threshold
    }
}

public struct RootBody: RoleBody {
    public static let role = Role.root
    public var common: CommonFields
    public var consistentSnapshot: Bool
    public var keys: [String: TUFKey]
    public var roles: [Role: RoleKeys]

    public init(common: CommonFields, consistentSnapshot: Bool = true, keys: [String: TUFKey], roles: [Role: RoleKeys]) {
        self.common = common
        self.consistentSnapshot = consistentSnapshot
        self.keys = keys
        self.roles = roles
    }

    public init(signed: JSON) throws(TUFError) {
        guard let object = signed.objectValue else { throw .malformed(role: "root", reason: "signed is not an object") }
        common = try CommonFields(json: object, role: .root, modelled: ["consistent_snapshot", "keys", "roles"])
        guard let consistent = object["consistent_snapshot"]?.boolValue else {
            throw .malformed(role: "root", reason: "consistent_snapshot must be a boolean")
        }
        consistentSnapshot = consistent
        guard let keyObjects = object["keys"]?.objectValue else { throw .malformed(role: "root", reason: "keys must be an object") }
        var keys: [String: TUFKey] = [:]
        for (keyID, keyJSON) in keyObjects {
            let key = try TUFKey(json: keyJSON, role: "root")
            guard key.keyID == keyID else { throw .malformed(role: "root", reason: "keyid \(keyID.debugSanitized) does not match its key") }
            keys[keyID] = key
        }
        self.keys = keys
        guard let roleObjects = object["roles"]?.objectValue, Set(roleObjects.keys) == Set(Role.allCases.map(\.rawValue)) else {
            throw .malformed(role: "root", reason: "roles must list exactly root, targets, snapshot and timestamp")
        }
        var roles: [Role: RoleKeys] = [:]
        for (name, roleJSON) in roleObjects {
            guard let ids = roleJSON["keyids"]?.arrayValue?.compactMap(\.stringValue), ids.count == roleJSON["keyids"]?.arrayValue?.count,
                Set(ids).count == ids.count, let threshold = roleJSON["threshold"]?.intValue, threshold >= 1, threshold <= 1_000 else {
                throw .malformed(role: "root", reason: "role \(name) needs unique keyids and a threshold >= 1")
            }
            roles[Role(rawValue: name)!] = RoleKeys(keyIDs: ids, threshold: Int(threshold))
        }
        self.roles = roles
    }

    public var signedJSON: JSON {
        var keyObjects: [String: JSON] = [:]
        for (id, key) in keys { keyObjects[id] = key.json }
        var roleObjects: [String: JSON] = [:]
        for (role, entry) in roles {
            roleObjects[role.rawValue] = ["keyids": .array(entry.keyIDs.map { .string($0) }), "threshold": .int(Int64(entry.threshold))]
        }
        return common.json(role: .root, adding: [
            "consistent_snapshot": .bool(consistentSnapshot), "keys": .object(keyObjects), "roles": .object(roleObjects),
        ])
    }

    /// The keys and threshold that must sign metadata of `role`.
    public func verifier(for role: Role) throws(TUFError) -> (keys: [TUFKey], threshold: Int) {
        guard let entry = roles[role] else { throw .malformed(role: "root", reason: "no \(role.rawValue) role") }
        return (entry.keyIDs.compactMap { keys[$0] }, entry.threshold)
    }
}

/// A `meta` entry in timestamp or snapshot: the version of the file it pins, and
/// optionally its length and hashes.
public struct MetaFile: Sendable, Equatable {
    public var version: Int64
    public var length: Int?
    public var hashes: [String: String]?

    public init(version: Int64, length: Int? = nil, hashes: [String: String]? = nil) {
        self.version = version
        self.length = length
        self.hashes = hashes
    }

    /// A pin for a metadata file we serve: its version, length and sha256.
    public init(version: Int64, bytes: [UInt8]) {
        self.init(version: version, length: bytes.count, hashes: ["sha256": Digest.sha256Hex(bytes)])
    }

    init(json: JSON, role: String) throws(TUFError) {
        guard let version = json["version"]?.intValue, version >= 1 else { throw .malformed(role: role, reason: "meta version must be >= 1") }
        self.version = version
        if let length = json["length"] {
            guard let value = length.intValue, value >= 0 else { throw .malformed(role: role, reason: "meta length must be >= 0") }
            self.length = Int(value)
        }
        if let hashes = json["hashes"] {
            self.hashes = try Hashes.parse(hashes, role: role)
        }
    }

    var json: JSON {
        var out: [String: JSON] = ["version": .int(version)]
        if let length { out["length"] = .int(Int64(length)) }
        if let hashes { out["hashes"] = Hashes.json(hashes) }
        return .object(out)
    }
}

enum Hashes {
    static func parse(_ json: JSON, role: String) throws(TUFError) -> [String: String] {
        guard let object = json.objectValue, !object.isEmpty else { throw .malformed(role: role, reason: "hashes must be a non-empty object") }
        var out: [String: String] = [:]
        for (algorithm, value) in object {
            guard let hex = value.stringValue else { throw .malformed(role: role, reason: "hash \(algorithm) must be a string") }
            out[algorithm] = hex
        }
        return out
    }

    static func json(_ hashes: [String: String]) -> JSON { .object(hashes.mapValues { .string($0) }) }

    /// The rule for a file listed with several hashes (docs/PROTOCOL.md, section 5): every
    /// listed algorithm must be one hotpatch computes and every one must match. An unknown
    /// algorithm refuses the file, as in python-tuf, because skipping it would let whoever
    /// writes the list choose which hash gets checked; and at least one must be
    /// collision-resistant (sha256, sha384, sha512), because md5 alone binds nothing.
    static func verify(_ bytes: [UInt8], against hashes: [String: String], what: String) throws(TUFError) {
        var listed: [(name: String, algorithm: DigestAlgorithm, expected: String)] = []
        for (name, expected) in hashes.sorted(by: { $0.key < $1.key }) {
            guard let algorithm = DigestAlgorithm(rawValue: name) else {
                throw .uncheckableHashes(what: what, reason: "unsupported hash algorithm \(name.debugSanitized)")
            }
            listed.append((name, algorithm, expected))
        }
        guard listed.contains(where: { $0.algorithm.isStrong }) else {
            throw .uncheckableHashes(what: what, reason: "its hashes list no sha256, sha384 or sha512 (md5 alone is refused)")
        }
        for entry in listed where Hex.encode(Verification.crypto.digest(entry.algorithm, bytes)) != entry.expected.lowercased() {
            throw .hashMismatch(what: what, algorithm: entry.name)
        }
    }
}

public struct TimestampBody: RoleBody {
    public static let role = Role.timestamp
    public var common: CommonFields
    public var snapshot: MetaFile

    public init(common: CommonFields, snapshot: MetaFile) {
        self.common = common
        self.snapshot = snapshot
    }

    public init(signed: JSON) throws(TUFError) {
        guard let object = signed.objectValue else { throw .malformed(role: "timestamp", reason: "signed is not an object") }
        common = try CommonFields(json: object, role: .timestamp, modelled: ["meta"])
        guard let meta = object["meta"]?.objectValue, meta.count == 1, let entry = meta["snapshot.json"] else {
            throw .malformed(role: "timestamp", reason: "meta must hold exactly snapshot.json")
        }
        snapshot = try MetaFile(json: entry, role: "timestamp")
    }

    public var signedJSON: JSON { common.json(role: .timestamp, adding: ["meta": ["snapshot.json": snapshot.json]]) }
}

public struct SnapshotBody: RoleBody {
    public static let role = Role.snapshot
    public var common: CommonFields
    public var meta: [String: MetaFile]

    public init(common: CommonFields, meta: [String: MetaFile]) {
        self.common = common
        self.meta = meta
    }

    public init(signed: JSON) throws(TUFError) {
        guard let object = signed.objectValue else { throw .malformed(role: "snapshot", reason: "signed is not an object") }
        common = try CommonFields(json: object, role: .snapshot, modelled: ["meta"])
        guard let entries = object["meta"]?.objectValue, entries["targets.json"] != nil else {
            throw .malformed(role: "snapshot", reason: "meta must hold targets.json")
        }
        var meta: [String: MetaFile] = [:]
        for (name, entry) in entries { meta[name] = try MetaFile(json: entry, role: "snapshot") }
        self.meta = meta
    }

    public var signedJSON: JSON { common.json(role: .snapshot, adding: ["meta": .object(meta.mapValues(\.json))]) }
}

/// One entry of `targets`: length, hashes of the served bytes, and hotpatch's `custom`.
public struct TargetFile: Sendable, Equatable {
    public var length: Int
    public var hashes: [String: String]
    public var custom: JSON?

    public init(length: Int, hashes: [String: String], custom: JSON? = nil) {
        self.length = length
        self.hashes = hashes
        self.custom = custom
    }

    init(json: JSON, path: String) throws(TUFError) {
        guard let length = json["length"]?.intValue, length >= 0 else {
            throw .malformed(role: "targets", reason: "target \(path.debugSanitized) needs a length >= 0")
        }
        guard let hashes = json["hashes"] else { throw .malformed(role: "targets", reason: "target \(path.debugSanitized) needs hashes") }
        self.length = Int(length)
        self.hashes = try Hashes.parse(hashes, role: "targets")
        self.custom = json["custom"]
    }

    var json: JSON {
        var out: [String: JSON] = ["length": .int(Int64(length)), "hashes": Hashes.json(hashes)]
        if let custom { out["custom"] = custom }
        return .object(out)
    }

    public func verify(_ bytes: [UInt8], path: String) throws(TUFError) {
        guard bytes.count == length else { throw .lengthMismatch(what: "target \(path)", expected: length, got: bytes.count) }
        try Hashes.verify(bytes, against: hashes, what: "target \(path)")
    }
}

/// The top-level targets role and every delegated role alike (`_type` is `targets` for both).
public struct TargetsBody: RoleBody {
    public static let role = Role.targets
    public var common: CommonFields
    public var targets: [String: TargetFile]
    /// The roles this one delegates to, absent when it delegates nothing.
    public var delegations: Delegations?

    public init(common: CommonFields, targets: [String: TargetFile], delegations: Delegations? = nil) {
        self.common = common
        self.targets = targets
        self.delegations = delegations
    }

    public init(signed: JSON) throws(TUFError) {
        guard let object = signed.objectValue else { throw .malformed(role: "targets", reason: "signed is not an object") }
        common = try CommonFields(json: object, role: .targets, modelled: ["targets", "delegations"])
        guard let entries = object["targets"]?.objectValue else { throw .malformed(role: "targets", reason: "targets must be an object") }
        var targets: [String: TargetFile] = [:]
        for (path, entry) in entries { targets[path] = try TargetFile(json: entry, path: path) }
        self.targets = targets
        delegations = try object["delegations"].map { (json) throws(TUFError) in try Delegations(json: json, role: "targets") }
    }

    public var signedJSON: JSON {
        var members: [String: JSON] = ["targets": .object(targets.mapValues(\.json))]
        if let delegations { members["delegations"] = delegations.json }
        return common.json(role: .targets, adding: members)
    }
}
