import Foundation
internal import CCrypto

/// How a signature is made, in the terms OpenSSL needs to check one: the schemes
/// securesystemslib signs TUF metadata with (docs/PROTOCOL.md, section 3).
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
/// signatures. `spki` is its DER SubjectPublicKeyInfo: the same key has one `spki` however
/// its text was written, which is what threshold counting compares.
public struct PublicKey: Sendable {
    private let box: PKeyBox
    public let spki: [UInt8]

    /// A PEM SubjectPublicKeyInfo (`BEGIN PUBLIC KEY`).
    public init(pem: [UInt8]) throws(CryptoError) {
        try self.init(PKeyBox(publicPEM: pem))
    }

    /// The 32 raw bytes of an RFC 8032 Ed25519 public key.
    public init(ed25519 raw: [UInt8]) throws(CryptoError) {
        guard raw.count == 32 else { throw .invalidKey("an Ed25519 public key is 32 bytes, got \(raw.count)") }
        guard let pkey = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nil, raw, raw.count) else {
            throw CryptoError.fromOpenSSL("EVP_PKEY_new_raw_public_key")
        }
        // RFC 8410's SubjectPublicKeyInfo is a fixed prefix and the 32 bytes: what i2d_PUBKEY
        // writes (PublicKeyTests), without OpenSSL 3's encoder lookup, which cost ~0.9M
        // instructions per key and every sync parses the pinned root's keys (issue 23).
        self.box = PKeyBox(pkey)
        self.spki = Self.ed25519SPKIPrefix + raw
    }

    /// `SEQUENCE { SEQUENCE { OID 1.3.101.112 }, BIT STRING (32 bytes) }` up to the key bytes.
    static let ed25519SPKIPrefix: [UInt8] = [0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00]

    private init(_ box: PKeyBox) throws(CryptoError) {
        self.box = box
        self.spki = try box.publicKeyDER()
    }

    /// The DER SubjectPublicKeyInfo as OpenSSL's encoder writes it (tests compare it with `spki`).
    var encodedSPKI: [UInt8] { (try? box.publicKeyDER()) ?? [] }

    public var isEd25519: Bool { box.baseID == EVP_PKEY_ED25519 }
    public var isRSA: Bool { box.baseID == EVP_PKEY_RSA }
    /// The curve of an EC key (`prime256v1`, `secp384r1`, `secp521r1`), nil for any other key.
    public var ecCurve: String? { box.baseID == EVP_PKEY_EC ? box.groupName : nil }
    /// The modulus size of an RSA key, the field size of an EC key.
    public var bitCount: Int { box.bits }

    /// True only when `signature` is a valid signature of `message` under `algorithm`;
    /// any failure (wrong key type for the algorithm, malformed signature) is false.
    public func isValidSignature(_ signature: [UInt8], for message: [UInt8], algorithm: SignatureAlgorithm) -> Bool {
        guard let ctx = EVP_MD_CTX_new() else { return false }
        defer {
            EVP_MD_CTX_free(ctx)
            // A refusal leaves reasons on the thread's queue; a later failure must not report them.
            ERR_clear_error()
        }
        var pctx: OpaquePointer?
        switch algorithm {
        case .ed25519:
            guard isEd25519, signature.count == 64, EVP_DigestVerifyInit(ctx, nil, nil, nil, box.pointer) == 1 else { return false }
        case .ecdsa(let digest):
            guard box.baseID == EVP_PKEY_EC, EVP_DigestVerifyInit(ctx, nil, digest.md, nil, box.pointer) == 1 else { return false }
        case .rsaPSS(let digest):
            guard isRSA, EVP_DigestVerifyInit(ctx, &pctx, digest.md, nil, box.pointer) == 1, let pctx,
                EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) == 1,
                EVP_PKEY_CTX_set_rsa_mgf1_md(pctx, digest.md) == 1,
                EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_AUTO) == 1 else { return false }
        case .rsaPKCS1v15(let digest):
            guard isRSA, EVP_DigestVerifyInit(ctx, &pctx, digest.md, nil, box.pointer) == 1, let pctx,
                EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PADDING) == 1 else { return false }
        }
        return EVP_DigestVerify(ctx, signature, signature.count, message, message.count) == 1
    }
}
