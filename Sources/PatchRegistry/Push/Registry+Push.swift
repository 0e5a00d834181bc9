import Foundation
import PatchCore
import PatchPush
import PatchSigning

/// Push-triggered checks (issue 15; docs/PROTOCOL.md, "Push"): the device tokens apps
/// register, the app's APNs identity and its .p8 key, and the audit record of each round.
extension Registry {
    /// Stored tokens per app, at most, by default: registration is unauthenticated, so a
    /// flood of made-up tokens stops here instead of growing the table (and every push
    /// round) without end. Past it a new token evicts the stalest one (`registerPushDevice`).
    public static let defaultMaxPushDevicesPerApp = 1_000_000

    /// How long a token not registered again stays: devices register on every launch, so a
    /// token two months silent belongs to an app deleted, a device gone, or a flood.
    public static let pushTokenLifetime: TimeInterval = 60 * 86_400

    /// Tokens one registration evicts or one pruning pass deletes per app, at most: the
    /// work an anonymous request (or one pass) can cause stays bounded when the cap is lowered.
    static let pushDeleteBatch = 1_000

    /// A refresh of a token registered less than this ago with the same environment, version
    /// and channel changes nothing and writes nothing (issue 43: refreshes from 300 addresses,
    /// each a commit under the registry lock, took the check path's p99 from 1.5 to 215 ms).
    /// Far under `pushTokenLifetime`, so a device that refreshes daily never expires.
    public static let pushRefreshInterval: TimeInterval = 6 * 3600

    /// Whether a token written at `writtenAt` (to the second, as `registered_at` keeps it) is
    /// within `pushRefreshInterval` of `now`.
    public static func refreshIsRecent(writtenAt: Date, now: Date) -> Bool {
        writtenAt.timeIntervalSince1970 >= (now.timeIntervalSince1970 - pushRefreshInterval).rounded(.down)
    }

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

    /// Stores or refreshes one device token (`registerPushDevices` of one).
    @discardableResult
    public func registerPushDevice(app: AppName, token rawToken: String, deviceID: String, environment: PushEnvironment,
                                   appVersion: AppVersion, channel: ChannelName, limit: Int = Registry.defaultMaxPushDevicesPerApp,
                                   now: Date = Date(), admitNew: () -> Bool = { true }) throws(RegistryError) -> PushRegistration {
        let registration = try PushDeviceRegistration(app: app, token: rawToken, deviceID: deviceID, environment: environment,
                                                      appVersion: appVersion, channel: channel)
        return try registerPushDevices([registration], limit: limit, now: now, admitNew: { _ in admitNew() }).results[0].get().registration
    }

    /// Stores or refreshes device tokens, a group in one transaction (patchd's registration
    /// writer: one commit for many), each refused on its own with nothing changed for it: a
    /// token bound to another device (`conflict`: only the device that first registered it
    /// may re-point it), and a version and channel the app has no patch for (`notFound`: a
    /// token there would never be pushed). A new token is stored only when `admitNew` (of its
    /// index) says so (the caller's quota; else `.overQuota`), and beyond `limit` tokens of the
    /// app it takes the place of the stalest. A refresh the stored record `coalesces` writes
    /// nothing. A failure of the store fails every registration that was to be written.
    public func registerPushDevices(_ registrations: [PushDeviceRegistration], limit: Int = Registry.defaultMaxPushDevicesPerApp,
                                    now: Date = Date(), admitNew: (Int) -> Bool = { _ in true }) -> PushRegistrationBatch {
        var batch = PushRegistrationBatch(results: registrations.map { _ in .failure(.internalError("not decided")) }, evicted: [])
        var toWrite: [Int] = []
        // Decided first outside any transaction, so that refusals (the quota's above all) and
        // coalesced refreshes write nothing: on PostgreSQL every write wakes every instance's reload.
        do {
            try consistentRead { () throws in
                for (i, registration) in registrations.enumerated() {
                    do {
                        let stored = try storedPushToken(registration)
                        if let stored, stored.coalesces(registration, now: now) {
                            batch.results[i] = .success((.refreshed, stored))
                        } else if stored == nil, !admitNew(i) {
                            batch.results[i] = .success((.overQuota, nil))
                        } else {
                            toWrite.append(i)
                        }
                    } catch let refusal as RegistryError {
                        batch.results[i] = .failure(refusal)
                    }
                }
            }
        } catch {
            batch.results = registrations.map { _ in .failure(error) }
            return batch
        }
        guard !toWrite.isEmpty else { return batch }
        var evicted: [(app: AppName, token: String)] = []
        var written: [Int: Result<(registration: PushRegistration, record: PushTokenRecord?), RegistryError>] = [:]
        do {
            try write { () throws in
                for i in toWrite {
                    // Checked again inside the write (another registration of the group, or
                    // another instance, may have stored the token since): a refusal comes
                    // from those checks, before anything of this registration is written.
                    do { written[i] = .success(try writePushDevice(registrations[i], limit: limit, now: now, evicted: &evicted)) } catch let refusal as RegistryError {
                        written[i] = .failure(refusal)
                    }
                }
            }
        } catch {
            for i in toWrite { batch.results[i] = .failure(error) }
            return batch
        }
        for (i, result) in written { batch.results[i] = result }
        batch.evicted = evicted
        return batch
    }

