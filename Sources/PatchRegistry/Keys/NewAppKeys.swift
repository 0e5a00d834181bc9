import Foundation
import PatchCore
import PatchSigning

/// The keys of an app being created, in memory until `KeyStore.install` puts them in place
/// inside the create's transaction. Made (or, for a root key, imported) before the write
/// lock is taken, so nothing slow runs under it.
struct NewAppKeys {
    var roles: [Role: SigningKey]
    /// AES-256 key of an encrypted app.
    var contentKey: [UInt8]?
    var jspatch: JSPatchKeyMaterial?

    /// New Ed25519 keys for every role, but the root when `rootKey` (imported) is given.
    static func generate(encrypted: Bool, jspatch: JSPatchKeyMaterial?, rootKey: SigningKey? = nil) throws(RegistryError) -> NewAppKeys {
        do {
            var roles: [Role: SigningKey] = [:]
            for role in Role.allCases {
                if role == .root, let rootKey { roles[role] = rootKey } else { roles[role] = try SigningKey.generateEd25519() }
            }
            let contentKey = encrypted ? try SecureRandom.bytes(AESGCM.keyByteCount) : nil
            return NewAppKeys(roles: roles, contentKey: contentKey, jspatch: jspatch)
        } catch { throw .crypto(error) }
    }

    var contentKeyID: String? { contentKey.map(BundleCipher.keyID) }

    func key(_ role: Role) throws(RegistryError) -> SigningKey {
        guard let key = roles[role] else { throw .internalError("no \(role.rawValue) key was made for the new app") }
        return key
    }

    /// Root v1: one key per role, threshold 1.
    func initialRoot(expires: Date) -> RootBody {
        RootBody(common: CommonFields(version: 1, expires: expires),
                 keys: Dictionary(uniqueKeysWithValues: roles.values.map { ($0.tufKey.keyID, $0.tufKey) }),
                 roles: roles.mapValues { RoleKeys(keyIDs: [$0.tufKey.keyID]) })
    }
}
