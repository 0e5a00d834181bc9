import Foundation
import PatchCore
import PatchSigning

/// What `rotateKey` reports.
public struct KeyRotation: Sendable {
    public let role: Role
    public let oldKeyIDs: [String]
    public let newKeyID: String
    public let rootVersion: Int64
}

extension Registry {
    /// Replaces the key of one role. A new root (version N+1) lists the new key and is signed
    /// by the old root keys and, for a root rotation, by the new one too, so a device that
    /// trusts root N can follow the chain (TUF spec 5.3.4) with no new binary. Metadata
    /// signed by the replaced key is re-signed so the repository verifies under the new root.
    @discardableResult
    public func rotateKey(app name: AppName, role: Role, actor: Actor, now: Date = Date()) throws(RegistryError) -> KeyRotation {
        _ = try app(name)  // before a key file is written for it; checked again inside the write
        let newKey: SigningKey
        do { newKey = try SigningKey.generateEd25519() } catch { throw .crypto(error) }
        let newKeyID = newKey.tufKey.keyID
        // The key file exists before the registry names it; a crash in between leaves an
        // unused file, which is harmless.
        let keyURL = try keys.store(newKey, app: name, role: role)
        let rotation: KeyRotation
        do {
            rotation = try write { () throws -> KeyRotation in
                // Inside the transaction: a second rotation waits for this one and builds on
                // the root it commits, instead of both writing root N+1.
                let current = try signingRoot(app: name)
                let oldRootKeys = try keys.signingKeys(app: name, role: .root, root: current)
                let oldKeyIDs = current.roles[role]?.keyIDs ?? []
                var root = current
                root.version = current.version + 1
                root.expires = now.addingTimeInterval(expiry.root)
                root.roles[role] = RoleKeys(keyIDs: [newKeyID], threshold: 1)
                root.keys[newKeyID] = newKey.tufKey
                let stillUsed = Set(root.roles.values.flatMap(\.keyIDs))
                root.keys = root.keys.filter { stillUsed.contains($0.key) }
                let signers = role == .root ? oldRootKeys + [newKey] : oldRootKeys
                let signedRoot = try SignedRoot(signing: root, with: signers)
                try storeMetadata(app: name, role: .root, version: root.version, bytes: signedRoot.bytes, expires: root.expires)
                if role != .root { try resign(app: name, from: role, now: now) }
                try AuditLog.append(db, app: name.rawValue, actor: actor, action: "key.rotate", details: [
                    "role": .string(role.rawValue), "oldKeyIDs": .array(oldKeyIDs.map { .string($0) }),
                    "newKeyID": .string(newKeyID), "rootVersion": .int(root.version),
                ], at: now)
                return KeyRotation(role: role, oldKeyIDs: oldKeyIDs, newKeyID: newKeyID, rootVersion: root.version)
            }
        } catch {
            keys.discard([keyURL])
            throw error
        }
        CrashPoint.hit("rotate.after-commit")
        // The replaced key signs nothing any more; leaving it on disk would only keep a
        // secret around for an attacker. Removed after the commit, so a crash can only
        // leave it behind, never lose the key the registry uses.
        keys.discard(rotation.oldKeyIDs.map { keys.signingKeyURL(app: name, role: role, keyID: $0) })
        return rotation
    }

    /// What `refreshExpiring` did: the roles re-signed, and why a role that needed it was not.
    public struct Refresh: Sendable {
        public var roles: [Role] = []
        /// Delegated roles re-signed (with snapshot and timestamp after them).
        public var delegated: [String] = []
        public var failure: RegistryError?
    }

    /// Re-signs the online roles whose metadata expires within half its lifetime, so an
    /// export (or the server) never hands out metadata about to go stale. Not an audited
    /// change: the listed patches stay the same. A role whose key is not here (an offline
    /// targets key) is skipped and the roles below it are still kept fresh.
    @discardableResult
    public func refreshExpiring(app name: AppName, now: Date = Date()) throws(RegistryError) -> Refresh {
        _ = try app(name)
        let chain = [Role.targets, .snapshot, .timestamp]
        var result = Refresh()
        // Delegated roles first: snapshot, signed after them, pins their new versions. Looked
        // at outside a write first: an app without one due costs no write transaction.
        do throws(RegistryError) {
            let due = now.addingTimeInterval(expiry.targets / 2)
            if try delegatedExpiries(app: name).values.contains(where: { $0 < due }) {
                try write { () throws in
                    let refreshed = try refreshDelegated(app: name, now: now)
                    result.failure = refreshed.failure
                    guard !refreshed.roles.isEmpty else { return }
                    try resign(app: name, from: .snapshot, now: now)
                    result.delegated = refreshed.roles
                }
            }
        } catch {
            result.failure = result.failure ?? error
        }
        for role in chain {
            do throws(RegistryError) {
                // Checked and re-signed in one transaction: another process may have just
                // re-signed (or rotated) this role.
                let resigned = try write { () throws -> Bool in
                    let expires = try latestExpiry(app: name, role: role)
                    guard expires.timeIntervalSince(now) < expiry.lifetime(role) / 2 else { return false }
                    try resign(app: name, from: role, now: now)
                    return true
                }
                if resigned {
                    result.roles = Array(chain.drop { $0 != role })
                    return result
                }
                if role == .snapshot, !result.delegated.isEmpty {
                    result.roles = [.snapshot, .timestamp]
                    return result
                }
            } catch {
                if result.failure == nil { result.failure = error }
            }
        }
        return result
    }
}

