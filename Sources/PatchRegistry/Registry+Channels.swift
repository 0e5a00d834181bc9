import Foundation
import PatchCore
import PatchSigning

extension Registry {
    /// Publishes the plaintext of a patch of channel `from` as the next patch of the same
    /// app version in channel `to`: what QA tested on staging is, provably, what ships. The
    /// new target signs the same plaintext length/sha256/md5 and names its origin
    /// (`promotedFrom`: channel, patch, sha256), and the audit event `patch.promote` records
    /// it too.
    ///
    /// `number` picks the source patch (it must be active and in `from`); without it the
    /// newest active patch of `from` is promoted. Bytes already live in `to` are refused:
    /// promoting twice would make every device download the same script again.
    ///
    /// Encrypted apps: the ciphertext is sealed again, under the new patch number. The AAD
    /// binds a ciphertext to one app, version and patch number, so the source's ciphertext
    /// would not open as the new patch, and reusing its AAD would let a mirror serve one
    /// patch's ciphertext as another's. No surprise: the plaintext (what was tested and what
    /// the signed plaintext digests name) is identical; only the served bytes and their
    /// hashes differ, as they differ for every patch.
    public func promote(app name: AppName, appVersion: AppVersion, from: ChannelName, to: ChannelName, number: Int? = nil, rollout: Int = 100,
                        message: String? = nil, skipCheck: String? = nil, expectLive: Int? = nil, dryRun: Bool = false, actor: Actor,
                        now: Date = Date()) throws(RegistryError) -> PublishedPatch {
        // A conflict, not bad input: each name is valid, the pair names no promotion.
        guard from != to else { throw .conflict("--from and --to name the same channel (\(from)): a patch is promoted to another channel") }
        guard (0...100).contains(rollout) else { throw .invalidInput("rollout must be a percentage from 0 to 100, got \(rollout)") }
        let message = try Registry.releaseNotes(message)
        // The script is checked before the transaction (it runs for up to the check's
        // deadline), against the version's manifest as it is now; the write finds the source
        // again and refuses if its bytes are not the ones checked.
        _ = try app(name, declaring: [from, to])
        let checked = try promotionSource(app: name, appVersion: appVersion, from: from, number: number)
        let plaintext = try self.plaintext(of: checked)
        let check = try checkBeforeRelease(plaintext, app: name, versions: [appVersion], skip: skipCheck, now: now)[appVersion]
        let change = ReleaseChange(PromoteOperation(appVersion: appVersion, from: from, to: to, patch: number, rollout: rollout, message: message, skipCheck: skipCheck))
        return try proposing(change, app: name, dryRun: dryRun, actor: actor, now: now) { () throws(RegistryError) in try write(dryRun: dryRun) { () throws -> PublishedPatch in
            let app = try self.app(name, declaring: [from, to])
            try requireLive(expectLive, app: name, appVersion: appVersion, channel: to)
            let source = try promotionSource(app: name, appVersion: appVersion, from: from, number: number)
            try Registry.requireChecked(source, checked)
            if let same = try patches(app: name, appVersion: appVersion, channel: to, activeOnly: true)
                .last(where: { $0.plaintext.sha256 == source.plaintext.sha256 }) {
                // A halted copy is there but serves nobody new: say so, and how to resume it.
                if same.rollout == 0 {
                    throw RegistryError.conflict("\(name) \(appVersion) patch \(source.number) of \(from) is already in \(to) as patch \(same.number), halted (rollout 0 %): resume it with `patchctl rollout --app \(name) --app-version \(appVersion) --patch \(same.number) --rollout 100`")
                }
                throw RegistryError.conflict("\(name) \(appVersion) patch \(source.number) of \(from) is already live in \(to) as patch \(same.number) (sha256 \(source.plaintext.sha256))")
            }
            let origin = PatchTargetInfo.Origin(channel: from, patch: source.number, sha256: source.plaintext.sha256)
            // The release notes QA read go with the patch, unless the promotion gives its own.
            return try addPatch(app: app, appVersion: appVersion, bundle: plaintext, channel: to, rollout: rollout, message: message ?? source.message,
                                promotedFrom: origin, check: check, actor: actor, now: now)
        } }
    }