    /// Inside a write: stores or refreshes one registration already decided to be written.
    private func writePushDevice(_ registration: PushDeviceRegistration, limit: Int, now: Date,
                                 evicted: inout [(app: AppName, token: String)]) throws -> (registration: PushRegistration, record: PushTokenRecord?) {
        let app = registration.app
        let key: [SQLValue] = [.text(app.rawValue), .text(registration.token)]
        let values: [SQLValue] = [.text(registration.environment.rawValue), .text(registration.appVersion.rawValue),
                                  .text(registration.channel.rawValue), .text(TUFTime.format(now))]
        let record = PushTokenRecord(registration, at: now)
        if let stored = try storedPushToken(registration) {
            try db.run("UPDATE push_devices SET environment = ?, app_version = ?, channel = ?, registered_at = ? WHERE app = ? AND token = ?",
                       values + key)
            // Stored before tokens were bound: this registration binds it.
            if stored.device == nil { try db.run("INSERT INTO push_device_owners(app, token, device) VALUES (?,?,?)", key + [.text(registration.device)]) }
            return (.refreshed, record)
        }
        var count = try db.query("SELECT stored FROM push_device_counts WHERE app = ?", [.text(app.rawValue)]) { $0.int(0) }.first
        if count == nil {
            count = try db.query("SELECT count(*) FROM push_devices WHERE app = ?", [.text(app.rawValue)]) { $0.int(0) }.first ?? 0
            try db.run("INSERT INTO push_device_counts(app, stored) VALUES (?,?)", [.text(app.rawValue), .int(count ?? 0)])
        }
        if let count, count >= Int64(limit) {
            // Ordered by the index alone (no tie-break): the stalest rows are its first.
            let stalest = try db.query("SELECT token FROM push_devices WHERE app = ? ORDER BY registered_at LIMIT ?",
                                       [.text(app.rawValue), .int(min(count - Int64(limit) + 1, Int64(Registry.pushDeleteBatch)))]) { $0.text(0) }
            try deletePushDevices(app: app, tokens: stalest)
            evicted += stalest.map { (app, $0) }
        }
        try db.run("INSERT INTO push_devices(environment, app_version, channel, registered_at, app, token) VALUES (?,?,?,?,?,?)", values + key)
        try db.run("INSERT INTO push_device_owners(app, token, device) VALUES (?,?,?)", key + [.text(registration.device)])
        try db.run("UPDATE push_device_counts SET stored = stored + 1 WHERE app = ?", [.text(app.rawValue)])
        return (.stored, record)
    }

    /// A registration's checks, in either a read or the write: the app exists, the token is
    /// not another device's (`conflict`), the version and channel have a patch (`notFound`).
    /// What is stored of the token, nil when nothing is.
    private func storedPushToken(_ registration: PushDeviceRegistration) throws -> PushTokenRecord? {
        let app = registration.app
        _ = try self.app(app)
        let rows = try db.query("""
            SELECT o.device, d.environment, d.app_version, d.channel, d.registered_at
            FROM push_devices d LEFT JOIN push_device_owners o ON o.app = d.app AND o.token = d.token
            WHERE d.app = ? AND d.token = ?
            """, [.text(app.rawValue), .text(registration.token)]) { s in (s.optionalText(0), s.text(1), s.text(2), s.text(3), s.text(4)) }
        if let row = rows.first, let owner = row.0, owner != registration.device {
            throw RegistryError.conflict("this device token was registered by another device; nothing was changed")
        }
        let patches = try db.query("""
            SELECT 1 FROM patches p LEFT JOIN patch_releases r ON r.app = p.app AND r.app_version = p.app_version AND r.number = p.number
            WHERE p.app = ? AND p.app_version = ? AND COALESCE(r.channel, 'production') = ? LIMIT 1
            """, [.text(app.rawValue), .text(registration.appVersion.rawValue), .text(registration.channel.rawValue)]) { $0.int(0) }
        guard !patches.isEmpty else {
            throw RegistryError.notFound("app \"\(app)\" has no patch for \(registration.appVersion) on channel \(registration.channel): a token is registered for a version and channel that has one; nothing was stored")
        }
        guard let (owner, environment, version, channel, at) = rows.first else { return nil }
        guard let environment = PushEnvironment(rawValue: environment), let version = try? AppVersion(version),
              let channel = try? ChannelName(channel), let at = TUFTime.parse(at) else {
            throw RegistryError.internalError("a corrupt row in push_devices")
        }
        return PushTokenRecord(device: owner, environment: environment, appVersion: version, channel: channel, registeredAt: at)
    }

