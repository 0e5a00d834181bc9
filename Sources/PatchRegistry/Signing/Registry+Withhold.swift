import Foundation
import PatchCore
import PatchSigning

/// The withhold role of an app (docs/PROTOCOL.md, "Withhold"): keys whose signatures can only
/// take patches away, delegated by top-level targets with no paths. Set up by the keys that
/// sign top-level targets (`keys withhold`), so on a two-person app setting it up is itself a
/// change two key holders sign; used by `halt` and `revoke` when the targets keys are not at
/// hand, and by a guard's halt, so stopping a patch never waits for a second person.
public struct WithholdRole: Sendable, Equatable {
    public let keys: [String: TUFKey]
    public let threshold: Int

    public init(keys: [String: TUFKey], threshold: Int) {
        self.keys = keys
        self.threshold = threshold
    }

    var delegatedRole: DelegatedRole { Withholds.delegatedRole(keyIDs: Array(keys.keys), threshold: threshold) }

    public var json: JSON {
        ["name": .string(Withholds.roleName), "keyids": .array(keys.keys.sorted().map { .string($0) }), "threshold": .int(Int64(threshold))]
    }
}

/// One withheld patch as the registry keeps it (table `withheld_targets`).
public struct WithheldPatch: Sendable, Equatable {
    public let key: PatchKey
    public let path: String
    public let sha256: String
    public let rollBack: Bool
    public let reason: String
    public let at: String
    public let actor: String

    public var json: JSON {
        ["appVersion": .string(key.appVersion.rawValue), "channel": .string(key.channel.rawValue), "patch": .int(Int64(key.patch)),
         "targetPath": .string(path), "sha256": .string(sha256), "rollBack": .bool(rollBack), "reason": .string(reason),
         "at": .string(at), "by": .string(actor)]
    }
}

extension Registry {
    /// The `channel` of the withhold role's row in `delegations`: no channel name is empty,
    /// so the row is never read as a channel's delegation.
    static let withholdRow = ""

    /// The app's withhold role, nil when it has none.
    public func withholdRole(app: AppName) throws(RegistryError) -> WithholdRole? {
        let row = try read { () throws(StorageError) in
            try db.query("SELECT keys_json, threshold FROM delegations WHERE app = ? AND name = ? AND channel = ? AND removed_at IS NULL",
                         [.text(app.rawValue), .text(Withholds.roleName), .text(Registry.withholdRow)]) { ($0.text(0), Int($0.int(1))) }.first
        }
        guard let (keysJSON, threshold) = row else { return nil }
        do {
            guard let object = try JSONParser.parse(keysJSON).objectValue else { throw RegistryError.internalError("keys_json is not an object") }
            var keys: [String: TUFKey] = [:]
            for (keyID, json) in object { keys[keyID] = try TUFKey(json: json, role: Withholds.roleName) }
            return WithholdRole(keys: keys, threshold: threshold)
        } catch { throw .internalError("the stored withhold role of \(app) does not parse: \(error)") }
    }

    /// The patches the app's withhold role lists now, by app version and number.
    public func withheldPatches(app: AppName) throws(RegistryError) -> [WithheldPatch] {
        let rows = try read { () throws(StorageError) in
            try db.query("""
                SELECT path, sha256, app_version, channel, number, roll_back, reason, at, actor FROM withheld_targets
                WHERE app = ? ORDER BY app_version, number
                """, [.text(app.rawValue)]) { s -> WithheldPatch? in
                guard let version = try? AppVersion(s.text(2)), let channel = try? ChannelName(s.text(3)) else { return nil }
                return WithheldPatch(key: PatchKey(appVersion: version, channel: channel, patch: Int(s.int(4))), path: s.text(0), sha256: s.text(1),
                                     rollBack: s.int(5) != 0, reason: s.text(6), at: s.text(7), actor: s.text(8))
            }
        }
        return try Registry.intact(rows, what: "withheld_targets")
    }