/// What `setTargetsKeys` did.
public struct TargetsKeys: Sendable {
    public let keyIDs: [String]
    public let threshold: Int
    public let rootVersion: Int64
    public let oldKeyIDs: [String]

    public var json: JSON {
        ["keyids": .array(keyIDs.map { .string($0) }), "threshold": .int(Int64(threshold)), "rootVersion": .int(rootVersion),
         "oldKeyids": .array(oldKeyIDs.map { .string($0) })]
    }
}

extension Registry {
    /// `patchctl keys set --role targets`: top-level targets is signed from now on by
    /// `threshold` of `keys` (release engineers' public keys; the registry need hold none of
    /// their private keys). A new root lists them, signed by the root keys here, and targets
    /// is signed again under it, by the new keys: so the change is pending until a threshold
    /// of them has approved it (a root naming keys whose targets nobody signed yet would make
    /// every device refuse the repository). The replaced targets key files are removed once
    /// it lands.
    @discardableResult
    public func setTargetsKeys(app name: AppName, keys newKeys: [TUFKey], threshold: Int, dryRun: Bool = false,
                               actor: Actor, now: Date = Date()) throws(RegistryError) -> TargetsKeys {
        let byID = Dictionary(newKeys.map { ($0.keyID, $0) }, uniquingKeysWith: { first, _ in first })
        guard !byID.isEmpty, (1...byID.count).contains(threshold) else {
            throw .invalidInput("the threshold must be from 1 to the number of distinct keys (\(byID.count)), got \(threshold)")
        }
        guard Set(byID.values.compactMap(\.keyMaterial)).count == byID.count else {
            throw .invalidInput("two of the keys given are the same key: a threshold counts distinct keys")
        }
        let change = ReleaseChange.targetsKeys(keys: byID.keys.sorted().map { byID[$0]! }, threshold: threshold)
        let result = try proposing(change, app: name, dryRun: dryRun, actor: actor, now: now) { () throws(RegistryError) in
            try write(dryRun: dryRun) { () throws -> TargetsKeys in
                let current = try signingRoot(app: name)
                let oldKeyIDs = current.roles[.targets]?.keyIDs ?? []
                if Set(oldKeyIDs) == Set(byID.keys), current.roles[.targets]?.threshold == threshold {
                    throw RegistryError.conflict("targets of \(name) is already signed by \(threshold) of these \(byID.count) keys")
                }
                var root = current
                root.version = current.version + 1
                root.expires = now.addingTimeInterval(expiry.root)
                root.roles[.targets] = RoleKeys(keyIDs: byID.keys.sorted(), threshold: threshold)
                root.keys.merge(byID) { _, new in new }
                let stillUsed = Set(root.roles.values.flatMap(\.keyIDs))
                root.keys = root.keys.filter { stillUsed.contains($0.key) }
                let signedRoot = try SignedRoot(signing: root, with: try keys.signingKeys(app: name, role: .root, root: current))
                try storeMetadata(app: name, role: .root, version: root.version, bytes: signedRoot.bytes, expires: root.expires)
                try resign(app: name, from: .targets, now: now)
                try AuditLog.append(db, app: name.rawValue, actor: actor, action: "key.targets", details: [
                    "oldKeyIDs": .array(oldKeyIDs.map { .string($0) }), "keyIDs": .array(byID.keys.sorted().map { .string($0) }),
                    "threshold": .int(Int64(threshold)), "rootVersion": .int(root.version),
                ], at: now)
                return TargetsKeys(keyIDs: byID.keys.sorted(), threshold: threshold, rootVersion: root.version, oldKeyIDs: oldKeyIDs)
            }
        }
        if !dryRun {
            keys.discard(result.oldKeyIDs.filter { byID[$0] == nil }.map { keys.signingKeyURL(app: name, role: .targets, keyID: $0) })
        }
        return result
    }
}
