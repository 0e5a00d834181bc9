import Foundation
import PatchCore
import PatchSigning

extension Registry {
    /// Which patches targets metadata lists for one app version and channel: the newest patch
    /// at 100% without delivery conditions and every newer active one, at rollout 0 too: a
    /// paused or halted patch is offered to no device, but the devices that run it keep it
    /// while it is listed (`Selection.choose`); only a revoke unlists it and takes it away.
    /// Anything older than that newest full rollout can never be chosen by a device, so it is
    /// left out; a conditional patch at 100% does not end the list (it reaches only the
    /// devices its conditions admit).
    ///
    /// `fallback` (an app with a withhold role): the list goes on to the next unconditional
    /// 100 % patch below the newest, so a withhold that rolls the newest back leaves devices a
    /// signed patch to go back to (docs/PROTOCOL.md, "Withhold").
    static func listedPatches(_ patches: [PatchRecord], fallback: Bool = false) -> [PatchRecord] {
        var listed: [PatchRecord] = []
        var full = 0
        for patch in patches.sorted(by: { $0.number > $1.number }) where patch.state == .active {
            listed.append(patch)
            if patch.rollout >= 100, patch.conditions == nil {
                full += 1
                if full > (fallback ? 1 : 0) { break }
            }
        }
        return listed
    }

    /// The target entry for one patch: served length and hashes, and the signed `custom`
    /// fields a client needs to pick and check it.
    static func targetFile(for patch: PatchRecord) -> TargetFile {
        let info = PatchTargetInfo(appVersion: patch.appVersion, channel: patch.channel, patch: patch.number, rollout: patch.rollout,
                                   published: patch.publishedAt, plaintext: patch.plaintext,
                                   encryption: patch.contentKeyID.map { PatchTargetInfo.Encryption(keyID: $0) }, message: patch.message,
                                   promotedFrom: patch.promotedFrom, rolledBackTo: patch.rolledBackTo, conditions: patch.conditions)
        return TargetFile(length: patch.served.length, hashes: ["sha256": patch.served.sha256, "md5": patch.served.md5], custom: info.custom)
    }

    /// The target entries for the listable patches `include` admits.
    /// `fallback`: the app has a withhold role (`listedPatches`).
    func listedTargets(app: AppName, fallback: Bool, _ include: (PatchRecord) -> Bool) throws(RegistryError) -> [String: TargetFile] {
        let source = fallback ? try patches(app: app, appVersion: nil, activeOnly: true) : try listablePatches(app: app)
        let grouped = Dictionary(grouping: source.filter(include)) { "\($0.channel)/\($0.appVersion)" }
        var targets: [String: TargetFile] = [:]
        for (_, patches) in grouped {
            for patch in Registry.listedPatches(patches, fallback: fallback) { targets[patch.targetPath] = Registry.targetFile(for: patch) }
        }
        return targets
    }

    /// Top-level targets: every channel's targets but the delegated ones, which the
    /// delegated roles list, and the delegations.
    func targetsBody(app: AppName, version: Int64, now: Date, lifetime: TimeInterval? = nil,
                     delegations: [DelegationRecord] = [], withhold: WithholdRole? = nil) throws(RegistryError) -> TargetsBody {
        let delegated = Set(delegations.map(\.channel))
        let targets = try listedTargets(app: app, fallback: withhold != nil) { !delegated.contains($0.channel) }
        // The withhold role goes last: it has no paths, so no search ever reaches it anyway.
        var keys = delegations.reduce(into: [String: TUFKey]()) { $0.merge($1.keys) { first, _ in first } }
        if let withhold { keys.merge(withhold.keys) { first, _ in first } }
        let roles = delegations.map(\.delegatedRole) + (withhold.map { [$0.delegatedRole] } ?? [])
        let listed = roles.isEmpty ? nil : Delegations(keys: keys, roles: roles)
        return TargetsBody(common: CommonFields(version: version, expires: now.addingTimeInterval(lifetime ?? expiry.targets)),
                           targets: targets, delegations: listed)
    }

