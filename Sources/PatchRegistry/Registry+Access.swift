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

    /// The actor a change made with this token is recorded as. A name stored before names
    /// were held to `ReadableText` and that breaks it is left out: the token's id alone says
    /// who it was without showing text that reads as something else.
    public var actor: Actor {
        (try? Actor(validating: "\(name) (token \(id))")) ?? (try? Actor(validating: "token \(id)")) ?? Actor("a token with an unreadable id")
    }

    public func allows(_ role: TokenRole, app: AppName?) -> Bool {
        guard self.role == .publisher || role == .auditor else { return false }
        guard let scope = self.app else { return true }
        return app == scope
    }
}

/// A token as `tokens list` shows it: its public record and history, never its secret or hash.
public struct TokenListing: Sendable, Equatable {
    public let record: TokenRecord
    public let createdAt: String
    public let createdBy: String
    public let revokedAt: String?

    public var json: JSON {
        var out: [String: JSON] = ["id": .string(record.id), "scope": .string(record.app?.rawValue ?? "*"), "role": .string(record.role.rawValue),
                                   "name": .string(record.name), "createdAt": .string(createdAt), "createdBy": .string(createdBy)]
        if let revokedAt { out["revokedAt"] = .string(revokedAt) }
        return .object(out)
    }
}

/// A freshly issued token: `secret` is shown once and never stored.
public struct IssuedToken: Sendable {
    public let record: TokenRecord
    public let secret: String

    /// What `tokens create` answers, locally and from patchd: the token's fields and, this
    /// once, the secret as `token`.
    public var json: JSON {
        ["id": .string(record.id), "scope": .string(record.app?.rawValue ?? "*"), "role": .string(record.role.rawValue),
         "name": .string(record.name), "token": .string(secret)]
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
        guard (0...86_400 * 30).contains(rules.minInterval) else { throw .invalidInput("--min-interval must be 0 to 2592000 seconds") }
        guard (0...10_000_000).contains(rules.ipRatePerMinute) else { throw .invalidInput("--ip-rate must be 0 (off) to 10000000 per minute") }
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

    /// Issues a token of 256 random bits, stored only as its SHA-256. Scoped to one app, or
    /// to every app when `app` is nil.
    public func createToken(app: AppName?, role: TokenRole, name label: String, actor: Actor, now: Date = Date()) throws(RegistryError) -> IssuedToken {
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
        try write {
            try db.run("INSERT INTO tokens(id, hash, app, role, name, created_at, created_by) VALUES (?,?,?,?,?,?,?)",
                       [.text(record.id), .text(hash), app.map { .text($0.rawValue) } ?? .null, .text(role.rawValue), .text(label),
                        .text(TUFTime.format(now)), .text(actor.name)])
            try AuditLog.append(db, app: app?.rawValue ?? "*", actor: actor, action: "token.create",
                                details: ["id": .string(record.id), "role": .string(role.rawValue), "name": .string(label),
                                          "scope": .string(app?.rawValue ?? "*")], at: now)
        }
        return IssuedToken(record: record, secret: secret)
    }

    /// Revokes a token by its public id; it stops working at once (every request looks it up).
    public func revokeToken(id: String, actor: Actor, now: Date = Date()) throws(RegistryError) -> TokenRecord {
        try write { () throws -> TokenRecord in
            let found = try db.query("SELECT id, app, role, name, revoked_at FROM tokens WHERE id = ?", [.text(id)]) { s in
                (TokenRecord(id: s.text(0), app: s.optionalText(1).flatMap { try? AppName($0) },
                             role: TokenRole(rawValue: s.text(2)) ?? .auditor, name: s.text(3)), s.optionalText(4))
            }.first
            guard let (record, revokedAt) = found else { throw RegistryError.notFound("no token with id \(id.debugSanitized)") }
            if let revokedAt { throw RegistryError.conflict("token \(id) was already revoked at \(revokedAt)") }
            try db.run("UPDATE tokens SET revoked_at = ? WHERE id = ?", [.text(TUFTime.format(now)), .text(id)])
            try AuditLog.append(db, app: record.app?.rawValue ?? "*", actor: actor, action: "token.revoke",
                                details: ["id": .string(id), "name": .string(record.name)], at: now)
            return record
        }
    }

    /// Tokens in order of creation: every token (`scope` nil), or those scoped to exactly one
    /// app, which are the ones whose `token.create` event that app's audit log holds.
    public func tokens(scope app: AppName?) throws(RegistryError) -> [TokenListing] {
        if let app { _ = try self.app(app) }
        return try read { () throws(StorageError) in
            try db.query("SELECT id, app, role, name, created_at, created_by, revoked_at FROM tokens" + (app == nil ? "" : " WHERE app = ?")
                         + " ORDER BY created_at, id", app.map { [.text($0.rawValue)] } ?? []) { s in
                TokenListing(record: TokenRecord(id: s.text(0), app: s.optionalText(1).flatMap { try? AppName($0) },
                                                 role: TokenRole(rawValue: s.text(2)) ?? .auditor, name: s.text(3)),
                             createdAt: s.text(4), createdBy: s.text(5), revokedAt: s.optionalText(6))
            }
        }
    }

    /// Looks a presented token up by its hash. Lookup by hash means the comparison never
    /// touches the secret itself, so its timing reveals nothing about it.
    public func token(presented secret: String) throws(RegistryError) -> TokenRecord? {
        guard secret.hasPrefix("hp_"), secret.utf8.count == 67 else { return nil }
        let hash = Digest.sha256Hex(Array(secret.utf8))
        return try read { () throws(StorageError) in
            try db.query("SELECT id, app, role, name FROM tokens WHERE hash = ? AND revoked_at IS NULL", [.text(hash)]) { s in
                TokenRecord(id: s.text(0), app: s.optionalText(1).flatMap { try? AppName($0) },
                            role: TokenRole(rawValue: s.text(2)) ?? .auditor, name: s.text(3))
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
