import Foundation
import Locking

/// A public key as root lists it: the key object exactly as served, e.g.
/// `{"keytype":"ed25519","scheme":"ed25519","keyval":{"public":hex}}`, plus whatever else
/// the tool that wrote it added (an owner, the legacy `keyid_hash_algorithms`).
public struct TUFKey: Sendable, Equatable {
    /// sha256 hex of the canonical JSON of the whole key object, unknown members included
    /// (TUF spec 4.2: they are part of the canonical form); computed, never trusted.
    public let keyID: String
    /// The key object as served: re-serialised it gives the bytes its keyid and root's
    /// signatures cover.
    public let json: JSON
    public let keyType: String
    public let scheme: String
    /// What checks signatures; nil for a (keytype, scheme) hotpatch does not know, which
    /// is kept in root but never makes a valid signature.
    private let verifier: Verifier?

    private struct Verifier: Sendable {
        let key: PublicKey
        let algorithm: SignatureAlgorithm
    }

    public init(_ publicKey: Ed25519PublicKey) {
        self.init(ownKey: publicKey.key, algorithm: .ed25519, keyType: "ed25519", scheme: "ed25519", publicValue: publicKey.hex)
    }

    /// The key object of a key this process holds: nothing to check, and nothing added.
    package init(ownKey key: PublicKey, algorithm: SignatureAlgorithm, keyType: String, scheme: String, publicValue: String) {
        json = ["keytype": .string(keyType), "scheme": .string(scheme), "keyval": ["public": .string(publicValue)]]
        keyID = Digest.sha256Hex(json.canonicalBytes)
        self.keyType = keyType
        self.scheme = scheme
        verifier = Verifier(key: key, algorithm: algorithm)
    }

    /// A key object `{"keytype", "scheme", "keyval": {"public"}}` with nothing else.
    public init(keyType: String, scheme: String, publicValue: String) throws(TUFError) {
        try self.init(json: ["keytype": .string(keyType), "scheme": .string(scheme), "keyval": ["public": .string(publicValue)]])
    }

    /// Parses a key object. The members TUF requires must be there with the right types;
    /// a known (keytype, scheme) must carry a public key of that type, an unknown one is
    /// accepted as a key that cannot sign.
    public init(json: JSON, role: String = "root") throws(TUFError) {
        guard let keyType = json["keytype"]?.stringValue, let scheme = json["scheme"]?.stringValue,
            let keyval = json["keyval"], keyval.objectValue != nil else {
            throw .malformed(role: role, reason: "a key needs string keytype and scheme and an object keyval")
        }
        var verifier: Verifier?
        if let known = KeyScheme.lookup(keyType: keyType, scheme: scheme) {
            guard let value = keyval["public"]?.stringValue else {
                throw .malformed(role: role, reason: "a \(keyType.debugSanitized) key needs keyval.public")
            }
            do { verifier = Verifier(key: try known.publicKey(value), algorithm: known.algorithm) } catch {
                throw .malformed(role: role, reason: error.reason)
            }
        }
        self.keyID = Digest.sha256Hex(json.canonicalBytes)
        self.json = json
        self.keyType = keyType
        self.scheme = scheme
        self.verifier = verifier
    }

    /// False for a key whose (keytype, scheme) hotpatch cannot verify.
    public var isSupported: Bool { verifier != nil }

    /// The DER SubjectPublicKeyInfo of the key, nil when unsupported: two key objects that
    /// differ only in text (an extra member, another scheme) hold the same key, and a
    /// threshold counts keys, not key objects.
    public var keyMaterial: [UInt8]? { verifier?.key.spki }

    /// Through the verification seam, with the key the backend parsed once, at init: a sync
    /// checks several signatures per key, and parsing per signature showed in the client bench.
    /// A check that passed is remembered for the process (`VerifiedSignatures`, by its exact
    /// inputs), so the cached metadata a no-change sync re-reads costs no signature math.
    public func isValidSignature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
        guard let verifier else { return false }
        let entry = VerifiedSignatures.Entry(keyType: keyType, scheme: scheme, key: verifier.key.spki, signature: signature, message: message)
        if VerifiedSignatures.shared.contains(entry) { return true }
        guard verifier.key.isValidSignature(signature, for: message, algorithm: verifier.algorithm) else { return false }
        VerifiedSignatures.shared.insert(entry)
        return true
    }

    public static func == (lhs: TUFKey, rhs: TUFKey) -> Bool { lhs.json == rhs.json }
}

/// Signature checks this process has already done and that passed, by their exact inputs:
/// the key (type, scheme and DER key bytes), the signature bytes and the whole message.
/// A check is a pure function of those, so a hit is the same answer the math would give
/// again; anything that differs in one byte (a cache file edited on disk, another key, a
/// new file) is checked afresh. Every caller still runs every check (threshold counting,
/// versions, expiry, hashes); only the curve arithmetic of an identical check is not
/// repeated. Without it a no-change sync spent half its instructions re-verifying the same
/// five signatures: the pinned root, the cached and the served timestamp (the same bytes),
/// the cached snapshot and targets (issue 23). Failures are never remembered. Bounded: at
/// most `capacity` entries of messages up to `maxMessage` bytes (~4 MiB in all), emptied
/// when full.
final class VerifiedSignatures: Sendable {
    struct Entry: Hashable, Sendable {
        let keyType: String
        let scheme: String
        let key: ExactBytes
        let signature: ExactBytes
        let message: ExactBytes

        init(keyType: String, scheme: String, key: [UInt8], signature: [UInt8], message: [UInt8]) {
            self.keyType = keyType
            self.scheme = scheme
            self.key = ExactBytes(key)
            self.signature = ExactBytes(signature)
            self.message = ExactBytes(message)
        }
    }

    static let shared = VerifiedSignatures()
    static let capacity = 64
    static let maxMessage = 64 << 10

    private let entries = Locked(Set<Entry>())

    func contains(_ entry: Entry) -> Bool {
        guard entry.message.bytes.count <= Self.maxMessage else { return false }
        return entries.withLock { $0.contains(entry) }
    }

    func insert(_ entry: Entry) {
        guard entry.message.bytes.count <= Self.maxMessage else { return }
        entries.withLock { entries in
            if entries.count >= Self.capacity { entries.removeAll(keepingCapacity: true) }
            entries.insert(entry)
        }
    }

    /// Forgets every check (tests that count real verifications).
    func removeAll() { entries.withLock { $0.removeAll() } }
}

/// A private key that signs TUF metadata: it knows its public key object and makes the
/// signature bytes its scheme defines.
public protocol TUFSigner: Sendable {
    var tufKey: TUFKey { get }
    func signature(for message: [UInt8]) throws(CryptoError) -> [UInt8]
}

/// One entry of `signatures`.
public struct TUFSignature: Sendable, Equatable {
    public let keyID: String
    public let signature: [UInt8]

    public init(keyID: String, signature: [UInt8]) {
        self.keyID = keyID
        self.signature = signature
    }

    public var json: JSON { ["keyid": .string(keyID), "sig": .string(Hex.encode(signature))] }
}
