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
    static func checkDelegatedRoleName(_ name: String) throws(RegistryError) {
        let allowed = name.utf8.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D }
        guard (1...32).contains(name.utf8.count), allowed, name.first != "-" else {
            throw .invalidInput("a delegated role name is 1-32 characters of a-z, 0-9 and -, got \(name.debugSanitized)")
        }
        guard Role(rawValue: name) == nil else { throw .invalidInput("\(name) is a top-level role's name") }
    }

    /// The app's delegated roles, by name.
    public func delegations(app: AppName) throws(RegistryError) -> [DelegationRecord] {
        let rows = try read { () throws(StorageError) in
            try db.query("SELECT name, channel, keys_json, threshold FROM delegations WHERE app = ? ORDER BY name", [.text(app.rawValue)]) {
                ($0.text(0), $0.text(1), $0.text(2), $0.int(3))
            }
        }
        var records: [DelegationRecord] = []
        for (name, channel, keysJSON, threshold) in rows {
            do {
                guard let object = try JSONParser.parse(keysJSON).objectValue else { throw RegistryError.internalError("keys_json is not an object") }
                var keys: [String: TUFKey] = [:]
                for (keyID, json) in object { keys[keyID] = try TUFKey(json: json, role: name) }
                records.append(DelegationRecord(name: name, channel: try ChannelName(channel), keys: keys, threshold: Int(threshold)))
            } catch { throw .internalError("stored delegation \(name) of \(app) does not parse: \(error)") }
        }
        return records
    }

    /// The newest signed version of each delegated role of the app.
    public func latestDelegatedMetadata(app: AppName) throws(RegistryError) -> [String: (version: Int64, bytes: [UInt8])] {
        let rows = try read { () throws(StorageError) in
            try db.query("""
                SELECT d.role, d.version, d.bytes FROM delegated_metadata d
                WHERE d.app = ? AND d.version = (SELECT MAX(version) FROM delegated_metadata WHERE app = d.app AND role = d.role)
                """, [.text(app.rawValue)]) { ($0.text(0), $0.int(1), $0.blob(2)) }
        }
        return Dictionary(uniqueKeysWithValues: rows.map { ($0.0, (version: $0.1, bytes: $0.2)) })
    }

    /// One stored version of a delegated role's metadata, or nil.
    public func delegatedMetadata(app: AppName, role: String, version: Int64) throws(RegistryError) -> [UInt8]? {
        try read { () throws(StorageError) in
            try db.query("SELECT bytes FROM delegated_metadata WHERE app = ? AND role = ? AND version = ?",
                         [.text(app.rawValue), .text(role), .int(version)]) { $0.blob(0) }.first
        }
    }

    /// `patchctl keys delegate`: `channel`'s targets are signed from now on by the role `name`
    /// with `keys` (a threshold of them), not by the top-level targets key. The top-level key
    /// signs targets once more, now listing the delegation and no longer that channel's
    /// targets; the role's first metadata (the channel's current targets) is signed with
    /// `signingKeys` or the keys the registry holds for it.
    @discardableResult
    public func delegate(app name: AppName, channel: ChannelName, role: String, keys: [TUFKey], threshold: Int = 1,
                         signingKeys: [SigningKey] = [], actor: Actor, now: Date = Date()) throws(RegistryError) -> DelegationRecord {
        try Registry.checkDelegatedRoleName(role)
        guard channel != .production else {
            throw .invalidInput("production stays signed by the top-level targets key; delegate another channel (e.g. staging)")
        }
        let byID = Dictionary(keys.map { ($0.keyID, $0) }, uniquingKeysWith: { first, _ in first })
        guard !byID.isEmpty, (1...byID.count).contains(threshold) else {
            throw .invalidInput("the threshold must be from 1 to the number of keys (\(byID.count)), got \(threshold)")
        }
        let record = DelegationRecord(name: role, channel: channel, keys: byID, threshold: threshold)
        return try write { () throws -> DelegationRecord in
            _ = try self.app(name)
            if let existing = try delegations(app: name).first(where: { $0.name == role || $0.channel == channel }) {
                throw RegistryError.conflict("\(name) already delegates \(existing.channel) to the role \(existing.name)")
            }
            let keysJSON = JSON.object(byID.mapValues(\.json)).canonicalString
            try db.run("INSERT INTO delegations(app, name, channel, keys_json, threshold, created_at, created_by) VALUES (?,?,?,?,?,?,?)",
                       [.text(name.rawValue), .text(role), .text(channel.rawValue), .text(keysJSON), .int(Int64(threshold)),
                        .text(TUFTime.format(now)), .text(actor.name)])
            try Registry.signing(with: signingKeys) { () throws(RegistryError) in
                try signDelegated(app: name, record, now: now)
            }
            try resign(app: name, from: .targets, now: now)
            _ = try AuditLog.append(db, app: name.rawValue, actor: actor, action: "keys.delegate", details: record.json, at: now)
            return record
        }
    }

    /// Signs the next version of a delegated role's metadata: the channel's listed targets,
    /// signed by a threshold of its keys (`roleSigners`: given for the change, the key
    /// store's, or a pending change's approvals). Inside the caller's write transaction.
    @discardableResult
    func signDelegated(app: AppName, _ record: DelegationRecord, now: Date, lifetime: TimeInterval? = nil) throws(RegistryError) -> Int64 {
        let version = (try read { () throws(StorageError) in
            try db.query("SELECT MAX(version) FROM delegated_metadata WHERE app = ? AND role = ?", [.text(app.rawValue), .text(record.name)]) { $0.int(0) }.first
        } ?? 0) + 1
        let expires = now.addingTimeInterval(lifetime ?? expiry.targets)
        let body = TargetsBody(common: CommonFields(version: version, expires: expires),
                               targets: try listedTargets(app: app) { $0.channel == record.channel })
        let signers = try roleSigners(role: record.name, signed: body.signedJSON, keyIDs: record.keys.keys.sorted(), threshold: record.threshold,
                                      keys: record.keys) { keyID throws(RegistryError) in
            try keys.storedDelegatedKey(app: app, record, keyID: keyID)
        }
        let bytes: [UInt8]
        do { bytes = try SignedTargets(signing: body, with: signers).bytes } catch { throw .wrapping(error) }
        try read { () throws(StorageError) in
            try db.run("INSERT INTO delegated_metadata(app, role, version, bytes, expires) VALUES (?,?,?,?,?)",
                       [.text(app.rawValue), .text(record.name), .int(version), .blob(bytes), .text(TUFTime.format(expires))])
        }
        return version
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

    /// One of the role's keys from the key store; nil when it does not hold it.
    func storedDelegatedKey(app: AppName, _ record: DelegationRecord, keyID: String) throws(RegistryError) -> SigningKey? {
        let url = delegatedKeyURL(app: app, role: record.name, keyID: keyID)
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        let pem = try SecretFile.read(url, what: "the \(record.name) key of \(app)")
        do { return try SigningKey(pem: pem) } catch { throw .keys("\(url.path): \(error)") }
    }
}
