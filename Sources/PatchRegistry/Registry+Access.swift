import Foundation
import PatchCore
import PatchSigning

/// Per-app throttling rules the server enforces and clients mirror.
public struct ThrottleRules: Sendable, Equatable {
    /// Seconds a device must wait between two checks (the simple check or timestamp.json).
    public var minInterval: Int
    /// Requests per minute per client IP for this app; 0 turns the limit off.
    public var ipRatePerMinute: Int

    public static let defaults = ThrottleRules(minInterval: 3600, ipRatePerMinute: 600)
    /// What each may be: up to 30 days between checks, up to ten million requests a minute.
    public static let minIntervalRange = 0...(86_400 * 30)
    public static let ipRateRange = 0...10_000_000

    public init(minInterval: Int, ipRatePerMinute: Int) {
        self.minInterval = minInterval
        self.ipRatePerMinute = ipRatePerMinute
    }

    public var json: JSON { ["minInterval": .int(Int64(minInterval)), "ipRatePerMinute": .int(Int64(ipRatePerMinute))] }
}

public enum TokenRole: String, Sendable, CaseIterable {
    /// Publishes, revokes, changes rollouts, and reads what an auditor reads.
    case publisher
    /// Reads the patch listing and the audit log.
    case auditor
}

/// An API token as the registry knows it: never the token itself, only its SHA-256.
public struct TokenRecord: Sendable, Equatable {
    public let id: String
    /// nil: every app.
    public let app: AppName?
    public let role: TokenRole
    public let name: String
    /// The id of the token its line of issue starts at (itself, for one `patchctl tokens
    /// create` issued): the tokens issued from one token, and from those, share one budget of
    /// changes, so issuing children does not multiply it (issue 43). Known when the token is
    /// looked up by its secret; otherwise its own id.
    public var tree: String

    public init(id: String, app: AppName?, role: TokenRole, name: String, tree: String? = nil) {
        self.id = id
        self.app = app
        self.role = role
        self.name = name
        self.tree = tree ?? id
    }

    /// The same token: its line of issue is what is known of it, not part of it.
    public static func == (lhs: TokenRecord, rhs: TokenRecord) -> Bool {
        lhs.id == rhs.id && lhs.app == rhs.app && lhs.role == rhs.role && lhs.name == rhs.name
    }

    /// What `tokens revoke` answers, locally and from patchd: the token, `"revoked": true`.
    public var revokedJSON: JSON {
        ["id": .string(id), "scope": .string(app?.rawValue ?? "*"), "role": .string(role.rawValue), "name": .string(name), "revoked": true]
    }

    /// The actor a change made with this token is recorded as. A name stored before names
    /// were held to `ReadableText` and that breaks it is left out: the token's id alone says
    /// who it was without showing text that reads as something else.
    public var actor: Actor {
        (try? Actor(validating: "\(name) (token \(id))")) ?? (try? Actor(validating: "token \(id)")) ?? Actor("a token with an unreadable id")
    }

    public func allows(_ role: TokenRole, app: AppName?) -> Bool {
        guard acts(as: role) else { return false }
        guard let scope = self.app else { return true }
        return app == scope
    }

    /// Whether it may act as `role` on some app: a publisher may do what an auditor may.
    public func acts(as role: TokenRole) -> Bool { self.role == .publisher || role == .auditor }

    /// Whether it may issue a token scoped to `app` (nil: every app): only a publisher, and
    /// none broader than itself, so no token outgrows the one it came from.
    public func mayIssue(app: AppName?) -> Bool {
        role == .publisher && (self.app == nil || self.app == app)
    }

    /// Why it may not do `action`, naming what it is and what `action` needs, so whoever holds
    /// it knows which token to ask for: "this token is an auditor token for app demo;
    /// publishing needs a publisher token for demo or for every app". patchd's 403 says this.
    public func refusal(needs role: TokenRole, for action: String, scope: String = "") -> String {
        let article = self.role == .auditor ? "an" : "a"
        let has = "this token is \(article) \(self.role.rawValue) token for \(app.map { "app \($0)" } ?? "every app")"
        let kind = role == .auditor ? "a token (auditor or publisher)" : "a publisher token"
        return "\(has); \(action) needs \(kind)\(scope)"
    }

    /// The same, for `action` on `app` (nil: every app).
    public func refusal(needs role: TokenRole, app: AppName?, for action: String) -> String {
        refusal(needs: role, for: action, scope: " for \(app.map { "\($0) or for every app" } ?? "every app")")
    }
}

/// A token as `tokens list` shows it: its public record and history, never its secret or hash.
public struct TokenListing: Sendable, Equatable {
    public let record: TokenRecord
    public let createdAt: String
    public let createdBy: String
    public let revokedAt: String?
    /// The id of the token it was issued with (POST /v1/tokens); nil for one `patchctl tokens
    /// create` issued. Revoking that token revokes this one.
    public let parent: String?

