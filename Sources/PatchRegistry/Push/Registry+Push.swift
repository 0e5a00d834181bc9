import Foundation
import PatchCore

/// Push-triggered checks (issue 15; docs/PROTOCOL.md, "Push"): the device tokens apps
/// register, the app's APNs identity and its .p8 key, and the audit record of each round.
extension Registry {
    /// Stored tokens per app, at most, by default: registration is unauthenticated, so a
    /// flood of made-up tokens stops here instead of growing the table (and every push
    /// round) without end. Tokens already stored are refreshed whatever the count.
    public static let defaultMaxPushDevicesPerApp = 1_000_000

    /// A device token as APNs hands it to the app: hex, 32 bytes today, up to 100 bytes
    /// allowed (Apple says the length may grow). Kept lowercase, so one token is one row.
    public static func pushToken(_ raw: String) throws(RegistryError) -> String {
        let token = raw.lowercased()
        guard (64...200).contains(token.utf8.count), token.utf8.count % 2 == 0,
              token.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else {
            throw .invalidInput("a device token must be 64 to 200 hexadecimal characters")
        }
        return token
    }

    /// Stores or refreshes one device token (one transaction). A new token beyond `limit`
    /// tokens of the app is refused (`conflict`).
    @discardableResult
    public func registerPushDevice(app: AppName, token rawToken: String, environment: PushEnvironment, appVersion: AppVersion,
                                   channel: ChannelName, limit: Int = Registry.defaultMaxPushDevicesPerApp,
                                   now: Date = Date()) throws(RegistryError) -> PushRegistration {
        let token = try Registry.pushToken(rawToken)
        return try write { () throws -> PushRegistration in
            _ = try self.app(app)
            let values: [SQLValue] = [.text(environment.rawValue), .text(appVersion.rawValue), .text(channel.rawValue), .text(TUFTime.format(now))]
            try db.run("UPDATE push_devices SET environment = ?, app_version = ?, channel = ?, registered_at = ? WHERE app = ? AND token = ?",
                       values + [.text(app.rawValue), .text(token)])
            if db.changes == 1 { return .refreshed }
            let stored = try db.query("SELECT count(*) FROM push_devices WHERE app = ?", [.text(app.rawValue)]) { $0.int(0) }.first ?? 0
            guard stored < Int64(limit) else {
                throw RegistryError.conflict("app \"\(app)\" has \(stored) device tokens, its limit: no new token is stored")
            }
            try db.run("INSERT INTO push_devices(environment, app_version, channel, registered_at, app, token) VALUES (?,?,?,?,?,?)",
                       values + [.text(app.rawValue), .text(token)])
            return .stored
        }
    }

    /// The tokens of the devices that run `appVersion` (nil: every version) and follow
    /// `channel` (nil: every channel), by environment then token.
    public func pushDevices(app: AppName, appVersion: AppVersion? = nil, channel: ChannelName? = nil) throws(RegistryError) -> [PushDevice] {
        var sql = "SELECT token, environment, app_version, channel, registered_at FROM push_devices WHERE app = ?"
        var values: [SQLValue] = [.text(app.rawValue)]
        if let appVersion { sql += " AND app_version = ?"; values.append(.text(appVersion.rawValue)) }
        if let channel { sql += " AND channel = ?"; values.append(.text(channel.rawValue)) }
        sql += " ORDER BY environment, token"
        let rows = try read { () throws(StorageError) in
            try db.query(sql, values) { s in (s.text(0), s.text(1), s.text(2), s.text(3), s.text(4)) }
        }
        return try rows.map { (token, environment, version, channel, at) throws(RegistryError) in
            guard let environment = PushEnvironment(rawValue: environment), let version = try? AppVersion(version),
                  let channel = try? ChannelName(channel) else { throw .internalError("a corrupt row in push_devices") }
            return PushDevice(token: token, environment: environment, appVersion: version, channel: channel, registeredAt: at)
        }
    }

    /// Deletes the tokens APNs said are gone; how many were still stored.
    @discardableResult
    public func removePushDevices(app: AppName, tokens: [String]) throws(RegistryError) -> Int {
        guard !tokens.isEmpty else { return 0 }
        return try write { () throws -> Int in
            let delete = try db.prepare("DELETE FROM push_devices WHERE app = ? AND token = ?")
            var removed = 0
            for token in Set(tokens) {
                try delete.run([.text(app.rawValue), .text(token)])
                removed += db.changes
            }
            return removed
        }
    }

    // MARK: The app's APNs identity

