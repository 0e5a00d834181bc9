/// `{"signed": {...}, "signatures": [...]}` for one role. Keeps the exact `signed` JSON it
/// was parsed from, so verification covers what was received, not a re-encoding of our model.
public struct SignedMetadata<Body: RoleBody>: Sendable, Equatable {
    public let body: Body
    public let signedJSON: JSON
    public let signatures: [TUFSignature]

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
    }

    public init(bytes: [UInt8], maxLength: Int = 16 << 20) throws(TUFError) {
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
        let message = signedJSON.canonicalBytes
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
