import Foundation
import PatchCore
import PatchSigning

/// The two-person rule (issue 24): a release change to a role whose threshold the keys at
/// hand cannot meet (production of an app whose targets need two of its release keys, or a
/// delegated channel whose key is elsewhere) is not made. It is stored as a pending change
/// with the signatures that could be made, and lands when holders of the other keys approve
/// it, each signing the exact metadata it makes on their own machine. Devices check the
/// threshold themselves (TUF 5.4.4), so a server that skipped this would only get its
/// targets refused.
extension Registry {
    /// The most changes of one app that wait for signatures at once.
    public static let maxPendingChanges = 100

    /// Runs `body` (one operation) signing with `keys` as well as the key store's: keys given
    /// for one command (`--key-file`), never stored.
    public static func signing<T>(with keys: [SigningKey], _ body: () throws(RegistryError) -> T) throws(RegistryError) -> T {
        guard !keys.isEmpty else { return try body() }
        let outer = SigningContext.current
        let context = SigningContext(inheriting: outer, adding: keys)
        // What the inner part of a change captured and used is the change's (`proposing`
        // stores it with a pending change).
        defer {
            if let outer {
                if let captured = context.captured { outer.captured = captured }
                outer.used.formUnion(context.used)
            }
        }
        return try bound(context, body)
    }

    static func bound<T>(_ context: SigningContext, _ body: () throws(RegistryError) -> T) throws(RegistryError) -> T {
        do { return try SigningContext.$current.withValue(context) { try body() } } catch { throw .wrapping(error) }
    }

    /// One release operation, `change`: made when its signatures can be made here; else stored
    /// as pending and reported as `RegistryError.pending` (nothing served changed). With
    /// `dryRun`, a change that would wait says so (`signaturesNeeded`) and stores nothing.
    func proposing<T>(_ change: ReleaseChange, app: AppName, dryRun: Bool, actor: Actor, now: Date,
                      _ body: () throws(RegistryError) -> T) throws(RegistryError) -> T {
        let outer = SigningContext.current
        let context = SigningContext(inheriting: outer)
        do {
            return try Registry.bound(context, body)
        } catch .signaturesNeeded(let request) {
            // Applying an approved change: its signatures were enough when it was approved,
            // so the role's keys or threshold changed since.
            if let approval = outer?.approval {
                throw .conflict("change \(approval.id) was signed for keys the \(request.role) role no longer has (\(request.description)): nothing was changed; propose it again")
            }
            // A key given for this change that the waiting role does not list would sign
            // nothing of it: refused, not stored as a change it cannot help.
            if let stray = context.keys.first(where: { request.keys[$0.tufKey.keyID] == nil && !context.used.contains($0.tufKey.keyID) }) {
                let named = request.role == Role.targets.rawValue ? "the targets role" : "the delegated role \(request.role)"
                throw .keys("keyid \(stray.tufKey.keyID.prefix(12))… is not a key of \(named), which this change signs (its keys: \(request.keys.keys.sorted().map { String($0.prefix(12)) + "…" }.joined(separator: ", ")))")
            }
            if dryRun || db.inTransaction { throw .signaturesNeeded(request) }
            throw .pending(try storePending(app: app, change, request, captured: context.captured, actor: actor, now: now))
        }
    }

