/// An Ed25519 public key: what TUF lists in root metadata and CryptoKit's
/// `Curve25519.Signing.PublicKey(rawRepresentation:)` accepts.
public struct Ed25519PublicKey: Sendable, Equatable {
    public let rawRepresentation: [UInt8]
    package let key: PublicKey

    public init(rawRepresentation raw: [UInt8]) throws(CryptoError) {
        self.key = try PublicKey(ed25519: raw)
        self.rawRepresentation = raw
    }

    public var hex: String { Hex.encode(rawRepresentation) }

    public func isValidSignature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
        key.isValidSignature(signature, for: message, algorithm: .ed25519)
    }

    public static func == (lhs: Ed25519PublicKey, rhs: Ed25519PublicKey) -> Bool {
        lhs.rawRepresentation == rhs.rawRepresentation
    }
}
