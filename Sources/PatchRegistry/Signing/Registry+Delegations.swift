import Foundation
import PatchCore
import PatchSigning

/// A delegated targets role (spec 4.5): one channel's targets, signed by the role's own keys
/// rather than the top-level targets key, which signs only the delegation itself.
public struct DelegationRecord: Sendable, Equatable {
    public let name: String
    public let channel: ChannelName
    public let keys: [String: TUFKey]
    public let threshold: Int

    /// The patterns that match exactly this channel's target paths
    /// (`{channel}/{appVersion}/{patch}/main.js` or `main.conditional.js`) under the client's
    /// fnmatch rule, where `*` never crosses a `/`: a production path (three components) or
    /// another channel's can never match them.
    public var paths: [String] {
        ["main.js", PatchTargetInfo.conditionalFileName].map { "\(channel.rawValue)/*/*/\($0)" }
    }

    var delegatedRole: DelegatedRole {
        DelegatedRole(name: name, keyIDs: keys.keys.sorted(), threshold: threshold, scope: .paths(paths), terminating: true)
    }

    public var json: JSON {
        ["name": .string(name), "channel": .string(channel.rawValue), "keyids": .array(keys.keys.sorted().map { .string($0) }),
         "threshold": .int(Int64(threshold)), "paths": .array(paths.map { .string($0) })]
    }
}