    /// `patchctl keys withhold`: sets (or rotates) the app's withhold role. Top-level targets
    /// lists the delegation from its next version, so this needs the targets keys (a pending
    /// change on a two-person app). The role's first file is signed with its first withhold.
    @discardableResult
    public func setWithholdRole(app name: AppName, keys: [TUFKey], threshold: Int? = nil, dryRun: Bool = false,
                                actor: Actor, now: Date = Date()) throws(RegistryError) -> WithholdRole {
        let byID = Dictionary(keys.map { ($0.keyID, $0) }, uniquingKeysWith: { first, _ in first })
        guard !byID.isEmpty else { throw .invalidInput("the withhold role needs at least one key") }
        let threshold = threshold ?? 1
        guard (1...byID.count).contains(threshold) else {
            throw .invalidInput("the threshold must be from 1 to the number of keys (\(byID.count)), got \(threshold)")
        }
        let role = WithholdRole(keys: byID, threshold: threshold)
        let change = ReleaseChange(WithholdRoleOperation(keys: byID.keys.sorted().map { byID[$0]! }, threshold: threshold))
        return try proposing(change, app: name, dryRun: dryRun, actor: actor, now: now) { () throws(RegistryError) in
          try write(dryRun: dryRun) { () throws -> WithholdRole in
            _ = try app(name)
            let previous = try withholdRole(app: name)
            guard previous != role else { throw RegistryError.invalidInput("the withhold role of \(name) already has exactly these keys and threshold") }
            let keysJSON = SQLValue.text(JSON.object(byID.mapValues(\.json)).canonicalString)
            let exists = try db.query("SELECT 1 FROM delegations WHERE app = ? AND name = ?", [.text(name.rawValue), .text(Withholds.roleName)]) { _ in true }.first ?? false
            if exists {
                try db.run("UPDATE delegations SET keys_json = ?, threshold = ?, removed_at = NULL WHERE app = ? AND name = ? AND channel = ?",
                           [keysJSON, .int(Int64(threshold)), .text(name.rawValue), .text(Withholds.roleName), .text(Registry.withholdRow)])
                guard db.changes == 1 else { throw RegistryError.conflict("\(name) has a channel delegation named \(Withholds.roleName)") }
            } else {
                try db.run("INSERT INTO delegations(app, name, channel, keys_json, threshold, created_at, created_by) VALUES (?,?,?,?,?,?,?)",
                           [.text(name.rawValue), .text(Withholds.roleName), .text(Registry.withholdRow), keysJSON, .int(Int64(threshold)),
                            .text(TUFTime.format(now)), .text(actor.name)])
            }
            try resign(app: name, from: .targets, now: now)
            var details = role.json.objectValue ?? [:]
            details["from"] = previous?.json ?? .null
            _ = try AuditLog.append(db, app: name.rawValue, actor: actor, action: "keys.withhold", details: .object(details), at: now)
            return role
          }
        }
    }

    /// Whether a change that takes `channel`'s patches away goes through the withhold role:
    /// the app has one, a threshold of the keys that sign the channel's targets is not at hand
    /// (the two-person rule), and a threshold of the withhold keys is (the key store's, or
    /// given for this change). Otherwise the change signs targets as it always did.
    func withholdsInstead(app: AppName, channel: ChannelName) throws(RegistryError) -> WithholdRole? {
        guard let role = try withholdRole(app: app) else { return nil }
        let given = Set((SigningContext.current?.keys ?? []).map(\.tufKey.keyID))
        let targets: (keyIDs: [String], threshold: Int, role: String)
        if let record = try delegations(app: app).first(where: { $0.channel == channel }) {
            targets = (Array(record.keys.keys), record.threshold, record.name)
        } else {
            guard let entry = try signingRoot(app: app).roles[.targets] else { return nil }
            targets = (entry.keyIDs, entry.threshold, Role.targets.rawValue)
        }
        func held(_ keyIDs: [String], _ role: String) -> Int {
            keyIDs.filter { given.contains($0) || FileManager.default.fileExists(atPath: keys.signerURL(app: app, role: role, keyID: $0).path) }.count
        }
        guard held(targets.keyIDs, targets.role) < targets.threshold else { return nil }
        return held(Array(role.keys.keys), Withholds.roleName) >= role.threshold ? role : nil
    }