    /// The patch a promotion publishes: `number` (active, in `from`), else the newest active
    /// patch of `from`.
    func promotionSource(app name: AppName, appVersion: AppVersion, from: ChannelName, number: Int?) throws(RegistryError) -> PatchRecord {
        guard let number else {
            guard let newest = try patches(app: name, appVersion: appVersion, channel: from, activeOnly: true).last else {
                throw .notFound("\(name) \(appVersion) has no active patch in channel \(from)")
            }
            return newest
        }
        guard let patch = try patches(app: name, appVersion: appVersion, activeOnly: false).first(where: { $0.number == number }) else {
            throw .notFound("\(name) \(appVersion) has no patch \(number)")
        }
        guard patch.channel == from else { throw .conflict("\(name) \(appVersion) patch \(number) is in channel \(patch.channel), not \(from)") }
        guard patch.state == .active else { throw .conflict("\(name) \(appVersion) patch \(number) is revoked; it cannot be promoted") }
        return patch
    }

    /// The source a release found in its transaction is the one whose bytes were checked
    /// before it (a publish to `from` in between changes which patch is newest).
    private static func requireChecked(_ source: PatchRecord, _ checked: PatchRecord) throws(RegistryError) {
        guard source.number == checked.number, source.plaintext.sha256 == checked.plaintext.sha256 else {
            throw .conflict("\(source.app) \(source.appVersion) changed while its script was checked (patch \(checked.number) was checked, patch \(source.number) is the source now): nothing was changed; run it again")
        }
    }

    /// `rollback --to N`: patch N's exact plaintext (live, superseded or revoked, of `channel`)
    /// published again as the next patch of the version in that channel, signed with
    /// `rolledBackTo` {channel, patch, sha256} and audited as `patch.rollback`: devices go back to
    /// what N was by moving forward, which every client accepts (no number goes down) and which
    /// can itself be rolled back. Refused, nothing changed, when the newest live patch of the
    /// channel already has those bytes (a retried job), or N is in another channel. Release
    /// notes default to N's. N's script is checked again, against the version's manifest as it
    /// is now, before the transaction (`checkBeforeRelease`).
    public func rollBack(app name: AppName, appVersion: AppVersion, channel: ChannelName, to number: Int, rollout: Int = 100,
                         message: String? = nil, skipCheck: String? = nil, expectLive: Int? = nil, dryRun: Bool = false, actor: Actor,
                         now: Date = Date()) throws(RegistryError) -> PublishedPatch {
        guard (0...100).contains(rollout) else { throw .invalidInput("rollout must be a percentage from 0 to 100, got \(rollout)") }
        let message = try Registry.releaseNotes(message)
        _ = try app(name, declaring: [channel])
        let checked = try rollbackSource(app: name, appVersion: appVersion, channel: channel, number: number, in: patches(app: name, appVersion: appVersion, activeOnly: false))
        let plaintext = try self.plaintext(of: checked)
        let check = try checkBeforeRelease(plaintext, app: name, versions: [appVersion], skip: skipCheck, now: now)[appVersion]
        let change = ReleaseChange(RollbackOperation(appVersion: appVersion, channel: channel, to: number, rollout: rollout, message: message, skipCheck: skipCheck))
        return try proposing(change, app: name, dryRun: dryRun, actor: actor, now: now) { () throws(RegistryError) in try write(dryRun: dryRun) { () throws -> PublishedPatch in
            let app = try self.app(name, declaring: [channel])
            try requireLive(expectLive, app: name, appVersion: appVersion, channel: channel)
            let all = try patches(app: name, appVersion: appVersion, activeOnly: false)
            let source = try rollbackSource(app: name, appVersion: appVersion, channel: channel, number: number, in: all)
            try Registry.requireChecked(source, checked)
            let serving = VersionServing(app: name, appVersion: appVersion, channel: channel, patches: all)
            if let live = serving.newestLive, let current = all.first(where: { $0.number == live }),
               current.plaintext.sha256 == source.plaintext.sha256 {
                throw RegistryError.conflict("\(name) \(appVersion) \(channel) already serves patch \(number)'s bytes as patch \(live): nothing to roll back to")
            }
            let origin = PatchTargetInfo.Origin(channel: channel, patch: number, sha256: source.plaintext.sha256)
            return try addPatch(app: app, appVersion: appVersion, bundle: plaintext, channel: channel, rollout: rollout,
                                message: message ?? source.message, promotedFrom: nil, rolledBackTo: origin,
                                conditions: source.conditions, check: check, actor: actor, now: now)
        } }
    }

    /// Patch `number` of `all`, which must be in `channel`: a rollback stays in its channel.
    func rollbackSource(app name: AppName, appVersion: AppVersion, channel: ChannelName, number: Int, in all: [PatchRecord]) throws(RegistryError) -> PatchRecord {
        guard let source = all.first(where: { $0.number == number }) else {
            throw .notFound("\(name) \(appVersion) has no patch \(number)")
        }
        guard source.channel == channel else {
            throw .conflict("\(name) \(appVersion) patch \(number) is a \(source.channel) patch, not \(channel): a rollback stays in its channel (promote moves a patch between channels)")
        }
        return source
    }