    private func storePending(app: AppName, _ change: ReleaseChange, _ request: SignatureRequest, captured: [UInt8]?,
                              actor: Actor, now: Date) throws(RegistryError) -> PendingChange {
        let bundle = change.bundle
        return try write { () throws -> PendingChange in
            // The same change asked again while it waits (a retried job, a guard's next pass)
            // is the change already waiting, not a second one to sign.
            // (A publish's arguments are the same for every bundle: each candidate's bundle is compared.)
            let same = try db.query("SELECT id FROM pending_changes WHERE app = ? AND role = ? AND change = ? AND state = 'pending' ORDER BY id",
                                    [.text(app.rawValue), .text(request.role), .text(change.json.canonicalString)]) { $0.int(0) }
            for id in same {
                if let existing = try? pendingChange(app: app, id: id), existing.change == change { return existing }
            }
            // Each waiting change keeps its bundle (up to `maxBundleSize`): a bound on what a
            // publisher token can make the registry hold without a second key holder.
            let waiting = try db.query("SELECT COUNT(*) FROM pending_changes WHERE app = ? AND state = 'pending'", [.text(app.rawValue)]) { $0.int(0) }.first ?? 0
            guard waiting < Registry.maxPendingChanges else {
                throw RegistryError.conflict("\(app) already has \(waiting) changes waiting for signatures: approve or reject some (`patchctl pending`) before proposing more")
            }
            let id = (try db.query("SELECT MAX(id) FROM pending_changes WHERE app = ?", [.text(app.rawValue)]) { $0.int(0) }.first ?? 0) + 1
            let pending = PendingChange(app: app, id: id, change: change, request: request, signatures: request.signatures,
                                        proposedAt: now, proposedBy: actor.name, state: .pending, captured: captured)
            try db.run("""
                INSERT INTO pending_changes(app, id, role, change, bundle, captured, signed, keyids, threshold, signatures, proposed_at, proposed_by, state)
                VALUES (?,?,?,?,?,?,?,?,?,?,?,?,'pending')
                """, [.text(app.rawValue), .int(id), .text(request.role), .text(change.json.canonicalString), bundle.map { .blob($0) } ?? .null,
                      captured.map { .blob($0) } ?? .null, .blob(request.message), .text(JSON.object(request.keys.mapValues(\.json)).canonicalString),
                      .int(Int64(request.threshold)), .text(JSON.array(pending.signatures.map(\.json)).canonicalString),
                      .text(TUFTime.format(now)), .text(actor.name)])
            try AuditLog.append(db, app: app.rawValue, actor: actor, action: "change.propose", details: .object(pending.auditDetails), at: now)
            return pending
        }
    }

    /// The app's changes in `states` (default: those still waiting), oldest first.
    public func pendingChanges(app: AppName, states: [PendingChange.State] = [.pending]) throws(RegistryError) -> [PendingChange] {
        _ = try self.app(app)
        let marks = states.map { _ in "?" }.joined(separator: ",")
        return try pendingRows(app: app, where: "state IN (\(marks))", states.map { .text($0.rawValue) })
    }

    public func pendingChange(app: AppName, id: Int64) throws(RegistryError) -> PendingChange {
        guard let change = try pendingRows(app: app, where: "id = ?", [.int(id)]).first else {
            throw .notFound("\(app) has no change \(id) (`patchctl pending --app \(app)` lists those waiting)")
        }
        return change
    }

    /// The app's changes matching `condition` (SQL over pending_changes), oldest first; the app is not looked up.
    func pendingRows(app: AppName, where condition: String, _ bindings: [SQLValue]) throws(RegistryError) -> [PendingChange] {
        let rows = try read { () throws(StorageError) in
            try db.query("""
                SELECT id, role, change, bundle, captured, signed, keyids, threshold, signatures, proposed_at, proposed_by, state
                FROM pending_changes WHERE app = ? AND \(condition) ORDER BY id
                """, [.text(app.rawValue)] + bindings) { row in
                (row.int(0), row.text(1), row.text(2), row.values[3] == .null ? nil : row.blob(3), row.values[4] == .null ? nil : row.blob(4),
                 row.blob(5), row.text(6), row.int(7), row.text(8), row.text(9), row.text(10), row.text(11))
            }
        }
        var changes: [PendingChange] = []
        for (id, role, changeJSON, bundle, captured, signed, keysJSON, threshold, signaturesJSON, at, by, state) in rows {
            do {
                let change = try ReleaseChange(json: try JSONParser.parse(Array(changeJSON.utf8)), bundle: bundle)
                var keys: [String: TUFKey] = [:]
                for (keyID, json) in try JSONParser.parse(Array(keysJSON.utf8)).objectValue ?? [:] { keys[keyID] = try TUFKey(json: json, role: role) }
                let signatures = (try JSONParser.parse(Array(signaturesJSON.utf8)).arrayValue ?? []).compactMap { entry -> TUFSignature? in
                    guard let keyID = entry["keyid"]?.stringValue, let sig = entry["sig"]?.stringValue.flatMap(Hex.decode) else { return nil }
                    return TUFSignature(keyID: keyID, signature: sig)
                }
                guard let proposedAt = TUFTime.parse(at), let state = PendingChange.State(rawValue: state) else {
                    throw RegistryError.internalError("bad time or state")
                }
                let request = SignatureRequest(role: role, signed: try JSONParser.parse(signed), message: signed, keys: keys,
                                               threshold: Int(threshold), signatures: [])
                changes.append(PendingChange(app: app, id: id, change: change, request: request, signatures: signatures,
                                             proposedAt: proposedAt, proposedBy: by, state: state, captured: captured))
            } catch let error as RegistryError { throw error } catch {
                throw .internalError("stored change \(id) of \(app) does not parse: \(error)")
            }
        }
        return changes
    }

