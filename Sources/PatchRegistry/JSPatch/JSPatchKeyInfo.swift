import Foundation
import PatchCore

/// An app's JSPatch Loader key as the registry records it (the private key stays in the key
/// store): what `patchctl apps jspatch-key` prints and what the audit log names.
public struct JSPatchKeyInfo: Sendable, Equatable {
    public let app: AppName
    public let bits: Int
    /// PEM SubjectPublicKeyInfo (`BEGIN PUBLIC KEY`): what the app's `JPLoader.h` embeds.
    public let publicKeyPEM: String
    /// Hex SHA-256 of the DER SubjectPublicKeyInfo.
    public let publicKeySHA256: String
    public let createdAt: String
    public let createdBy: String

    public var json: JSON {
        ["app": .string(app.rawValue), "bits": .int(Int64(bits)), "publicKeySha256": .string(publicKeySHA256),
         "publicKeyPem": .string(publicKeyPEM), "createdAt": .string(createdAt), "createdBy": .string(createdBy)]
    }
}