    public init(record: TokenRecord, createdAt: String, createdBy: String, revokedAt: String?, parent: String? = nil) {
        self.record = record
        self.createdAt = createdAt
        self.createdBy = createdBy
        self.revokedAt = revokedAt
        self.parent = parent
    }

    public var json: JSON {
        var out: [String: JSON] = ["id": .string(record.id), "scope": .string(record.app?.rawValue ?? "*"), "role": .string(record.role.rawValue),
                                   "name": .string(record.name), "createdAt": .string(createdAt), "createdBy": .string(createdBy)]
        if let revokedAt { out["revokedAt"] = .string(revokedAt) }
        if let parent { out["parent"] = .string(parent) }
        return .object(out)
    }
}

/// A freshly issued token: `secret` is shown once and never stored.
public struct IssuedToken: Sendable {
    public let listing: TokenListing
    public let secret: String
    public var record: TokenRecord { listing.record }

    /// What `tokens create --json` and POST /v1/tokens answer: the listing entry and, this
    /// once, the secret as `token`.
    public var json: JSON {
        var out = listing.json.objectValue ?? [:]
        out["token"] = .string(secret)
        return .object(out)
    }
}

extension Registry {
    // MARK: Throttling rules

    public func throttleRules(app: AppName) throws(RegistryError) -> ThrottleRules {
        _ = try self.app(app)
        return try read { () throws(StorageError) in
            try db.query("SELECT min_interval, ip_rate FROM throttle WHERE app = ?", [.text(app.rawValue)]) {
                ThrottleRules(minInterval: Int($0.int(0)), ipRatePerMinute: Int($0.int(1)))
            }.first ?? .defaults
        }
    }

    /// Stores new rules; rules equal to the current ones change nothing and append no audit
    /// event. Returns whether anything changed.
    @discardableResult
    public func setThrottleRules(app: AppName, _ rules: ThrottleRules, actor: Actor, now: Date = Date()) throws(RegistryError) -> Bool {
        guard ThrottleRules.minIntervalRange.contains(rules.minInterval) else { throw .invalidInput("--min-interval must be 0 to 2592000 seconds") }
        guard ThrottleRules.ipRateRange.contains(rules.ipRatePerMinute) else { throw .invalidInput("--ip-rate must be 0 (off) to 10000000 per minute") }
        return try write { () throws -> Bool in
            let old = try throttleRules(app: app)  // inside: the audit event's "from" is what this change replaced
            guard old != rules else { return false }
            try db.run("INSERT INTO throttle(app, min_interval, ip_rate) VALUES (?,?,?) ON CONFLICT(app) DO UPDATE SET min_interval = excluded.min_interval, ip_rate = excluded.ip_rate",
                       [.text(app.rawValue), .int(Int64(rules.minInterval)), .int(Int64(rules.ipRatePerMinute))])
            try AuditLog.append(db, app: app.rawValue, actor: actor, action: "app.throttle",
                                details: ["from": old.json, "to": rules.json], at: now)
            return true
        }
    }

    // MARK: Tokens

    /// A token's name is part of its actor, so it is held to the same rule (`ReadableText`):
    /// refused, never cleaned, so two names that look alike are two names that are alike.
    public static let maxTokenName = 200

    /// Live tokens one token may have issued at once (POST /v1/tokens): the review's 30
    /// children from 30 addresses each had the per-token change budget before budgets were
    /// shared by a line of issue; this bounds what a leaked token can spread into.
    public static let maxChildTokens = 16

    /// How long a line of issue may be (a token, its child, the child's child, …).
    public static let maxIssueDepth = 8

