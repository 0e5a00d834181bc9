/// The (keytype, scheme) pairs of TUF key objects that hotpatch verifies, named as
/// securesystemslib names them, and how `keyval.public` is written for each. A pair not
/// in this table is an unknown key: it is kept in root (and hashed for its keyid) but
/// makes no valid signature (docs/PROTOCOL.md, section 3).
struct KeyScheme: Sendable {
    let algorithm: SignatureAlgorithm
    let encoding: Encoding

    enum Encoding: Sendable {
        /// 64 lowercase hex characters: the raw RFC 8032 public key.
        case ed25519Hex
        /// PEM SubjectPublicKeyInfo of a key on this curve (OpenSSL's name for it).
        case ecPEM(curve: String)
        /// PEM SubjectPublicKeyInfo of an RSA key.
        case rsaPEM
    }

    /// RSA keys under this size are refused: they no longer resist factoring for the years a root lives.
    static let minimumRSABits = 2048

    static func lookup(keyType: String, scheme: String) -> KeyScheme? {
        switch (keyType, scheme) {
        case ("ed25519", "ed25519"): return KeyScheme(algorithm: .ed25519, encoding: .ed25519Hex)
        // "ecdsa" is the keytype; securesystemslib still reads the older spelling where the
        // keytype repeats the scheme.
        case ("ecdsa", "ecdsa-sha2-nistp256"), ("ecdsa-sha2-nistp256", "ecdsa-sha2-nistp256"):
            return KeyScheme(algorithm: .ecdsa(.sha256), encoding: .ecPEM(curve: "prime256v1"))
        case ("ecdsa", "ecdsa-sha2-nistp384"), ("ecdsa-sha2-nistp384", "ecdsa-sha2-nistp384"):
            return KeyScheme(algorithm: .ecdsa(.sha384), encoding: .ecPEM(curve: "secp384r1"))
        case ("ecdsa", "ecdsa-sha2-nistp521"), ("ecdsa-sha2-nistp521", "ecdsa-sha2-nistp521"):
            return KeyScheme(algorithm: .ecdsa(.sha512), encoding: .ecPEM(curve: "secp521r1"))
        case ("rsa", "rsassa-pss-sha256"): return KeyScheme(algorithm: .rsaPSS(.sha256), encoding: .rsaPEM)
        case ("rsa", "rsassa-pss-sha384"): return KeyScheme(algorithm: .rsaPSS(.sha384), encoding: .rsaPEM)
        case ("rsa", "rsassa-pss-sha512"): return KeyScheme(algorithm: .rsaPSS(.sha512), encoding: .rsaPEM)
        case ("rsa", "rsa-pkcs1v15-sha256"): return KeyScheme(algorithm: .rsaPKCS1v15(.sha256), encoding: .rsaPEM)
        case ("rsa", "rsa-pkcs1v15-sha384"): return KeyScheme(algorithm: .rsaPKCS1v15(.sha384), encoding: .rsaPEM)
        case ("rsa", "rsa-pkcs1v15-sha512"): return KeyScheme(algorithm: .rsaPKCS1v15(.sha512), encoding: .rsaPEM)
        default: return nil
        }
    }

    /// The public key `keyval.public` holds, checked against what the scheme requires.
    func publicKey(_ value: String) throws(KeyProblem) -> PublicKey {
        switch encoding {
        case .ed25519Hex:
            guard Hex.isLowercase(value, byteCount: 32), let raw = Hex.decode(value), let key = try? PublicKey(ed25519: raw) else {
                throw KeyProblem("an ed25519 public key must be 64 lowercase hex characters")
            }
            return key
        case .ecPEM(let curve):
            guard let key = try? PublicKey(pem: Array(value.utf8)), let found = key.ecCurve else {
                throw KeyProblem("an ecdsa public key must be a PEM SubjectPublicKeyInfo of an EC key")
            }
            guard found == curve else { throw KeyProblem("the ecdsa key is on \(found), its scheme needs \(curve)") }
            return key
        case .rsaPEM:
            guard let key = try? PublicKey(pem: Array(value.utf8)), key.isRSA else {
                throw KeyProblem("an rsa public key must be a PEM SubjectPublicKeyInfo of an RSA key")
            }
            guard key.bitCount >= KeyScheme.minimumRSABits else {
                throw KeyProblem("the rsa key has \(key.bitCount) bits; at least \(KeyScheme.minimumRSABits) are required")
            }
            return key
        }
    }

    struct KeyProblem: Error {
        let reason: String
        init(_ reason: String) { self.reason = reason }
    }
}