    /// Signs new metadata for `from` and every role below it in the chain
    /// (targets → snapshot → timestamp), each version one above the stored one, with the
    /// keys the newest root names (read here, inside the caller's write transaction, never
    /// passed in from before it). The keys must be in the key store.
    /// `lifetimes` replaces the registry's expiry policy for this signing (a static export's
    /// longer-lived timestamp). Returns the version signed for each role of the chain.
    ///
    /// A change to a delegated `channel` signs that role's metadata instead of top-level
    /// targets, whose key is then not needed; snapshot lists every delegated role's newest
    /// version. Targets and delegated roles are signed by `roleSigners` (keys given for the
    /// change, the key store's, a pending change's approvals); snapshot and timestamp by the
    /// online keys the store must hold.
    ///
    /// Two statements however long the chain: one read of the newest root and the newest
    /// version of each role, and one INSERT of every file signed (on PostgreSQL each
    /// statement is a round trip).
    @discardableResult
    func resign(app: AppName, from role: Role, now: Date, lifetimes: ExpiryPolicy? = nil, channel: ChannelName? = nil) throws(RegistryError) -> [Role: Int64] {
        var chain: [Role]
        switch role {
        case .root, .targets: chain = [.targets, .snapshot, .timestamp]
        case .snapshot: chain = [.snapshot, .timestamp]
        case .timestamp: chain = [.timestamp]
        }
        let stored = try signingState(app: app)
        let delegations = stored.delegated ? try self.delegations(app: app) : []
        let withhold = stored.delegated ? try withholdRole(app: app) : nil
        var superseding: [String] = []
        if chain.first == .targets, let channel, let record = delegations.first(where: { $0.channel == channel }) {
            try signDelegated(app: app, record, now: now, lifetime: lifetimes?.targets)
            chain.removeFirst()
            superseding.append(record.name)
        } else if chain.first == .targets {
            superseding.append(Role.targets.rawValue)
        }
        // A retired role's last version too: a client refuses a snapshot that drops a role.
        let delegatedMeta = stored.delegated ? try latestDelegatedMetadata(app: app) : [:]
        let root = stored.root
        var pinned: (version: Int64, bytes: [UInt8])?
        var signed: [(role: Role, version: Int64, bytes: [UInt8], expires: Date)] = []
        for role in chain {
            let version = (stored.versions[role] ?? 0) + 1
            // Snapshot pins the targets file just signed (or the stored one); timestamp pins snapshot.
            let current: (version: Int64, bytes: [UInt8])
            if let pinned { current = pinned } else if role == .targets { current = (0, []) } else {
                current = try latestMetadata(app: app, role: role == .snapshot ? .targets : .snapshot)
            }
            // A change applied after it was proposed keeps its targets (what was signed) and
            // signs the roles below at the time it lands, so they do not start out stale.
            let signedAt = role == .targets ? now : (SigningContext.current?.commitTime ?? now)
            let expires = signedAt.addingTimeInterval((lifetimes ?? expiry).lifetime(role))
            let bytes: [UInt8]
            do {
                switch role {
                case .targets:
                    let tb = try targetsBody(app: app, version: version, now: now, lifetime: lifetimes?.targets, delegations: delegations, withhold: withhold)
                    guard let entry = root.roles[.targets] else { throw RegistryError.internalError("root lists no targets role") }
                    let signers = try roleSigners(app: app, role: Role.targets.rawValue, signed: tb.signedJSON, keyIDs: entry.keyIDs,
                                                  threshold: entry.threshold, keys: root.keys)
                    bytes = try SignedTargets(signing: tb, with: signers).bytes
                case .snapshot:
                    let signingKeys = try keys.signingKeys(app: app, role: role, root: root)
                    var meta = ["targets.json": MetaFile(version: current.version, bytes: current.bytes)]
                    for (name, file) in delegatedMeta { meta["\(name).json"] = MetaFile(version: file.version, bytes: file.bytes) }
                    let body = SnapshotBody(common: CommonFields(version: version, expires: expires), meta: meta)
                    bytes = try SignedSnapshot(signing: body, with: signingKeys).bytes
                case .timestamp:
                    let signingKeys = try keys.signingKeys(app: app, role: role, root: root)
                    let body = TimestampBody(common: CommonFields(version: version, expires: expires),
                                             snapshot: MetaFile(version: current.version, bytes: current.bytes))
                    bytes = try SignedTimestamp(signing: body, with: signingKeys).bytes
                case .root:
                    throw RegistryError.internalError("root is not re-signed in the chain")
                }
            } catch { throw .wrapping(error) }
            signed.append((role, version, bytes, expires))
            pinned = (version, bytes)
        }
        try read { () throws(StorageError) in
            try db.runInTransaction("INSERT INTO metadata(app, role, version, bytes, expires) VALUES " + signed.map { _ in "(?,?,?,?,?)" }.joined(separator: ","),
                       signed.flatMap { file -> [SQLValue] in
                           [.text(app.rawValue), .text(file.role.rawValue), .int(file.version), .blob(file.bytes), .text(TUFTime.format(file.expires))]
                       })
        }
        if stored.pending, !superseding.isEmpty { try supersedePending(app: app, roles: superseding) }
        return Dictionary(uniqueKeysWithValues: signed.map { ($0.role, $0.version) })
    }