    /// Issues a token of 256 random bits, stored only as its SHA-256. Scoped to one app, or
    /// to every app when `app` is nil. `parent`: the id of the token it is issued with (POST
    /// /v1/tokens), which must still be live when this commits; revoking it revokes this one.
    /// Whether the parent may issue it (`TokenRecord.mayIssue`) is for the caller to check.
    public func createToken(app: AppName?, role: TokenRole, name label: String, actor: Actor, parent: String? = nil,
                            now: Date = Date()) throws(RegistryError) -> IssuedToken {
        guard !label.isEmpty else { throw .invalidInput("a token needs a name (who or what uses it)") }
        do { try ReadableText.check(label, field: "token name", maxLength: Registry.maxTokenName) } catch { throw .invalidInput(error.message) }
        if let app { _ = try self.app(app) }
        let secretBytes: [UInt8]
        do { secretBytes = try SecureRandom.bytes(32) } catch { throw .crypto(error) }
        let secret = "hp_" + Hex.encode(secretBytes)
        let hash = Digest.sha256Hex(Array(secret.utf8))
        // The id is public (it appears in the audit log); it is not derived from the secret.
        let idBytes: [UInt8]
        do { idBytes = try SecureRandom.bytes(6) } catch { throw .crypto(error) }
        let record = TokenRecord(id: Hex.encode(idBytes), app: app, role: role, name: label)
        let listing = TokenListing(record: record, createdAt: TUFTime.format(now), createdBy: actor.name, revokedAt: nil, parent: parent)
        try write {
            // Under the writer lock: a parent revoked (by another process) since its request was
            // admitted leaves no live child behind its revocation.
            if let parent, try db.query("SELECT 1 FROM tokens WHERE id = ? AND revoked_at IS NULL", [.text(parent)], row: { $0.int(0) }).isEmpty {
                throw RegistryError.conflict("token \(parent.debugSanitized), which would issue it, is revoked or unknown; nothing was issued")
            }
            if let parent {
                let children = try db.query("SELECT COUNT(*) FROM tokens WHERE parent = ? AND revoked_at IS NULL", [.text(parent)]) { $0.int(0) }.first ?? 0
                guard children < Int64(Registry.maxChildTokens) else {
                    throw RegistryError.conflict("token \(parent) has issued \(children) live tokens, the most one token may: revoke some (`patchctl tokens revoke ID`) first; nothing was issued")
                }
                let depth = try db.query("""
                    WITH RECURSIVE up(id, parent, depth) AS (
                        SELECT id, parent, 1 FROM tokens WHERE id = ?
                        UNION ALL SELECT t.id, t.parent, up.depth + 1 FROM tokens t JOIN up ON t.id = up.parent WHERE up.depth <= ?
                    ) SELECT MAX(depth) FROM up
                    """, [.text(parent), .int(Int64(Registry.maxIssueDepth))]) { $0.int(0) }.first ?? 1
                guard depth < Int64(Registry.maxIssueDepth) else {
                    throw RegistryError.conflict("token \(parent) is \(depth) tokens down a line of issue, the longest one may be: issue from a token nearer its start; nothing was issued")
                }
            }
            try db.run("INSERT INTO tokens(id, hash, app, role, name, created_at, created_by, parent) VALUES (?,?,?,?,?,?,?,?)",
                       [.text(record.id), .text(hash), app.map { .text($0.rawValue) } ?? .null, .text(role.rawValue), .text(label),
                        .text(listing.createdAt), .text(actor.name), parent.map { .text($0) } ?? .null])
            var details: [String: JSON] = ["id": .string(record.id), "role": .string(role.rawValue), "name": .string(label),
                                           "scope": .string(app?.rawValue ?? "*")]
            if let parent { details["parent"] = .string(parent) }
            try AuditLog.append(db, app: app?.rawValue ?? "*", actor: actor, action: "token.create", details: .object(details), at: now)
        }
        return IssuedToken(listing: listing, secret: secret)
    }

    /// Revokes a token by its public id, and with it every live token issued from it, from
    /// those, and so on (`parent`): a leaked token cannot have minted one that outlives it.
    /// They stop working at once (every request looks its token up). One `token.revoke` per
    /// token, each under its own scope; those revoked along with it name it in `revokedWith`.
    /// `authorize` sees the token found before anything changes, inside the same write, and
    /// refuses it by throwing (patchd: one broader than the caller).
    public func revokeToken(id: String, actor: Actor, now: Date = Date(),
                            authorize: (TokenRecord) throws(RegistryError) -> Void = { _ in }) throws(RegistryError) -> TokenRecord {
        try write { () throws -> TokenRecord in
            let columns = "id, app, role, name, revoked_at"
            func row(_ s: SQLRow) -> (record: TokenRecord, revokedAt: String?) {
                (TokenRecord(id: s.text(0), app: s.optionalText(1).flatMap { try? AppName($0) },
                             role: TokenRole(rawValue: s.text(2)) ?? .auditor, name: s.text(3)), s.optionalText(4))
            }
            let found = try db.query("SELECT \(columns) FROM tokens WHERE id = ?", [.text(id)], row: row).first
            guard let (record, revokedAt) = found else { throw RegistryError.notFound("no token with id \(id.debugSanitized)") }
            try authorize(record)
            if let revokedAt { throw RegistryError.conflict("token \(id) was already revoked at \(revokedAt)") }
            // The walk goes through descendants already revoked: theirs need not be.
            let descendants = try db.query("""
                WITH RECURSIVE issued(id) AS (
                    SELECT id FROM tokens WHERE parent = ?
                    UNION SELECT t.id FROM tokens t JOIN issued ON t.parent = issued.id
                )
                SELECT \(columns) FROM tokens WHERE id IN (SELECT id FROM issued) AND revoked_at IS NULL ORDER BY created_at, id
                """, [.text(id)], row: row).map(\.record)
            var revoked: [(TokenRecord, [String: JSON])] = [(record, [:])]
            revoked += descendants.map { ($0, ["revokedWith": .string(id)]) }
            for (token, extra) in revoked {
                try db.run("UPDATE tokens SET revoked_at = ? WHERE id = ?", [.text(TUFTime.format(now)), .text(token.id)])
                let details: [String: JSON] = ["id": .string(token.id), "name": .string(token.name)]
                try AuditLog.append(db, app: token.app?.rawValue ?? "*", actor: actor, action: "token.revoke",
                                    details: .object(details.merging(extra) { $1 }), at: now)
            }
            return record
        }
    }

