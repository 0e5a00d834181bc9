internal import CCrypto
import PatchCore

/// A private key the registry signs metadata with: the Ed25519 keys hotpatch generates, or
/// an ECDSA P-256 key imported as an app's root key (the kind hardware tokens hold).
/// Stored as PKCS#8 PEM; reading a PEM gives back the same kind.
public enum SigningKey: TUFSigner {
    case ed25519(Ed25519PrivateKey)
    case ecdsa(ECDSAPrivateKey)

    /// An unencrypted PEM private key of either kind (PKCS#8, or SEC1 `EC PRIVATE KEY`).
    public init(pem: [UInt8]) throws(CryptoError) {
        let box = try PKeyBox(privatePEM: pem)
        switch box.baseID {
        case EVP_PKEY_ED25519: self = .ed25519(try Ed25519PrivateKey(box))
        case EVP_PKEY_EC: self = .ecdsa(try ECDSAPrivateKey(box))
        default: throw .invalidKey("expected an Ed25519 or ECDSA P-256 private key, got another type (\(box.bits) bits)")
        }
    }

    public static func generateEd25519() throws(CryptoError) -> SigningKey { .ed25519(try Ed25519PrivateKey.generate()) }

    public var tufKey: TUFKey {
        switch self {
        case .ed25519(let key): return key.tufKey
        case .ecdsa(let key): return key.tufKey
        }
    }

    public func signature(for message: [UInt8]) throws(CryptoError) -> [UInt8] {
        switch self {
        case .ed25519(let key): return try key.signature(for: message)
        case .ecdsa(let key): return try key.signature(for: message)
        }
    }

    public func pemRepresentation() throws(CryptoError) -> [UInt8] {
        switch self {
        case .ed25519(let key): return try key.pemRepresentation()
        case .ecdsa(let key): return try key.pemRepresentation()
        }
    }
}

extension Ed25519PrivateKey: TUFSigner {
    public var tufKey: TUFKey { TUFKey(publicKey) }
}

extension ECDSAPrivateKey: TUFSigner {
    /// `{"keytype":"ecdsa","scheme":"ecdsa-sha2-nistp256","keyval":{"public":PEM}}`, the
    /// object securesystemslib's `SSlibKey.from_crypto` makes for the same key (same keyid).
    public var tufKey: TUFKey {
        TUFKey(ownKey: publicKey, algorithm: .ecdsa(.sha256), keyType: "ecdsa", scheme: "ecdsa-sha2-nistp256", publicValue: publicKeyPEM)
    }
}