    /// Who signs a role's next metadata (`signed`), which `threshold` of `keyIDs` must sign:
    /// the keys given for this change (`SigningContext`), the key store's (`storedSigner`, nil
    /// when this machine does not hold that key), and, when a pending change is being applied, the
    /// signatures its key holders gave, which are over exactly the metadata the change made
    /// when it was proposed. Fewer than `threshold`: `signaturesNeeded`, with the signatures
    /// the keys here made, so the change can wait for the rest (`Registry.proposing`).
    ///
    /// A given key of another of the app's roles is left for that role (`keys delegate` on
    /// a two-person app signs the delegated role with its keys and targets with the release
    /// keys); a given key no role of the app lists is refused.
    func roleSigners(app: AppName, role: String, signed: JSON, keyIDs: [String], threshold: Int,
                     keys: [String: TUFKey]) throws(RegistryError) -> [any TUFSigner] {
        let context = SigningContext.current
        let listed = Set(keyIDs)
        let strays = (context?.keys ?? []).filter { !listed.contains($0.tufKey.keyID) }
        if !strays.isEmpty {
            let root = try signingRoot(app: app)
            var known = Set(root.roles[.targets]?.keyIDs ?? [])
            for record in try delegations(app: app) { known.formUnion(record.keys.keys) }
            if let stray = strays.first(where: { !known.contains($0.tufKey.keyID) }) {
                let named = role == Role.targets.rawValue ? "the targets role" : "the delegated role \(role)"
                throw .keys("keyid \(stray.tufKey.keyID.prefix(12))… is not a key of \(named), which this change signs, nor of any other role of \(app) (its keys: \(keyIDs.map { String($0.prefix(12)) + "…" }.joined(separator: ", ")))")
            }
        }
        let message = signed.canonicalBytes
        var signers: [String: any TUFSigner] = [:]
        if let approval = context?.approval, approval.request.role == role {
            guard approval.request.message == message else {
                throw .conflict("the \(role) metadata changed since change \(approval.id) was proposed (another change landed first): nothing was changed; propose it again")
            }
            for signature in approval.signatures where listed.contains(signature.keyID) {
                guard let key = keys[signature.keyID] else { continue }
                signers[signature.keyID] = Presigned(tufKey: key, message: message, value: signature.signature)
            }
        }
        for key in context?.keys ?? [] where listed.contains(key.tufKey.keyID) {
            if signers[key.tufKey.keyID] == nil { signers[key.tufKey.keyID] = key }
            context?.used.insert(key.tufKey.keyID)
        }
        for keyID in keyIDs.sorted() where signers[keyID] == nil {
            if let key = try self.keys.storedSigner(app: app, role: role, keyID: keyID) { signers[keyID] = key }
        }
        // Signed by exactly a threshold, the approvals first, then the keys given, then the
        // store's: more signatures verify no better and cost a signing each.
        var chosen: [String] = []
        if let approval = context?.approval { chosen += approval.signatures.map(\.keyID).filter { signers[$0] != nil } }
        chosen += (context?.keys ?? []).map(\.tufKey.keyID).filter { signers[$0] != nil && !chosen.contains($0) }
        chosen += signers.keys.sorted().filter { !chosen.contains($0) }
        guard signers.count >= threshold else {
            var made: [TUFSignature] = []
            do {
                for (keyID, signer) in signers.sorted(by: { $0.key < $1.key }) {
                    made.append(TUFSignature(keyID: keyID, signature: try signer.signature(for: message)))
                }
            } catch { throw .crypto(error) }
            throw .signaturesNeeded(SignatureRequest(role: role, signed: signed, message: message, keys: keys.filter { listed.contains($0.key) },
                                                      threshold: threshold, signatures: made))
        }
        return chosen.prefix(threshold).compactMap { signers[$0] }
    }

