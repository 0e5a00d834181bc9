import Foundation
import PatchCore
import PatchSigning

/// What `setRollout` reports: the patch as it is now, and whether anything changed.
public struct RolloutChange: Sendable {
    public let patch: PatchRecord
    public let changed: Bool
    /// The percentage before the change.
    public let from: Int
    /// A staged rollout the change stopped: a person setting the percentage takes over from it.
    public var stoppedSchedule: RolloutSchedule? = nil
    /// The patch's entry in the withhold role, when the change went that way (a halt where
    /// the targets keys are not at hand).
    public var withheld: WithheldPatch? = nil

    /// The Patch JSON with `"changed"` and `"from"`, as `patchctl rollout` and the rollout route answer.
    public var json: JSON {
        var object = patch.json.objectValue ?? [:]
        object["changed"] = .bool(changed)
        object["from"] = .int(Int64(from))
        if let stoppedSchedule { object["stoppedSchedule"] = stoppedSchedule.json }
        if let withheld { object["withheld"] = withheld.json }
        return .object(object)
    }
}

/// What `publish` reports.
public struct PublishedPatch: Sendable {
    public let patch: PatchRecord
    public let targetsVersion: Int64

    /// The patch's listing entry with `targetsVersion`: what publish, promote and rollback
    /// answer, from patchd and from patchctl's local registry alike.
    public var json: JSON {
        var object = patch.json.objectValue ?? [:]
        object["targetsVersion"] = .int(targetsVersion)
        return .object(object)
    }
}

extension Registry {
    /// Patches of an app (or all apps), optionally of one version and one channel, ordered by
    /// app, version and number.
    public func patches(app: AppName?, appVersion: AppVersion?, channel: ChannelName? = nil, activeOnly: Bool) throws(RegistryError) -> [PatchRecord] {
        var conditions: [String] = []
        var values: [SQLValue] = []
        if let app { conditions.append("p.app = ?"); values.append(.text(app.rawValue)) }
        if let appVersion { conditions.append("p.app_version = ?"); values.append(.text(appVersion.rawValue)) }
        if let channel { conditions.append("COALESCE(r.channel, 'production') = ?"); values.append(.text(channel.rawValue)) }
        if activeOnly { conditions.append("p.state = 'active'") }
        return try patches(with: "", where: conditions, values)
    }

    /// The active patches of an app that targets metadata can list (`listedPatches`): per
    /// app version and channel, those numbered from the newest unconditional patch at 100 %
    /// up. Chosen in the database, so signing a publish reads the few rows it lists rather
    /// than every patch the app ever published (each row read, joined and parsed cost more
    /// than the rest of the signing once an app had a few hundred). `listedPatches` still
    /// decides; this only leaves out rows it would drop.
    func listablePatches(app: AppName) throws(RegistryError) -> [PatchRecord] {
        // Per app version and channel with an active patch, its newest unconditional patch at
        // 100 % (0 where it has none); per app version, the lowest of its channels' figures.
        // Rows below that are never listed: the patches of each version are read from there up
        // (an index range), so the rest are never joined or parsed.
        let floors = """
            WITH newest_full AS (
                SELECT q.app_version AS app_version,
                       COALESCE(MAX(CASE WHEN q.rollout >= 100 AND NOT EXISTS (SELECT 1 FROM patch_conditions qc
                                WHERE qc.app = q.app AND qc.app_version = q.app_version AND qc.number = q.number)
                            THEN q.number END), 0) AS number
                FROM patches q
                WHERE q.app = ? AND q.state = 'active'
                GROUP BY q.app_version, COALESCE((SELECT qr.channel FROM patch_releases qr
                                                  WHERE qr.app = q.app AND qr.app_version = q.app_version AND qr.number = q.number), 'production')),
            version_floor AS MATERIALIZED (SELECT app_version, MIN(number) AS number FROM newest_full GROUP BY app_version)

            """
        return try patches(with: floors, from: "version_floor f JOIN patches p ON p.app = ? AND p.app_version = f.app_version AND p.number >= f.number",
                           where: ["p.state = 'active'"], [.text(app.rawValue), .text(app.rawValue)])
    }