    /// Adds signatures to pending change `id`: `signatures` made elsewhere (over --server, by
    /// `patchctl approve` on the key holder's machine) and signatures made here with `keys`.
    /// Each must be by a key of the role the change signs, not one that signed it already,
    /// and verify over exactly the metadata the change makes; any that does not is refused
    /// and nothing is recorded. When the threshold is met the change is applied, as it was
    /// proposed (the proposal's time and actor), in the same transaction that marks it
    /// approved; another change that landed first makes it stale (`conflict`, marked
    /// `superseded`: propose it again).
    @discardableResult
    public func approve(app: AppName, id: Int64, signatures given: [TUFSignature] = [], keys signingKeys: [SigningKey] = [],
                        actor: Actor, now: Date = Date()) throws(RegistryError) -> Approval {
        var pending = try pendingChange(app: app, id: id)
        guard pending.state == .pending else { throw .conflict("change \(id) of \(app) is \(pending.state.rawValue), not pending") }
        if let expires = pending.request.signed["expires"]?.stringValue.flatMap(TUFTime.parse), expires <= now {
            throw .conflict("change \(id) of \(app) made metadata that expired at \(TUFTime.format(expires)); reject it and propose it again")
        }
        var offered = given
        do {
            for key in signingKeys { offered.append(TUFSignature(keyID: key.tufKey.keyID, signature: try key.signature(for: pending.request.message))) }
        } catch { throw .crypto(error) }
        guard !offered.isEmpty else { throw .invalidInput("approving change \(id) needs a signature: give --key-file with a \(pending.request.role) key") }
        var added: [TUFSignature] = []
        for signature in offered {
            guard let key = pending.request.keys[signature.keyID] else {
                throw .invalidInput("keyid \(signature.keyID.prefix(12))… is not a key of the \(pending.request.role) role; change \(id) needs one of \(pending.request.keys.keys.sorted().map { String($0.prefix(12)) + "…" }.joined(separator: ", "))")
            }
            guard !(pending.signatures + added).contains(where: { $0.keyID == signature.keyID }) else {
                throw .conflict("keyid \(signature.keyID.prefix(12))… has already signed change \(id): the rule needs \(pending.request.threshold) different keys")
            }
            guard key.isValidSignature(signature.signature, for: pending.request.message) else {
                throw .invalidInput("the signature of keyid \(signature.keyID.prefix(12))… does not verify over change \(id)'s metadata: nothing was recorded")
            }
            added.append(signature)
        }
        pending.signatures += added
        let details = pending.auditDetails.merging(["approvedBy": .array(added.map { .string($0.keyID) })]) { $1 }
        guard pending.missing == 0 else {
            try write { () throws in
                try recordSignatures(pending)
                try AuditLog.append(db, app: app.rawValue, actor: actor, action: "change.approve", details: .object(details), at: now)
            }
            return Approval(change: pending, result: nil)
        }
        let proposer = (try? Actor(validating: pending.proposedBy)) ?? actor
        pending.state = .approved
        let approved = pending
        do {
            return try write { () throws -> Approval in
                let result = try Registry.bound(SigningContext(keys: [], approval: approved, commitTime: now)) { () throws(RegistryError) in
                    try apply(approved.change, app: app, actor: proposer, now: approved.proposedAt)
                }
                try recordSignatures(approved)
                try AuditLog.append(db, app: app.rawValue, actor: actor, action: "change.approve", details: .object(details), at: now)
                return Approval(change: approved, result: result)
            }
        } catch .conflict(let why) {
            // Stale for good: the metadata it was signed for can no longer be the next version.
            _ = try? write { () throws in
                try db.run("UPDATE pending_changes SET state = 'superseded' WHERE app = ? AND id = ? AND state = 'pending'", [.text(app.rawValue), .int(id)])
                try AuditLog.append(db, app: app.rawValue, actor: actor, action: "change.supersede",
                                    details: .object(pending.auditDetails.merging(["reason": .string(why)]) { $1 }), at: now)
            }
            throw .conflict(why)
        }
    }