    /// Lists `patches` as withheld (`rollBack`: devices drop them; else no device installs
    /// them), signs the role's next file and snapshot and timestamp over it. Inside the
    /// caller's write transaction. A patch listed already the same way is left as it is; a
    /// halt never weakens a roll-back. Returns the entries it wrote.
    func withholdRows(_ patches: [PatchRecord], role: WithholdRole, rollBack: Bool, reason: String?, app: AppName, actor: Actor,
                      now: Date) throws(RegistryError) -> [WithheldPatch] {
        let listed = try listedTargets(app: app, fallback: true) { _ in true }
        let existing = Dictionary(try withheldPatches(app: app).map { ($0.path, $0) }) { first, _ in first }
        var written: [WithheldPatch] = []
        for patch in patches {
            guard let file = listed[patch.targetPath], let sha256 = file.hashes["sha256"] else {
                throw RegistryError.conflict("\(app) \(patch.appVersion) patch \(patch.number) is not listed by targets: there is nothing to withhold")
            }
            if let old = existing[patch.targetPath], old.sha256 == sha256, old.rollBack || !rollBack { continue }
            let entry = WithheldPatch(key: PatchKey(appVersion: patch.appVersion, channel: patch.channel, patch: patch.number), path: patch.targetPath,
                                      sha256: sha256, rollBack: rollBack, reason: reason ?? (rollBack ? "revoked" : "halted"),
                                      at: TUFTime.format(now), actor: actor.name)
            try read { () throws(StorageError) in
                try db.run("""
                    INSERT INTO withheld_targets(app, path, sha256, app_version, channel, number, roll_back, reason, at, actor) VALUES (?,?,?,?,?,?,?,?,?,?)
                    ON CONFLICT(app, path) DO UPDATE SET sha256 = excluded.sha256, roll_back = excluded.roll_back, reason = excluded.reason,
                        at = excluded.at, actor = excluded.actor
                    """, [.text(app.rawValue), .text(entry.path), .text(sha256), .text(patch.appVersion.rawValue), .text(patch.channel.rawValue),
                          .int(Int64(patch.number)), .int(rollBack ? 1 : 0), .text(entry.reason), .text(entry.at), .text(actor.name)])
            }
            var details = entry.json.objectValue ?? [:]
            details["via"] = .string(Withholds.roleName)
            try read { () throws(StorageError) in _ = try AuditLog.append(db, app: app.rawValue, actor: actor, action: rollBack ? "patch.withhold.rollback" : "patch.withhold", details: .object(details), at: now) }
            written.append(entry)
        }
        guard !written.isEmpty else { return [] }
        try signWithhold(app: app, role: role, now: now)
        try resign(app: app, from: .snapshot, now: now)
        return written
    }

    /// Takes `patch` off the withhold list (`resume`): it gives a patch back, so it needs what
    /// publishing needs: top-level targets is signed again with the change (the targets keys:
    /// a pending change on a two-person app), and the role's next file without the entry.
    /// Inside the caller's write transaction; false when the patch was not withheld.
    func liftWithhold(_ patch: PatchRecord, app: AppName, actor: Actor, now: Date) throws(RegistryError) -> Bool {
        guard let role = try withholdRole(app: app),
              let entry = try withheldPatches(app: app).first(where: { $0.path == patch.targetPath }) else { return false }
        try read { () throws(StorageError) in
            try db.run("DELETE FROM withheld_targets WHERE app = ? AND path = ?", [.text(app.rawValue), .text(entry.path)])
        }
        try signWithhold(app: app, role: role, now: now)
        try resign(app: app, from: .targets, now: now, channel: patch.channel)
        var details = entry.json.objectValue ?? [:]
        details["via"] = .string(Withholds.roleName)
        try read { () throws(StorageError) in _ = try AuditLog.append(db, app: app.rawValue, actor: actor, action: "patch.withhold.lift", details: .object(details), at: now) }
        return true
    }

    /// The role's next file: the entries of patches still active, by a threshold of its keys
    /// (given for this change, the key store's, or a pending change's approvals). Entries of
    /// revoked patches are dropped: targets no longer lists them, so they apply to nothing.
    @discardableResult
    func signWithhold(app: AppName, role: WithholdRole, now: Date, lifetime: TimeInterval? = nil) throws(RegistryError) -> Int64 {
        let active = Set(try patches(app: app, appVersion: nil, activeOnly: true).map(\.targetPath))
        var entries: [String: Withholds.Entry] = [:]
        for row in try withheldPatches(app: app) where active.contains(row.path) {
            entries[row.path] = Withholds.Entry(sha256: row.sha256, rollBack: row.rollBack, reason: row.reason)
        }
        let version = try nextDelegatedVersion(app: app, role: Withholds.roleName)
        let body = Withholds(entries: entries).body(version: version, expires: now.addingTimeInterval(lifetime ?? expiry.targets))
        let signers = try roleSigners(app: app, role: Withholds.roleName, signed: body.signedJSON, keyIDs: role.keys.keys.sorted(),
                                      threshold: role.threshold, keys: role.keys)
        let bytes: [UInt8]
        do { bytes = try SignedTargets(signing: body, with: signers).bytes } catch { throw .wrapping(error) }
        try read { () throws(StorageError) in
            try db.run("INSERT INTO delegated_metadata(app, role, version, bytes, expires) VALUES (?,?,?,?,?)",
                       [.text(app.rawValue), .text(Withholds.roleName), .int(version), .blob(bytes), .text(TUFTime.format(body.common.expires))])
        }
        return version
    }
}