    private func patches(with prefix: String, from: String = "patches p", where conditions: [String], _ values: [SQLValue]) throws(RegistryError) -> [PatchRecord] {
        let sql = prefix + """
            SELECT p.app, p.app_version, p.number, p.rollout, p.state, p.length, p.sha256, p.md5, p.served_length, p.served_sha256,
                   p.served_md5, p.content_key_id, p.published_at, p.published_by, p.revoked_at, p.revoked_by,
                   COALESCE(r.channel, 'production'), r.message, r.promoted_channel, r.promoted_patch, r.promoted_sha256, v.message,
                   c.conditions, b.to_patch, b.to_sha256
            FROM \(from) LEFT JOIN patch_releases r ON r.app = p.app AND r.app_version = p.app_version AND r.number = p.number
            LEFT JOIN patch_revocations v ON v.app = p.app AND v.app_version = p.app_version AND v.number = p.number
            LEFT JOIN patch_conditions c ON c.app = p.app AND c.app_version = p.app_version AND c.number = p.number
            LEFT JOIN patch_rollbacks b ON b.app = p.app AND b.app_version = p.app_version AND b.number = p.number
            """ + (conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND "))
        let rows: [PatchRecord?] = try read { () throws(StorageError) in
            try db.query(sql, values) { s in
                guard let app = try? AppName(s.text(0)), let version = try? AppVersion(s.text(1)),
                    let state = PatchState(rawValue: s.text(4)), let channel = try? ChannelName(s.text(16)) else { return nil }
                var origin: PatchTargetInfo.Origin?
                if let raw = s.optionalText(18) {
                    guard let from = try? ChannelName(raw), let sha256 = s.optionalText(20) else { return nil }
                    origin = PatchTargetInfo.Origin(channel: from, patch: Int(s.int(19)), sha256: sha256)
                }
                var conditions: DeliveryConditions?
                if let raw = s.optionalText(22) {
                    // Stored as it is signed; a row that no longer parses is damage, not "no conditions".
                    guard let json = try? JSONParser.parse(Array(raw.utf8)), let parsed = DeliveryConditions(json) else { return nil }
                    conditions = parsed
                }
                var record = PatchRecord(
                    app: app, appVersion: version, number: Int(s.int(2)), channel: channel,
                    rollout: Int(s.int(3)), state: state,
                    plaintext: BundleDigests(length: Int(s.int(5)), sha256: s.text(6), md5: s.text(7)),
                    served: BundleDigests(length: Int(s.int(8)), sha256: s.text(9), md5: s.text(10)),
                    contentKeyID: s.optionalText(11), publishedAt: s.text(12), publishedBy: s.text(13),
                    revokedAt: s.optionalText(14), revokedBy: s.optionalText(15), message: s.optionalText(17),
                    promotedFrom: origin, revokeMessage: s.optionalText(21))
                record.conditions = conditions
                if let sha256 = s.optionalText(24) { record.rolledBackTo = PatchTargetInfo.Origin(channel: channel, patch: Int(s.int(23)), sha256: sha256) }
                return record
            }
        }
        return try Registry.intact(rows, what: "patches").sorted { ($0.app, $0.appVersion, $0.number) < ($1.app, $1.appVersion, $1.number) }
    }

    /// The bytes devices download for a patch (ciphertext for encrypted apps).
    public func servedBytes(sha256: String) throws(RegistryError) -> [UInt8] {
        let bytes = try read { () throws(StorageError) in try db.query("SELECT bytes FROM blobs WHERE sha256 = ?", [.text(sha256)]) { $0.blob(0) }.first }
        guard let bytes else { throw .notFound("no bundle with sha256 \(sha256)") }
        return bytes
    }

    /// The script of a patch as it was published: the stored bytes, decrypted with the app's
    /// content key for encrypted apps, and checked against the plaintext digest on record.
    public func plaintext(of patch: PatchRecord) throws(RegistryError) -> [UInt8] {
        let served = try servedBytes(sha256: patch.served.sha256)
        guard patch.encrypted else { return served }
        let bytes: [UInt8]
        do {
            bytes = try BundleCipher.open(served, key: try keys.contentKey(app: patch.app), app: patch.app.rawValue,
                                          appVersion: patch.appVersion.rawValue, patch: patch.number)
        } catch { throw .wrapping(error) }
        guard Digest.sha256Hex(bytes) == patch.plaintext.sha256 else {
            throw .internalError("\(patch.app) \(patch.appVersion) patch \(patch.number) decrypts to bytes that are not the ones published")
        }
        return bytes
    }

    /// Revokes one patch, or with `number == nil` every active patch of the app version
    /// (the 2 a.m. kill switch: devices on that version drop their patch).
    @discardableResult
    /// `message` says why (one line, like release notes): kept with each revoked patch and in
    /// the audit event.
    /// Revokes patch `number`, or every active patch of the version in one channel (`channel`,
    /// default production): pulling a bad production patch never takes QA's staging build with
    /// it. With `number`, a `channel` that is not the patch's is refused (nothing changes), so
    /// a command that names both cannot revoke in a channel its operator did not mean.
    ///
    /// `confirmed` false (an operator's call without `--yes`): a revoke that would leave the
    /// version and channel serving no patch is refused with what devices would run
    /// (`RegistryError.unconfirmed`), checked inside the change's transaction.
    public func revoke(app name: AppName, appVersion: AppVersion, channel: ChannelName? = nil, number: Int?, message: String? = nil,
                       expectLive: Int? = nil, dryRun: Bool = false, confirmed: Bool = true, actor: Actor, now: Date = Date()) throws(RegistryError) -> [PatchRecord] {
        let message = try Registry.releaseNotes(message)
        let change = ReleaseChange(RevokeOperation(appVersion: appVersion, patch: number, channel: channel, all: number == nil, message: message))
        return try proposing(change, app: name, dryRun: dryRun, actor: actor, now: now) { () throws(RegistryError) in try write(dryRun: dryRun) { () throws -> [PatchRecord] in
            _ = try app(name, declaring: channel.map { [$0] } ?? [])
            let all = try patches(app: name, appVersion: appVersion, activeOnly: false)
            let targets: [PatchRecord]
            if let number {
                guard let patch = all.first(where: { $0.number == number }) else {
                    throw RegistryError.notFound("\(name) \(appVersion) has no patch \(number)")
                }
                if let channel, patch.channel != channel {
                    throw RegistryError.conflict("\(name) \(appVersion) patch \(number) is a \(patch.channel) patch, not \(channel): nothing was revoked")
                }
                guard patch.state == .active else { throw RegistryError.conflict("\(name) \(appVersion) patch \(number) is already revoked") }
                targets = [patch]
            } else {
                let channel = channel ?? .production
                targets = all.filter { $0.state == .active && $0.channel == channel }
                guard !targets.isEmpty else { throw RegistryError.notFound("\(name) \(appVersion) has no active patch on \(channel)") }
            }
            try requireLive(expectLive, app: name, appVersion: appVersion, channel: targets[0].channel)
            if !confirmed {
                let after = Registry.serving(all, withoutPatches: Set(targets.map(\.number)), app: name, appVersion: appVersion, channel: targets[0].channel)
                if after.servesNothing {
                    let which = targets.count == 1 ? "patch \(targets[0].number)" : "patches \(targets.map { String($0.number) }.joined(separator: ", "))"
                    throw RegistryError.unconfirmed("revoking \(name) \(appVersion) \(which) would leave \(targets[0].channel) serving no patch: devices that run it drop it and then get \(after.summary)")
                }
            }
            if let role = try withholdsInstead(app: name, channel: targets[0].channel) {
                // The targets keys are elsewhere (the two-person rule) and the withhold keys are
                // here: devices drop the patches now; unlisting them waits for the key holders.
                _ = try withholdRows(targets, role: role, rollBack: true, reason: message, app: name, actor: actor, now: now)
                return targets
            }
            return try revokeRows(targets, app: name, appVersion: appVersion, message: message, actor: actor, now: now)
        } }
    }

    // MARK: Audit

    /// The audit events (of one app, or all), in seq order: those after seq `after`, at
    /// most `limit` of them (nil: all).
    public func auditEvents(app: AppName?, after: Int64 = 0, limit: Int? = nil) throws(RegistryError) -> [AuditEvent] {
        try read { () throws(StorageError) in try AuditLog.events(db, app: app?.rawValue, after: after, limit: limit) }
    }

    /// The audit events (of one app, or all), newest first: those with a seq below `before`
    /// and above `after`, at most `limit` of them (nil: all).
    public func auditEvents(app: AppName?, before: Int64, after: Int64 = 0, limit: Int? = nil) throws(RegistryError) -> [AuditEvent] {
        try read { () throws(StorageError) in try AuditLog.events(db, app: app?.rawValue, before: before, after: after, limit: limit) }
    }

    /// Re-walks the whole chain (all apps: the chain is global).
    public func verifyAudit() throws(RegistryError) -> AuditVerification {
        AuditLog.verify(try read { () throws(StorageError) in try AuditLog.events(db, app: nil) })
    }
}
