/// How a signature is made: the schemes securesystemslib signs TUF metadata with
/// (docs/PROTOCOL.md, section 3).
public enum SignatureAlgorithm: Sendable, Equatable {
    /// RFC 8032 pure Ed25519: the 64-byte signature of the message itself.
    case ed25519
    /// ECDSA over the digest of the message; the signature is DER `SEQUENCE { r, s }`.
    case ecdsa(DigestAlgorithm)
    /// RSASSA-PSS with MGF1 over the same digest. The salt length is read from the
    /// signature, as `cryptography` does with `PSS.AUTO` (securesystemslib signs with a salt
    /// as long as the digest; other signers use the maximum).
    case rsaPSS(DigestAlgorithm)
    /// RSASSA-PKCS1-v1_5 with the DigestInfo of the digest.
    case rsaPKCS1v15(DigestAlgorithm)
}

/// A public key of any type root metadata lists (Ed25519, ECDSA, RSA), for checking
/// signatures through the verification seam. `spki` is its DER SubjectPublicKeyInfo: the
/// same key has one `spki` however its text was written, which is what threshold counting
/// compares.
public struct PublicKey: Sendable {
    public let info: SubjectPublicKeyInfo
    private let verifier: any SignatureVerifier

    /// A PEM SubjectPublicKeyInfo (`BEGIN PUBLIC KEY`).
    public init(pem: [UInt8]) throws(CryptoError) {
        try self.init(SubjectPublicKeyInfo(pem: pem))
    }

    /// The 32 raw bytes of an RFC 8032 Ed25519 public key.
    public init(ed25519 raw: [UInt8]) throws(CryptoError) {
        try self.init(SubjectPublicKeyInfo(ed25519: raw))
    }

    public init(_ info: SubjectPublicKeyInfo) throws(CryptoError) {
        self.info = info
        verifier = try Verification.crypto.verifier(for: info)
    }

    public var spki: [UInt8] { info.der }
    public var isEd25519: Bool { info.algorithm == .ed25519 }
    public var isRSA: Bool { info.algorithm == .rsa }
    /// The curve of an EC key (`prime256v1`, `secp384r1`, `secp521r1`), nil for any other key.
    public var ecCurve: String? {
        if case .ec(let curve) = info.algorithm { return curve.rawValue }
        return nil
    }
    /// The modulus size of an RSA key, the field size of an EC key.
    public var bitCount: Int { info.bitCount }

    public func isValidSignature(_ signature: [UInt8], for message: [UInt8], algorithm: SignatureAlgorithm) -> Bool {
        verifier.isValidSignature(signature, for: message, algorithm: algorithm)
    }
}