    /// Withdraws pending change `id`: it will never land (its signatures are kept, for the record).
    @discardableResult
    public func reject(app: AppName, id: Int64, reason: String? = nil, actor: Actor, now: Date = Date()) throws(RegistryError) -> PendingChange {
        let reason = try Registry.releaseNotes(reason)
        return try write { () throws -> PendingChange in
            var pending = try pendingChange(app: app, id: id)
            guard pending.state == .pending else { throw RegistryError.conflict("change \(id) of \(app) is \(pending.state.rawValue), not pending") }
            pending.state = .rejected
            try recordSignatures(pending)
            var details = pending.auditDetails
            if let reason { details["reason"] = .string(reason) }
            try AuditLog.append(db, app: app.rawValue, actor: actor, action: "change.reject", details: .object(details), at: now)
            return pending
        }
    }

    private func recordSignatures(_ pending: PendingChange) throws {
        try db.run("UPDATE pending_changes SET signatures = ?, state = ? WHERE app = ? AND id = ?",
                   [.text(JSON.array(pending.signatures.map(\.json)).canonicalString), .text(pending.state.rawValue),
                    .text(pending.app.rawValue), .int(pending.id)])
    }

    /// Marks the waiting changes of `role` superseded once other metadata of that role is
    /// stored: theirs was signed as the version that has just been taken. Inside the write
    /// that stored it; the change being applied is marked approved after this.
    func supersedePending(app: AppName, roles: [String]) throws(RegistryError) {
        try read { () throws(StorageError) in
            for role in roles {
                try db.run("UPDATE pending_changes SET state = 'superseded' WHERE app = ? AND role = ? AND state = 'pending'",
                           [.text(app.rawValue), .text(role)])
            }
        }
    }

    /// Makes `change` (an approved pending change, inside its context) through the operation
    /// that proposed it; what that operation answers.
    private func apply(_ change: ReleaseChange, app: AppName, actor: Actor, now: Date) throws(RegistryError) -> JSON {
        switch change {
        case .operation(let kind, let values):
            // The proposer's call passed every check then (a revoke that empties a channel
            // was confirmed): the approvers sign its summary.
            try ReleaseOperations.decode(kind, values).execute(on: self, OperationContext(app: app, actor: actor, confirmed: true, now: now))
        case .targetsKeys(let keys, let threshold):
            try setTargetsKeys(app: app, keys: keys, threshold: threshold, actor: actor, now: now).json
        }
    }
}

/// What `approve` did: the change with its signatures, and, when this approval made it land,
/// what its operation answered.
public struct Approval: Sendable {
    public let change: PendingChange
    public let result: JSON?

    public var json: JSON {
        var out = change.json.objectValue ?? [:]
        if let result { out["result"] = result }
        return .object(out)
    }
}

extension PendingChange {
    var auditDetails: [String: JSON] {
        var details: [String: JSON] = ["id": .int(id), "kind": .string(change.kind), "summary": .string(change.summary),
                                       "role": .string(request.role), "threshold": .int(Int64(request.threshold)),
                                       "signedBy": .array(signatures.map { .string($0.keyID) }),
                                       // Who may still sign: what a webhook receiver tells the key holders (issue 47).
                                       "mayStillSign": .array(request.keys.keys.sorted().filter { id in !signatures.contains { $0.keyID == id } }.map { .string($0) })]
        if let bundle = change.bundle { details["bundleSha256"] = .string(Digest.sha256Hex(bundle)) }
        return details
    }
}
