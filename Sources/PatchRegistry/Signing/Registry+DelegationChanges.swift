import Foundation
import PatchCore
import PatchSigning

/// What `delegate` did: the role as it is now, and the keys it no longer lists (a rotation).
public struct DelegationChange: Sendable {
    public let record: DelegationRecord
    /// Key ids the role listed before a `--replace` and does not any more; empty for a new
    /// delegation.
    public let replacedKeyIDs: [String]
    public let replaced: Bool

    public var json: JSON {
        var out = record.json.objectValue ?? [:]
        if replaced { out["replacedKeyIDs"] = .array(replacedKeyIDs.map { .string($0) }) }
        return .object(out)
    }
}

extension Registry {
    /// `patchctl keys delegate`: `channel`'s targets are signed from now on by the role `name`
    /// with `keys` (a threshold of them), not by the top-level targets key. The top-level key
    /// signs targets once more, now listing the delegation and no longer that channel's
    /// targets; the role's next metadata (the channel's current targets) is signed with
    /// `signingKeys` or the keys the registry holds for it.
    ///
    /// `replace` rotates the keys of the role that already signs the channel (same name): the
    /// delegator lists only `keys` from now on, so devices refuse what the replaced keys sign,
    /// with no new app binary. `threshold` nil keeps the role's threshold (1 for a new role).
    /// `presignedRole`: the role's next metadata signed where its keys are (`nextDelegatedBody`),
    /// for a registry that holds none of them (`keys delegate --server --key-file`).
    /// A channel whose role was retired (`undelegate`) is delegated again under that name:
    /// snapshot lists it still, and its versions go on from the last.
    @discardableResult
    public func delegate(app name: AppName, channel: ChannelName, role: String, keys: [TUFKey], threshold: Int? = nil,
                         signingKeys: [SigningKey] = [], presignedRole: [UInt8]? = nil, replace: Bool = false, actor: Actor,
                         now: Date = Date()) throws(RegistryError) -> DelegationChange {
        try Registry.checkDelegatedRoleName(role)
        guard channel != .production else {
            throw .invalidInput("production stays signed by the top-level targets key; delegate another channel (e.g. staging)")
        }
        let byID = Dictionary(keys.map { ($0.keyID, $0) }, uniquingKeysWith: { first, _ in first })
        guard !byID.isEmpty else { throw .invalidInput("a delegated role needs at least one key") }
        let proposed = ReleaseChange(DelegateOperation(channel: channel, role: role, keys: byID.keys.sorted().map { byID[$0]! }, threshold: threshold,
                                                       replace: replace))
        let change = try proposing(proposed, app: name, dryRun: false, actor: actor, now: now) { () throws(RegistryError) in
          try Registry.signing(with: signingKeys) { () throws(RegistryError) in try write { () throws -> DelegationChange in
            _ = try self.app(name, declaring: [channel])
            let rows = try delegationRows(app: name)
            let sameName = rows.first { $0.record.name == role }, sameChannel = rows.first { $0.record.channel == channel }
            if let other = sameChannel, other.record.name != role {
                throw RegistryError.conflict(other.removed
                    ? "\(channel) of \(name) was delegated to the role \(other.record.name) before: delegate it again as --name \(other.record.name) (snapshot keeps listing \(other.record.name).json, so the name stays the channel's)"
                    : "\(name) already delegates \(channel) to the role \(other.record.name)\(replace ? ": --replace keeps the role's name" : "")")
            }
            if let other = sameName, other.record.channel != channel {
                throw RegistryError.conflict("the role name \(role) of \(name) \(other.removed ? "was" : "is") \(other.record.channel)'s: choose another name")
            }
            let previous = sameName.flatMap { $0.removed ? nil : $0.record }
            if previous != nil, !replace {
                throw RegistryError.conflict("\(name) already delegates \(channel) to the role \(role): give --replace to rotate its keys")
            }
            if previous == nil, replace {
                throw RegistryError.notFound("\(channel) of \(name) is not delegated: leave out --replace to delegate it")
            }
            let threshold = threshold ?? previous?.threshold ?? 1
            guard (1...byID.count).contains(threshold) else {
                throw RegistryError.invalidInput("the threshold must be from 1 to the number of keys (\(byID.count)), got \(threshold)\(threshold == previous?.threshold ? " (the role's threshold): give --threshold" : "")")
            }
            let record = DelegationRecord(name: role, channel: channel, keys: byID, threshold: threshold)
            guard record != previous else { throw RegistryError.invalidInput("the role \(role) already has exactly these keys and threshold") }
            let keysJSON = SQLValue.text(JSON.object(byID.mapValues(\.json)).canonicalString)
            if sameName == nil {
                try db.run("INSERT INTO delegations(app, name, channel, keys_json, threshold, created_at, created_by) VALUES (?,?,?,?,?,?,?)",
                           [.text(name.rawValue), .text(role), .text(channel.rawValue), keysJSON, .int(Int64(threshold)),
                            .text(TUFTime.format(now)), .text(actor.name)])
            } else {
                try db.run("UPDATE delegations SET keys_json = ?, threshold = ?, removed_at = NULL WHERE app = ? AND name = ?",
                           [keysJSON, .int(Int64(threshold)), .text(name.rawValue), .text(role)])
            }
            try signDelegated(app: name, record, now: now, presigned: presignedRole)
            try resign(app: name, from: .targets, now: now)
            let replaced = (previous?.keys.keys.sorted() ?? []).filter { byID[$0] == nil }
            let change = DelegationChange(record: record, replacedKeyIDs: replaced, replaced: previous != nil)
            _ = try AuditLog.append(db, app: name.rawValue, actor: actor, action: "keys.delegate", details: change.json, at: now)
            return change
          } }
        }
        // A replaced key signs nothing devices accept any more: the registry's copy goes,
        // after the commit, as `rotateKey` does with a top-level key.
        self.keys.discard(change.replacedKeyIDs.map { self.keys.delegatedKeyURL(app: name, role: role, keyID: $0) })
        return change
    }

    /// `patchctl keys undelegate`: `channel`'s targets return to top-level targets, signed by
    /// the top-level targets key (which must be here), and the delegation is no longer listed,
    /// so devices stop trusting the role's keys for anything. The role's last metadata stays
    /// listed in snapshot (a client refuses a snapshot that drops a role it trusted) and
    /// servable; the registry's copies of its keys are removed.
    @discardableResult
    public func undelegate(app name: AppName, channel: ChannelName, actor: Actor, now: Date = Date()) throws(RegistryError) -> DelegationRecord {
        let record = try write { () throws -> DelegationRecord in
            _ = try self.app(name, declaring: [channel])
            guard let record = try delegations(app: name).first(where: { $0.channel == channel }) else {
                throw RegistryError.notFound("\(channel) of \(name) is not delegated")
            }
            try db.run("UPDATE delegations SET removed_at = ? WHERE app = ? AND name = ?",
                       [.text(TUFTime.format(now)), .text(name.rawValue), .text(record.name)])
            try resign(app: name, from: .targets, now: now)
            _ = try AuditLog.append(db, app: name.rawValue, actor: actor, action: "keys.undelegate", details: record.json, at: now)
            return record
        }
        keys.discard(record.keys.keys.map { keys.delegatedKeyURL(app: name, role: record.name, keyID: $0) })
        return record
    }

    /// Re-signs each delegated role in force whose metadata expires within half its
    /// lifetime (`refreshExpiring`), or before `deadline` with `lifetime` (an export's
    /// `--expires`), with the keys the registry holds for it. Inside the caller's write
    /// transaction; the caller re-signs snapshot when any was. A role whose keys are not here
    /// is left as it is, and the first such failure returned.
    func refreshDelegated(app name: AppName, now: Date, deadline: Date? = nil, lifetime: TimeInterval? = nil) throws(RegistryError) -> (roles: [String], failure: RegistryError?) {
        let expiries = try delegatedExpiries(app: name)
        var roles: [String] = []
        var failure: RegistryError?
        for record in try delegations(app: name) {
            let expires = expiries[record.name] ?? .distantPast
            guard expires < (deadline ?? now.addingTimeInterval(expiry.targets / 2)) else { continue }
            // The keys are read before anything is written: a role without them changes nothing.
            do { try signDelegated(app: name, record, now: now, lifetime: lifetime) } catch {
                if case .keys = error, failure == nil { failure = error; continue }
                if case .keys = error { continue }
                throw error
            }
            roles.append(record.name)
        }
        if let role = try withholdRole(app: name), (expiries[Withholds.roleName] ?? .distantFuture) < (deadline ?? now.addingTimeInterval(expiry.targets / 2)) {
            do {
                try signWithhold(app: name, role: role, now: now, lifetime: lifetime)
                roles.append(Withholds.roleName)
            } catch {
                guard case .keys = error else { throw error }
                failure = failure ?? error
            }
        }
        return (roles, failure)
    }
}
