import Foundation

/// Encryption of patch bundles: AES-256-GCM whose associated data binds the ciphertext to
/// one app, app version and patch number, so a bundle cannot be replayed under another.
/// Devices only open; `seal` is PatchSigning's (the registry's side).
public enum BundleCipher {
    public static let algorithm = "A256GCM"

    public static func associatedData(app: String, appVersion: String, patch: Int) -> [UInt8] {
        Array("hotpatch/v1|\(app)|\(appVersion)|\(patch)".utf8)
    }

    /// The id under which targets metadata names a content key: sha256 hex of its bytes.
    public static func keyID(_ key: [UInt8]) -> String { Digest.sha256Hex(key) }

    /// Through the verification seam (CryptoKit on Apple platforms): `nonce(12) || ciphertext || tag(16)`.
    public static func open(_ combined: [UInt8], key: [UInt8], app: String, appVersion: String, patch: Int) throws(CryptoError) -> [UInt8] {
        try AESGCM.open(combined, key: key, aad: associatedData(app: app, appVersion: appVersion, patch: patch))
    }

    /// Parses a content key file: 64 hex characters, optionally followed by a newline.
    public static func parseKeyFile(_ bytes: [UInt8]) throws(CryptoError) -> [UInt8] {
        let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.utf8.count == 64, let key = Hex.decode(text) else {
            throw .invalidKey("a content key file holds 64 hex characters")
        }
        return key
    }
}
