/// The four top-level TUF roles.
public enum Role: String, Sendable, CaseIterable, Codable {
    case root, targets, snapshot, timestamp
}

/// A public key as TUF lists it: `{"keytype":"ed25519","scheme":"ed25519","keyval":{"public":hex}}`.
public struct TUFKey: Sendable, Equatable {
    public let publicKey: Ed25519PublicKey
    /// sha256 hex of the canonical JSON of the key object (TUF spec 4.2), computed, never trusted.
    public let keyID: String

    public init(_ publicKey: Ed25519PublicKey) {
        self.publicKey = publicKey
        self.keyID = Digest.sha256Hex(TUFKey.json(publicKey).canonicalBytes)
    }

    public var json: JSON { TUFKey.json(publicKey) }

    private static func json(_ key: Ed25519PublicKey) -> JSON {
        ["keytype": "ed25519", "scheme": "ed25519", "keyval": ["public": .string(key.hex)]]
    }

    init(json: JSON, role: String) throws(TUFError) {
        guard json["keytype"]?.stringValue == "ed25519", json["scheme"]?.stringValue == "ed25519" else {
            throw .malformed(role: role, reason: "only ed25519 keys are supported")
        }
        guard let hex = json["keyval"]?["public"]?.stringValue, Hex.isLowercase(hex, byteCount: 32), let raw = Hex.decode(hex),
            let key = try? Ed25519PublicKey(rawRepresentation: raw) else {
            throw .malformed(role: role, reason: "an ed25519 public key must be 64 lowercase hex characters")
        }
        self.init(key)
    }
}

extension Ed25519PrivateKey {
    public var tufKey: TUFKey { TUFKey(publicKey) }
}

/// One entry of `signatures`.
public struct TUFSignature: Sendable, Equatable {
    public let keyID: String
    public let signature: [UInt8]

    public var json: JSON { ["keyid": .string(keyID), "sig": .string(Hex.encode(signature))] }
}