extension Registry {
    /// Role names a delegation may take: short, URL- and file-name-safe, and not a top-level role's.
    public static func checkDelegatedRoleName(_ name: String) throws(RegistryError) {
        let allowed = name.utf8.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D }
        guard (1...32).contains(name.utf8.count), allowed, name.first != "-" else {
            throw .invalidInput("a delegated role name is 1-32 characters of a-z, 0-9 and -, got \(name.debugSanitized)")
        }
        guard Role(rawValue: name) == nil else { throw .invalidInput("\(name) is a top-level role's name") }
        guard name != Withholds.roleName else { throw .invalidInput("\(name) is the withhold role's name (`patchctl keys withhold`)") }
    }

    /// The app's delegated roles in force, by name.
    public func delegations(app: AppName) throws(RegistryError) -> [DelegationRecord] {
        try delegationRows(app: app).filter { !$0.removed }.map(\.record)
    }

    /// Every delegation row of the app, a retired one (`keys undelegate`) too.
    func delegationRows(app: AppName) throws(RegistryError) -> [(record: DelegationRecord, removed: Bool)] {
        let rows = try read { () throws(StorageError) in
            // The withhold role's row (channel '') is no channel's delegation (`withholdRole`).
            try db.query("SELECT name, channel, keys_json, threshold, removed_at FROM delegations WHERE app = ? AND channel <> '' ORDER BY name",
                         [.text(app.rawValue)]) {
                ($0.text(0), $0.text(1), $0.text(2), $0.int(3), $0.values[4] != .null)
            }
        }
        var records: [(record: DelegationRecord, removed: Bool)] = []
        for (name, channel, keysJSON, threshold, removed) in rows {
            do {
                guard let object = try JSONParser.parse(keysJSON).objectValue else { throw RegistryError.internalError("keys_json is not an object") }
                var keys: [String: TUFKey] = [:]
                for (keyID, json) in object { keys[keyID] = try TUFKey(json: json, role: name) }
                records.append((DelegationRecord(name: name, channel: try ChannelName(channel), keys: keys, threshold: Int(threshold)), removed))
            } catch { throw .internalError("stored delegation \(name) of \(app) does not parse: \(error)") }
        }
        return records
    }

    /// The newest signed version of each delegated role of the app, and whether the role is
    /// in force. A retired role's last version stays listed by snapshot (and servable), but
    /// its targets are no longer the channel's: top-level targets lists those again.
    public func latestDelegatedMetadata(app: AppName) throws(RegistryError) -> [String: (version: Int64, bytes: [UInt8], active: Bool)] {
        let rows = try read { () throws(StorageError) in
            try db.query("""
                SELECT d.role, d.version, d.bytes, r.removed_at FROM delegated_metadata d
                JOIN delegations r ON r.app = d.app AND r.name = d.role
                WHERE d.app = ? AND d.version = (SELECT MAX(version) FROM delegated_metadata WHERE app = d.app AND role = d.role)
                """, [.text(app.rawValue)]) { ($0.text(0), $0.int(1), $0.blob(2), $0.values[3] == .null) }
        }
        return Dictionary(uniqueKeysWithValues: rows.map { ($0.0, (version: $0.1, bytes: $0.2, active: $0.3)) })
    }

    /// One stored version of a delegated role's metadata, or nil.
    public func delegatedMetadata(app: AppName, role: String, version: Int64) throws(RegistryError) -> [UInt8]? {
        try read { () throws(StorageError) in
            try db.query("SELECT bytes FROM delegated_metadata WHERE app = ? AND role = ? AND version = ?",
                         [.text(app.rawValue), .text(role), .int(version)]) { $0.blob(0) }.first
        }
    }

    /// When the newest version of each delegated role in force expires.
    func delegatedExpiries(app: AppName) throws(RegistryError) -> [String: Date] {
        var expiries: [String: Date] = [:]
        for (role, latest) in try latestDelegatedMetadata(app: app) where latest.active {
            expiries[role] = (try? SignedTargets(bytes: latest.bytes))?.body.expires ?? .distantPast
        }
        return expiries
    }

    /// The role's next metadata as the registry would sign it now: one version above the
    /// stored one, the channel's listed targets, expiring after `lifetime` (default the
    /// targets lifetime). What a key holder signs on their own machine (`presigned`).
    public func nextDelegatedBody(app: AppName, role: String, channel: ChannelName, now: Date, lifetime: TimeInterval? = nil) throws(RegistryError) -> TargetsBody {
        return TargetsBody(common: CommonFields(version: try nextDelegatedVersion(app: app, role: role), expires: now.addingTimeInterval(lifetime ?? expiry.targets)),
                           targets: try listedTargets(app: app, fallback: try withholdRole(app: app) != nil) { $0.channel == channel })
    }

    /// One above the newest stored version of a delegated role's metadata (the withhold role's too).
    func nextDelegatedVersion(app: AppName, role: String) throws(RegistryError) -> Int64 {
        (try read { () throws(StorageError) in
            try db.query("SELECT MAX(version) FROM delegated_metadata WHERE app = ? AND role = ?", [.text(app.rawValue), .text(role)]) { $0.int(0) }.first
        } ?? 0) + 1
    }

    /// How long a role file signed elsewhere (`presigned`) may take to come back.
    static let presignedSlack: TimeInterval = 3600

    /// Signs the next version of a delegated role's metadata: the channel's listed targets,
    /// signed by a threshold of its keys (`roleSigners`: keys given for the change, the key
    /// store's, or a pending change's approvals). Inside the caller's write transaction. `presigned`: the role file signed elsewhere instead
    /// (by a key holder over `--server`), taken only when it is `nextDelegatedBody` as of
    /// now (expiry aside, within the lifetime) and carries a threshold of the role's keys.
    @discardableResult
    func signDelegated(app: AppName, _ record: DelegationRecord, now: Date, lifetime: TimeInterval? = nil,
                       presigned: [UInt8]? = nil) throws(RegistryError) -> Int64 {
        let body = try nextDelegatedBody(app: app, role: record.name, channel: record.channel, now: now, lifetime: lifetime)
        // A delegation approved after it was proposed: the role's metadata its keys signed
        // then (they are not here now), checked like any role file signed elsewhere.
        let context = SigningContext.current
        var presigned = presigned
        if presigned == nil, let approval = context?.approval, approval.change.kind == DelegateOperation.definition.kind { presigned = approval.captured }
        let bytes: [UInt8]
        let expires: Date
        if let presigned {
            let file: SignedTargets
            do { file = try SignedTargets(bytes: presigned, maxLength: TrustedMetadata.maxTargetsLength) } catch {
                throw .invalidInput("the signed role metadata does not parse: \(error)")
            }
            let latest = now.addingTimeInterval((lifetime ?? expiry.targets) + Registry.presignedSlack)
            guard file.body.version == body.common.version, file.body.targets == body.targets, file.body.delegations == nil,
                  file.body.expires > now, file.body.expires <= latest else {
                throw .conflict("the signed \(record.name) metadata is not its next version as of now (version \(body.common.version), \(record.channel)'s current targets): sign it again")
            }
            do { try file.verify(role: record.name, keys: Array(record.keys.values), threshold: record.threshold) } catch {
                throw .invalidInput("the signed \(record.name) metadata: \(error)")
            }
            bytes = presigned
            expires = file.body.expires
            // Its keys signed a role of this change (so none given for it is a stray), and a
            // change stored as pending replays these bytes when it lands: its keys are not here.
            context?.used.formUnion(file.signatures.map(\.keyID))
            context?.captured = presigned
        } else {
            let signers = try roleSigners(app: app, role: record.name, signed: body.signedJSON, keyIDs: record.keys.keys.sorted(),
                                          threshold: record.threshold, keys: record.keys)
            do { bytes = try SignedTargets(signing: body, with: signers).bytes } catch { throw .wrapping(error) }
            expires = body.common.expires
            context?.captured = bytes
        }
        try read { () throws(StorageError) in
            try db.run("INSERT INTO delegated_metadata(app, role, version, bytes, expires) VALUES (?,?,?,?,?)",
                       [.text(app.rawValue), .text(record.name), .int(body.common.version), .blob(bytes), .text(TUFTime.format(expires))])
        }
        return body.common.version
    }
}