    /// Team and key IDs are 10 characters of A–Z and 0–9 (Apple's developer account).
    static func apnsIdentifier(_ raw: String, _ what: String) throws(RegistryError) -> String {
        guard raw.utf8.count == 10, raw.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) }) else {
            throw .invalidInput("\(what) must be 10 characters A-Z and 0-9, as the developer account shows it")
        }
        return raw
    }

    /// Sets (or replaces) the app's APNs identity: the .p8 key file first, written
    /// `{keys}/{app}/apns.{keyid}.p8` (mode 0600, never overwritten), then the record and an
    /// `app.apns` audit event in one transaction. The key is checked to be a P-256 key.
    @discardableResult
    public func setAPNs(app name: AppName, teamID rawTeam: String, keyID rawKey: String, topic: String, keyPEM: [UInt8],
                        actor: Actor, now: Date = Date()) throws(RegistryError) -> APNsConfig {
        let teamID = try Registry.apnsIdentifier(rawTeam, "the team ID")
        let keyID = try Registry.apnsIdentifier(rawKey, "the key ID")
        guard (1...255).contains(topic.utf8.count),
              topic.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || $0 == 0x2E || $0 == 0x2D }) else {
            throw .invalidInput("the topic must be the app's bundle ID (letters, digits, '.' and '-')")
        }
        do { _ = try ECDSAPrivateKey(pem: keyPEM) } catch { throw .invalidInput("the APNs key must be the .p8 file Apple issued (a P-256 private key): \(error)") }
        let url = keys.apnsKeyURL(app: name, keyID: keyID)
        var written: URL?
        do {
            return try write { () throws -> APNsConfig in
                _ = try self.app(name)
                if !FileManager.default.fileExists(atPath: url.path) {
                    try SecretFile.create(url, contents: keyPEM)
                    written = url
                }
                // The same key id must be the same key: a file left by an earlier app is not reused silently.
                guard try SecretFile.read(url, what: "the APNs key of \(name)") == keyPEM else {
                    throw RegistryError.conflict("\(url.path) already holds a different key with key ID \(keyID); move it away first")
                }
                let old = try apnsConfig(app: name)
                let config = APNsConfig(app: name, teamID: teamID, keyID: keyID, topic: topic, setAt: TUFTime.format(now), setBy: actor.name)
                try db.run("DELETE FROM apns_config WHERE app = ?", [.text(name.rawValue)])
                try db.run("INSERT INTO apns_config(app, team_id, key_id, topic, set_at, set_by) VALUES (?,?,?,?,?,?)",
                           [.text(name.rawValue), .text(teamID), .text(keyID), .text(topic), .text(config.setAt), .text(actor.name)])
                try AuditLog.append(db, app: name.rawValue, actor: actor, action: "app.apns",
                                    details: ["teamId": .string(teamID), "keyId": .string(keyID), "topic": .string(topic),
                                              "from": old.map { ["teamId": .string($0.teamID), "keyId": .string($0.keyID), "topic": .string($0.topic)] } ?? .null],
                                    at: now)
                return config
            }
        } catch {
            if let written { keys.discard([written]) }
            throw error
        }
    }

    /// The app's APNs identity, or nil when it has none (`patchctl apps apns`).
    public func apnsConfig(app name: AppName) throws(RegistryError) -> APNsConfig? {
        try read { () throws(StorageError) in
            try db.query("SELECT team_id, key_id, topic, set_at, set_by FROM apns_config WHERE app = ?", [.text(name.rawValue)]) { s in
                APNsConfig(app: name, teamID: s.text(0), keyID: s.text(1), topic: s.text(2), setAt: s.text(3), setBy: s.text(4))
            }.first
        }
    }

    /// The .p8 key of the app's APNs identity (checked private, as every key file).
    public func apnsKey(app name: AppName) throws(RegistryError) -> (config: APNsConfig, key: ECDSAPrivateKey) {
        guard let config = try apnsConfig(app: name) else {
            throw .notFound("app \"\(name)\" has no APNs key: set one with `patchctl apps apns \(name) --team-id T --key-id K --key AuthKey.p8 --topic BUNDLE_ID`")
        }
        let url = keys.apnsKeyURL(app: name, keyID: config.keyID)
        let pem = try SecretFile.read(url, what: "the APNs key of \(name)")
        do { return (config, try ECDSAPrivateKey(pem: pem)) } catch { throw .keys("\(url.path): \(error)") }
    }

    /// Records one round of pushes: what it announced and what APNs answered (`push.notify`).
    @discardableResult
    public func recordPush(app: AppName, appVersion: AppVersion?, channel: ChannelName?, timestampVersion: Int64, reason: String,
                           summary: PushSummary, actor: Actor, now: Date = Date()) throws(RegistryError) -> AuditEvent {
        try write { () throws -> AuditEvent in
            var details = summary.json.objectValue ?? [:]
            details["appVersion"] = appVersion.map { .string($0.rawValue) } ?? .null
            details["channel"] = channel.map { .string($0.rawValue) } ?? .null
            details["timestampVersion"] = .int(timestampVersion)
            details["reason"] = .string(reason)
            return try AuditLog.append(db, app: app.rawValue, actor: actor, action: "push.notify", details: .object(details), at: now)
        }
    }
}

extension KeyStore {
    /// `{keys}/{app}/apns.{keyid}.p8`: named by Apple's key ID, so a new key never replaces
    /// the file of the one still in use until the registry commits to it.
    public func apnsKeyURL(app: AppName, keyID: String) -> URL { appDirectory(app).appendingPathComponent("apns.\(keyID).p8") }
}
