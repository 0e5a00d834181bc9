import Foundation
import Locking

/// `{"signed": {...}, "signatures": [...]}` for one role. Keeps the exact `signed` JSON it
/// was parsed from, so verification covers what was received, not a re-encoding of our model.
public struct SignedMetadata<Body: RoleBody>: Sendable, Equatable {
    public let body: Body
    public let signedJSON: JSON
    public let signatures: [TUFSignature]
    /// The canonical JSON of `signed`: what every signature is over, computed once.
    public let message: [UInt8]

    /// Signs `body` with every key given; signatures are ordered by keyid so the same
    /// inputs always give the same file.
    public init(signing body: Body, with keys: [any TUFSigner]) throws(CryptoError) {
        let signedJSON = body.signedJSON
        let message = signedJSON.canonicalBytes
        var signatures: [TUFSignature] = []
        for key in keys {
            signatures.append(TUFSignature(keyID: key.tufKey.keyID, signature: try key.signature(for: message)))
        }
        self.body = body
        self.signedJSON = signedJSON
        self.signatures = signatures.sorted { $0.keyID < $1.keyID }
        self.message = message
    }

    /// Parses `bytes`. The same bytes parse to the same value, so a file parsed before in this
    /// process (the cached metadata every sync reads again) is answered from `ParsedMetadata`,
    /// by its exact bytes, without parsing or canonicalising it again; every check of the
    /// value (signatures, threshold, versions, expiry) is still made by its caller.
    public init(bytes: [UInt8], maxLength: Int = 16 << 20) throws(TUFError) {
        if bytes.count <= maxLength, let parsed = ParsedMetadata.shared.value(for: bytes, as: Self.self) {
            self = parsed
            return
        }
        try self.init(parsing: bytes, maxLength: maxLength)
        ParsedMetadata.shared.insert(self, for: bytes)
    }

    private init(parsing bytes: [UInt8], maxLength: Int) throws(TUFError) {
        let json: JSON
        do { json = try JSONParser.parse(bytes, maxLength: maxLength) } catch {
            throw .malformed(role: Body.role.rawValue, reason: error.description)
        }
        guard let object = json.objectValue, let signed = object["signed"], let list = object["signatures"]?.arrayValue else {
            throw .malformed(role: Body.role.rawValue, reason: "expected {\"signed\": ..., \"signatures\": [...]}")
        }
        var signatures: [TUFSignature] = []
        for entry in list {
            guard let keyID = entry["keyid"]?.stringValue, let sigHex = entry["sig"]?.stringValue, let sig = Hex.decode(sigHex) else {
                throw .malformed(role: Body.role.rawValue, reason: "each signature needs a keyid and a hex sig")
            }
            signatures.append(TUFSignature(keyID: keyID, signature: sig))
        }
        guard Set(signatures.map(\.keyID)).count == signatures.count else {
            throw .malformed(role: Body.role.rawValue, reason: "duplicate keyid in signatures")
        }
        self.body = try Body(signed: signed)
        self.signedJSON = signed
        self.signatures = signatures
        self.message = signed.canonicalBytes
    }

    /// The file as served: canonical JSON with control characters escaped (`JSON.wireBytes`),
    /// so the same metadata is always the same bytes and every JSON parser reads them.
    public var bytes: [UInt8] {
        JSON.object(["signed": signedJSON, "signatures": .array(signatures.map(\.json))]).wireBytes
    }

    /// Counts distinct keys of the role that signed. A key counts once however often it
    /// appears: keyids differ when key objects differ in any member (item 8 of issue 10
    /// made extra members part of the keyid), so keys are told apart by their key material,
    /// and a root listing one key under two keyids cannot meet a threshold of two with it.
    /// Keys of a type hotpatch cannot verify sign nothing.
    public func validSignatureCount(keys: [TUFKey]) -> Int {
        var counted = Set<[UInt8]>()
        for key in keys {
            guard let material = key.keyMaterial, !counted.contains(material),
                let signature = signatures.first(where: { $0.keyID == key.keyID }) else { continue }
            if key.isValidSignature(signature.signature, for: message) { counted.insert(material) }
        }
        return counted.count
    }

    /// Throws unless a threshold of the role's keys in `root` signed this metadata.
    public func verify(role: Role, delegator root: RootBody) throws(TUFError) {
        let (keys, threshold) = try root.verifier(for: role)
        try verify(role: role.rawValue, keys: keys, threshold: threshold)
    }

    /// Throws unless `threshold` of `keys` signed this metadata (a delegated role's keys
    /// come from its delegator's `delegations`).
    public func verify(role: String, keys: [TUFKey], threshold: Int) throws(TUFError) {
        let valid = validSignatureCount(keys: keys)
        guard valid >= threshold else { throw .unsignedThreshold(role: role, valid: valid, threshold: threshold) }
    }
}

public typealias SignedRoot = SignedMetadata<RootBody>
public typealias SignedTimestamp = SignedMetadata<TimestampBody>
public typealias SignedSnapshot = SignedMetadata<SnapshotBody>
public typealias SignedTargets = SignedMetadata<TargetsBody>

/// Metadata files parsed in this process, by their exact bytes (a dictionary key compares
/// every byte), at most `capacity` files of at most `maxBytes` each, so a sync that reads its
/// cached timestamp, snapshot and targets again pays for neither the JSON parse nor the
/// canonical encoding of what it parsed before. Only successful parses are kept; a file that
/// differs in any byte is parsed afresh.
final class ParsedMetadata: Sendable {
    static let shared = ParsedMetadata()
    static let capacity = 32
    static let maxBytes = 64 << 10

    private struct Key: Hashable, Sendable {
        let type: ObjectIdentifier
        let bytes: ExactBytes
    }

    private let entries = Locked<[Key: any Sendable]>([:])

    func value<Value: Sendable>(for bytes: [UInt8], as type: Value.Type) -> Value? {
        guard bytes.count <= Self.maxBytes else { return nil }
        let key = Key(type: ObjectIdentifier(type), bytes: ExactBytes(bytes))
        return entries.withLock { $0[key] as? Value }
    }

    func insert<Value: Sendable>(_ value: Value, for bytes: [UInt8]) {
        guard bytes.count <= Self.maxBytes else { return }
        let key = Key(type: ObjectIdentifier(Value.self), bytes: ExactBytes(bytes))
        entries.withLock { entries in
            if entries.count >= Self.capacity { entries.removeAll(keepingCapacity: true) }
            entries[key] = value
        }
    }

    /// Forgets every file (tests that count real parses).
    func removeAll() { entries.withLock { $0.removeAll() } }
}