    /// The next patch of an app version, inside the caller's write transaction: its rows
    /// (`insertPatch`), then the metadata re-signed and one audit event, `patch.publish`,
    /// `patch.promote` (with `from`) when it is a promotion, or `patch.rollback` (with `to`)
    /// when it republishes an earlier patch of its channel. `digests` are the bundle's when the
    /// caller has computed them already (publish checks them against live patches first).
    func addPatch(app: AppRecord, appVersion: AppVersion, bundle: [UInt8], channel: ChannelName, rollout: Int, message: String?,
                  promotedFrom: PatchTargetInfo.Origin?, rolledBackTo: PatchTargetInfo.Origin? = nil, conditions: DeliveryConditions? = nil,
                  digests: BundleDigests? = nil, check: PatchCheckRecord?, actor: Actor, now: Date) throws -> PublishedPatch {
        // A pending change applied later serves the ciphertext its signers signed the hashes
        // of (a new seal would draw a new nonce); a change being proposed keeps what it sealed.
        let context = SigningContext.current
        let (record, served) = try insertPatch(app: app, appVersion: appVersion, bundle: bundle, channel: channel, rollout: rollout, message: message,
                                               promotedFrom: promotedFrom, rolledBackTo: rolledBackTo, conditions: conditions, digests: digests,
                                               sealed: context?.approval?.captured, check: check, actor: actor, now: now)
        if record.encrypted { context?.captured = served }
        let signed = try resign(app: app.name, from: .targets, now: now, channel: channel)
        CrashPoint.hit("publish.after-metadata")
        var details = Registry.auditDetails(of: record)
        if let promotedFrom { details["from"] = promotedFrom.json }
        if let rolledBackTo { details["to"] = rolledBackTo.json }
        if let check { details["check"] = check.auditJSON }
        let action = promotedFrom != nil ? "patch.promote" : rolledBackTo != nil ? "patch.rollback" : "patch.publish"
        _ = try AuditLog.append(db, app: app.name.rawValue, actor: actor, action: action, details: .object(details), at: now)
        // A delegated channel's publish leaves top-level targets as they were.
        let targetsVersion = try signed[.targets] ?? latestMetadata(app: app.name, role: .targets).version
        return PublishedPatch(patch: record, targetsVersion: targetsVersion)
    }