    /// Whether the key store holds a threshold of the keys that sign `channel`'s targets (its
    /// delegated role's, else top-level targets'): whether a change there made by patchd alone
    /// (a guard's halt, a schedule's step) can land, or must wait for key holders. Asked
    /// before such a change, inside its caller's transaction: a change that found out only at
    /// signing would have written its rows already.
    func holdsSigningKeys(app: AppName, channel: ChannelName) throws(RegistryError) -> Bool {
        let role: String, keyIDs: [String], threshold: Int
        if let record = try delegations(app: app).first(where: { $0.channel == channel }) {
            (role, keyIDs, threshold) = (record.name, Array(record.keys.keys), record.threshold)
        } else {
            guard let entry = try signingRoot(app: app).roles[.targets] else { return false }
            (role, keyIDs, threshold) = (Role.targets.rawValue, entry.keyIDs, entry.threshold)
        }
        return keyIDs.filter { FileManager.default.fileExists(atPath: keys.signerURL(app: app, role: role, keyID: $0).path) }.count >= threshold
    }

    /// The root that signs (`signingRoot`) and the newest stored version of each role but
    /// root, in one statement. The root's bytes are read every time; they are parsed again
    /// only when they differ from the ones parsed last (parsing builds an OpenSSL key per
    /// listed key, which cost more than the rest of a publish's signing).
    /// `delegated`: whether the app has delegated roles (read in the same statement, so an
    /// app without them pays nothing for the feature).
    /// `pending`: whether changes wait for signatures (whose metadata what is signed now supersedes).
    func signingState(app: AppName) throws(RegistryError) -> (root: RootBody, versions: [Role: Int64], delegated: Bool, pending: Bool) {
        guard db.inTransaction else { throw .internalError("the signing root of \(app) was read outside a write transaction") }
        let name = SQLValue.text(app.rawValue)
        let row = try read { () throws(StorageError) in
            try db.query("""
                SELECT (SELECT bytes FROM metadata WHERE app = ? AND role = 'root' ORDER BY version DESC LIMIT 1),
                       (SELECT MAX(version) FROM metadata WHERE app = ? AND role = 'targets'),
                       (SELECT MAX(version) FROM metadata WHERE app = ? AND role = 'snapshot'),
                       (SELECT MAX(version) FROM metadata WHERE app = ? AND role = 'timestamp'),
                       (SELECT COUNT(*) FROM delegations WHERE app = ?),
                       (SELECT COUNT(*) FROM pending_changes WHERE app = ? AND state = 'pending')
                """, [name, name, name, name, name, name]) {
                    ($0.values[0] == .null ? nil : $0.blob(0), $0.int(1), $0.int(2), $0.int(3), $0.int(4), $0.int(5))
                }.first
        }
        guard let row, let bytes = row.0 else { throw .notFound("app \"\(app)\" has no root metadata") }
        let root = try parsedRoot(app: app, bytes: bytes)
        CrashPoint.hit("signing-root.read")
        return (root, [.targets: row.1, .snapshot: row.2, .timestamp: row.3], row.4 > 0, row.5 > 0)
    }
}