    /// Tokens in order of creation: every token (`scope` nil), or those scoped to exactly one
    /// app, which are the ones whose `token.create` event that app's audit log holds.
    public func tokens(scope app: AppName?) throws(RegistryError) -> [TokenListing] {
        if let app { _ = try self.app(app) }
        return try read { () throws(StorageError) in
            try db.query("SELECT id, app, role, name, created_at, created_by, revoked_at, parent FROM tokens" + (app == nil ? "" : " WHERE app = ?")
                         + " ORDER BY created_at, id", app.map { [.text($0.rawValue)] } ?? []) { s in
                TokenListing(record: TokenRecord(id: s.text(0), app: s.optionalText(1).flatMap { try? AppName($0) },
                                                 role: TokenRole(rawValue: s.text(2)) ?? .auditor, name: s.text(3)),
                             createdAt: s.text(4), createdBy: s.text(5), revokedAt: s.optionalText(6), parent: s.optionalText(7))
            }
        }
    }

    /// Looks a presented token up by its hash. Lookup by hash means the comparison never
    /// touches the secret itself, so its timing reveals nothing about it.
    public func token(presented secret: String) throws(RegistryError) -> TokenRecord? {
        guard secret.hasPrefix("hp_"), secret.utf8.count == 67 else { return nil }
        let hash = Digest.sha256Hex(Array(secret.utf8))
        return try read { () throws(StorageError) in
            // The token, and the first token of its line of issue (parents followed up, at most
            // `maxIssueDepth` of them: a chain is never longer, createToken refuses deeper).
            try db.query("""
                WITH RECURSIVE up(id, parent, depth) AS (
                    SELECT id, parent, 0 FROM tokens WHERE hash = ? AND revoked_at IS NULL
                    UNION ALL SELECT t.id, t.parent, up.depth + 1 FROM tokens t JOIN up ON t.id = up.parent WHERE up.depth < ?
                )
                SELECT t.id, t.app, t.role, t.name, (SELECT id FROM up ORDER BY depth DESC LIMIT 1)
                FROM tokens t WHERE t.hash = ? AND t.revoked_at IS NULL
                """, [.text(hash), .int(Int64(Registry.maxIssueDepth)), .text(hash)]) { s in
                TokenRecord(id: s.text(0), app: s.optionalText(1).flatMap { try? AppName($0) },
                            role: TokenRole(rawValue: s.text(2)) ?? .auditor, name: s.text(3), tree: s.optionalText(4))
            }.first
        }
    }

    /// A cheap value that changes whenever another connection commits, so a long-running
    /// server notices changes made by `patchctl` or another patchd on the same registry.
    public func dataVersion() throws(RegistryError) -> Int {
        try read { () throws(StorageError) in Int(try db.dataVersion()) }
    }
}

extension Registry {
    /// Per app, a string that changes whenever anything a server serves for it changes:
    /// the newest version of each role's metadata, the throttling rules and the JSPatch key.
    public func servingFingerprints(app: AppName? = nil) throws(RegistryError) -> [AppName: String] {
        // The same list on both: SQLite 3.40 has no ORDER BY inside an aggregate, and its
        // group_concat follows the GROUP BY's order already.
        let aggregate = db.dialect == .sqlite ? "group_concat(role || ':' || v, ',')" : "string_agg(role || ':' || v, ',' ORDER BY role)"
        return try read { () throws(StorageError) in
            var out: [AppName: String] = [:]
            let rows = try db.query("""
                SELECT a.name,
                       (SELECT \(aggregate) FROM (SELECT role, MAX(version) AS v FROM metadata WHERE app = a.name GROUP BY role) AS latest),
                       COALESCE((SELECT min_interval || '/' || ip_rate FROM throttle WHERE app = a.name), ''),
                       COALESCE((SELECT public_key_sha256 FROM jspatch_keys WHERE app = a.name), '')
                FROM apps a
                """ + (app == nil ? "" : " WHERE a.name = ?"), app.map { [.text($0.rawValue)] } ?? []) { s in (s.text(0), s.text(1) + "|" + s.text(2) + "|" + s.text(3)) }
            for (name, fingerprint) in rows { if let app = try? AppName(name) { out[app] = fingerprint } }
            return out
        }
    }
}