    /// The rows of the next patch of an app version, inside the caller's write transaction,
    /// sealed under its own number for encrypted apps (or `sealed`, the ciphertext an approved
    /// change's signers signed): the patch and what it serves (the ciphertext, for an encrypted
    /// app). Nothing is signed or audited here; `addPatch` and a publish to several versions
    /// (`Registry.publish(app:versions:…)`) do that once for what they add.
    func insertPatch(app: AppRecord, appVersion: AppVersion, bundle: [UInt8], channel: ChannelName, rollout: Int, message: String?,
                     promotedFrom: PatchTargetInfo.Origin?, rolledBackTo: PatchTargetInfo.Origin?, conditions: DeliveryConditions?,
                     digests: BundleDigests?, sealed: [UInt8]?, check: PatchCheckRecord?, actor: Actor, now: Date) throws -> (record: PatchRecord, served: [UInt8]) {
        let name = app.name
        let plaintext = digests ?? BundleDigests(of: bundle)
        let contentKey = app.encrypted ? try keys.contentKey(app: name) : nil
        if let contentKey, BundleCipher.keyID(contentKey) != app.contentKeyID {
            throw RegistryError.keys("\(keys.contentKeyURL(app: name).path) is not the content key this app was created with")
        }
        let number = Int(try db.query("SELECT COALESCE(MAX(number), 0) + 1 FROM patches WHERE app = ? AND app_version = ?",
                                      [.text(name.rawValue), .text(appVersion.rawValue)]) { $0.int(0) }.first ?? 1)
        let served = try contentKey.map { key in
            if let sealed { return sealed }
            return try BundleCipher.seal(bundle, key: key, app: name.rawValue, appVersion: appVersion.rawValue, patch: number)
        } ?? bundle
        // A plain app serves the plaintext itself: its digests are the served ones.
        let servedDigests = contentKey == nil ? plaintext : BundleDigests(of: served)
        let time = TUFTime.format(now)
        var record = PatchRecord(app: name, appVersion: appVersion, number: number, channel: channel, rollout: rollout, state: .active,
                                 plaintext: plaintext, served: servedDigests, contentKeyID: app.contentKeyID,
                                 publishedAt: time, publishedBy: actor.name, revokedAt: nil, revokedBy: nil, message: message,
                                 promotedFrom: promotedFrom)
        record.conditions = conditions
        record.rolledBackTo = rolledBackTo
        record.check = check
        // The rows go with the transaction's next statement on PostgreSQL (`runInTransaction`):
        // the read of the signing root below, which is after them in the transaction either way.
        try db.runInTransaction("INSERT INTO blobs(sha256, bytes) VALUES (?, ?) ON CONFLICT DO NOTHING", [.text(servedDigests.sha256), .blob(served)])
        CrashPoint.hit("publish.after-blob")
        try db.runInTransaction("""
            INSERT INTO patches(app, app_version, number, rollout, state, length, sha256, md5, served_length, served_sha256,
                                served_md5, content_key_id, published_at, published_by)
            VALUES (?,?,?,?,'active',?,?,?,?,?,?,?,?,?)
            """, [.text(name.rawValue), .text(appVersion.rawValue), .int(Int64(number)), .int(Int64(rollout)),
                  .int(Int64(plaintext.length)), .text(plaintext.sha256), .text(plaintext.md5),
                  .int(Int64(servedDigests.length)), .text(servedDigests.sha256), .text(servedDigests.md5),
                  app.contentKeyID.map { .text($0) } ?? .null, .text(time), .text(actor.name)])
        try db.runInTransaction("""
            INSERT INTO patch_releases(app, app_version, number, channel, message, promoted_channel, promoted_patch, promoted_sha256)
            VALUES (?,?,?,?,?,?,?,?)
            """, [.text(name.rawValue), .text(appVersion.rawValue), .int(Int64(number)), .text(channel.rawValue),
                  message.map { .text($0) } ?? .null, promotedFrom.map { .text($0.channel.rawValue) } ?? .null,
                  promotedFrom.map { .int(Int64($0.patch)) } ?? .null, promotedFrom.map { .text($0.sha256) } ?? .null])
        if let conditions {
            try db.runInTransaction("INSERT INTO patch_conditions(app, app_version, number, conditions) VALUES (?,?,?,?)",
                       [.text(name.rawValue), .text(appVersion.rawValue), .int(Int64(number)), .text(String(decoding: conditions.json.canonicalBytes, as: UTF8.self))])
        }
        if let rolledBackTo {
            try db.runInTransaction("INSERT INTO patch_rollbacks(app, app_version, number, to_patch, to_sha256) VALUES (?,?,?,?,?)",
                       [.text(name.rawValue), .text(appVersion.rawValue), .int(Int64(number)), .int(Int64(rolledBackTo.patch)), .text(rolledBackTo.sha256)])
        }
        if let check { try insertCheck(check, app: name, appVersion: appVersion, number: number) }
        CrashPoint.hit("publish.after-patch")
        return (record, served)
    }

    /// A new patch's `patch.publish` details (those of promote and rollback start the same).
    static func auditDetails(of record: PatchRecord) -> [String: JSON] {
        var details: [String: JSON] = [
            "appVersion": .string(record.appVersion.rawValue), "patch": .int(Int64(record.number)), "rollout": .int(Int64(record.rollout)),
            "sha256": .string(record.plaintext.sha256), "md5": .string(record.plaintext.md5), "length": .int(Int64(record.plaintext.length)),
            "servedSha256": .string(record.served.sha256), "channel": .string(record.channel.rawValue),
        ]
        if let message = record.message { details["message"] = .string(message) }
        if let conditions = record.conditions { details["conditions"] = conditions.json }
        return details
    }

    /// Release notes as they are stored and signed: at most 500 characters (Unicode
    /// scalars, as JSON Schema's maxLength counts) held to `ReadableText`'s rule. They are
    /// shown in listings, the console and logs (a newline could forge a row, a bidi override
    /// make "revoke 3" read otherwise), and the audit chain hashes canonical JSON, which
    /// writes control characters raw. Publish, promote and revoke messages all pass here.
    static let maxReleaseNotes = 500

    static func releaseNotes(_ message: String?) throws(RegistryError) -> String? {
        guard let message, !message.isEmpty else { return nil }
        do { try ReadableText.check(message, field: "message", maxLength: maxReleaseNotes) } catch { throw .invalidInput(error.message) }
        return message
    }
}
