import Foundation
import PatchCore
import PatchSigning

/// An RSA key accepted for JSPatch Loader packages, in the forms the registry stores:
/// the private PEM for the key file, the public PEM and its fingerprint for the registry.
struct JSPatchKeyMaterial {
    /// The sizes JPLoader's `SecKeyDecrypt` handles and the JSPatch tools produced
    /// (the demo packer used 1024 bits; new keys are 2048).
    static let allowedBits = 1024...4096

    let key: RSAPrivateKey
    let privatePEM: [UInt8]
    let publicPEM: String
    /// Hex SHA-256 of the DER SubjectPublicKeyInfo.
    let publicKeySHA256: String

    init(_ key: RSAPrivateKey) throws(RegistryError) {
        guard JSPatchKeyMaterial.allowedBits.contains(key.bitCount) else {
            throw .invalidInput("a \(key.bitCount)-bit RSA key is refused: JSPatch keys must be \(JSPatchKeyMaterial.allowedBits.lowerBound) to \(JSPatchKeyMaterial.allowedBits.upperBound) bits")
        }
        do {
            self.key = key
            privatePEM = try key.pemRepresentation()
            publicPEM = try key.publicKeyPEM()
            publicKeySHA256 = Digest.sha256Hex(try key.publicKeyDER())
        } catch { throw .crypto(error) }
    }

    /// What `app.create` and `app.jspatch` audit events record: never the key itself.
    var auditDetails: JSON {
        ["bits": .int(Int64(key.bitCount)), "publicKeySha256": .string(publicKeySHA256)]
    }

    /// Refuses the one combination the format cannot serve.
    static func checkApp(encrypted: Bool, app: AppName) throws(RegistryError) {
        if encrypted {
            throw .invalidInput("app \"\(app)\" is encrypted and JSPatch Loader cannot decrypt: JSPatch packages are only for plaintext apps (create a separate app without --encrypt)")
        }
    }
}