extension KeyStore {
    /// Where the registry keeps a delegated role's private key, if it holds it:
    /// `{keys}/{app}/delegated.{role}.{keyid}.pem` ("delegated" is no top-level role's name).
    public func delegatedKeyURL(app: AppName, role: String, keyID: String) -> URL {
        appDirectory(app).appendingPathComponent("delegated.\(role).\(keyID).pem")
    }

    /// Stores a delegated role's private key in the key store; refuses to overwrite.
    @discardableResult
    public func storeDelegated(_ key: SigningKey, app: AppName, role: String) throws(RegistryError) -> URL {
        let url = delegatedKeyURL(app: app, role: role, keyID: key.tufKey.keyID)
        let pem: [UInt8]
        do { pem = try key.pemRepresentation() } catch { throw .crypto(error) }
        try SecretFile.create(url, contents: pem)
        return url
    }

    /// Where the store keeps a key of a role that signs targets metadata: top-level
    /// targets' (`targets.KEYID.pem`) or a delegated role's.
    func signerURL(app: AppName, role: String, keyID: String) -> URL {
        role == Role.targets.rawValue ? signingKeyURL(app: app, role: .targets, keyID: keyID) : delegatedKeyURL(app: app, role: role, keyID: keyID)
    }

    /// That key when the store holds it, nil when it does not (the key is elsewhere: the
    /// change waits for its holder); a key file that is there but unreadable, open to
    /// others or not the key its name says is an error.
    func storedSigner(app: AppName, role: String, keyID: String) throws(RegistryError) -> SigningKey? {
        let url = signerURL(app: app, role: role, keyID: keyID)
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        if role == Role.targets.rawValue { return try signingKey(app: app, role: .targets, keyID: keyID) }
        let pem = try SecretFile.read(url, what: "the \(role) key of \(app)")
        do { return try SigningKey(pem: pem) } catch { throw .keys("\(url.path): \(error)") }
    }
}