    /// The live tokens (registered again within `pushTokenLifetime`) of the devices that run
    /// `appVersion` (nil: every version) and follow `channel` (nil: every channel), the most
    /// recently refreshed first: a round reaches the devices in use before a flood's.
    public func pushDevices(app: AppName, appVersion: AppVersion? = nil, channel: ChannelName? = nil,
                            now: Date = Date()) throws(RegistryError) -> [PushDevice] {
        // A mistyped audience is refused rather than answered with no devices ("pushed to 0").
        if let channel { try requireChannel(channel, app: app) }
        var sql = "SELECT token, environment, app_version, channel, registered_at FROM push_devices WHERE app = ? AND registered_at >= ?"
        var values: [SQLValue] = [.text(app.rawValue), .text(TUFTime.format(now.addingTimeInterval(-Registry.pushTokenLifetime)))]
        if let appVersion { sql += " AND app_version = ?"; values.append(.text(appVersion.rawValue)) }
        if let channel { sql += " AND channel = ?"; values.append(.text(channel.rawValue)) }
        sql += " ORDER BY registered_at DESC, token"
        let rows = try read { () throws(StorageError) in
            try db.query(sql, values) { s in (s.text(0), s.text(1), s.text(2), s.text(3), s.text(4)) }
        }
        return try rows.map { (token, environment, version, channel, at) throws(RegistryError) in
            guard let environment = PushEnvironment(rawValue: environment), let version = try? AppVersion(version),
                  let channel = try? ChannelName(channel) else { throw .internalError("a corrupt row in push_devices") }
            return PushDevice(token: token, environment: environment, appVersion: version, channel: channel, registeredAt: at)
        }
    }

    /// Deletes the tokens not registered again within `pushTokenLifetime` (patchd's upkeep),
    /// at most `pushDeleteBatch` per app a pass; how many.
    @discardableResult
    public func prunePushDevices(now: Date = Date()) throws(RegistryError) -> Int {
        let cutoff = TUFTime.format(now.addingTimeInterval(-Registry.pushTokenLifetime))
        var pruned = 0
        for app in try apps() {
            let expired = try read { () throws(StorageError) in
                try db.query("SELECT token FROM push_devices WHERE app = ? AND registered_at < ? ORDER BY registered_at LIMIT ?",
                             [.text(app.name.rawValue), .text(cutoff), .int(Int64(Registry.pushDeleteBatch))]) { $0.text(0) }
            }
            // A write only when there is something to delete: on PostgreSQL every write wakes
            // every instance's reload.
            guard !expired.isEmpty else { continue }
            pruned += try write { () throws -> Int in try deletePushDevices(app: app.name, tokens: expired) }
        }
        return pruned
    }

    /// Inside a write: the tokens, their bindings and their count; how many tokens were stored.
    @discardableResult
    private func deletePushDevices(app: AppName, tokens: [String]) throws -> Int {
        guard !tokens.isEmpty else { return 0 }
        let delete = try db.prepare("DELETE FROM push_devices WHERE app = ? AND token = ?")
        let unbind = try db.prepare("DELETE FROM push_device_owners WHERE app = ? AND token = ?")
        var removed = 0
        for token in Set(tokens) {
            try delete.run([.text(app.rawValue), .text(token)])
            removed += db.changes
            try unbind.run([.text(app.rawValue), .text(token)])
        }
        try db.run("UPDATE push_device_counts SET stored = stored - ? WHERE app = ?", [.int(Int64(removed)), .text(app.rawValue)])
        return removed
    }

    /// Deletes the tokens APNs said are gone; how many were still stored.
    @discardableResult
    public func removePushDevices(app: AppName, tokens: [String]) throws(RegistryError) -> Int {
        guard !tokens.isEmpty else { return 0 }
        return try write { () throws -> Int in try deletePushDevices(app: app, tokens: tokens) }
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
            if let channel { try requireChannel(channel, app: app) }
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

extension Registry {
    /// The registry as a round of pushes reads and writes it, recording the round as `actor`'s.
    public func pushStore(actor: Actor) -> RegistryPushStore { RegistryPushStore(registry: self, actor: actor) }
}

/// PatchPush's `PushStore` over a registry: the APNs identity and tokens it holds, the
/// newest timestamp, and after a round the gone tokens deleted and a `push.notify` audit event.
public struct RegistryPushStore: PushStore {
    let registry: Registry
    let actor: Actor

    public func pushIdentity(app: AppName) throws -> (config: APNsConfig, key: ECDSAPrivateKey) { try registry.apnsKey(app: app) }

    public func pushDevices(app: AppName, appVersion: AppVersion?, channel: ChannelName?) throws -> [PushDevice] {
        try registry.pushDevices(app: app, appVersion: appVersion, channel: channel)
    }

    public func timestampVersion(app: AppName) throws -> Int64 { try registry.latestMetadata(app: app, role: .timestamp).version }

    public func finishPush(_ announcement: PushAnnouncement, reason: String, result: PushResult, now: Date) throws {
        try registry.removePushDevices(app: announcement.app, tokens: result.gone)
        try registry.recordPush(app: announcement.app, appVersion: announcement.appVersion, channel: announcement.channel,
                                timestampVersion: announcement.timestampVersion, reason: reason, summary: result.summary, actor: actor, now: now)
    }
}
