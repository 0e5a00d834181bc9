import Foundation
import PatchCore
import PatchSigning

/// What one publish made: one patch per version it named, signed in one targets version.
public struct PublishedVersions: Sendable {
    /// What was asked for (`--app-version`), before expansion.
    public let selector: VersionSelector
    /// The patches, in version order.
    public let patches: [PatchRecord]
    public let targetsVersion: Int64
    /// Versions published to that no device asked for, while devices ask for others.
    public let warning: VersionWarning?

    /// A selector of one exact version answers as publishes always did (the patch's listing
    /// entry with `targetsVersion`); any other answers the list of patches it made. Either
    /// way with `versionWarning` when there is one.
    public var json: JSON {
        var object: [String: JSON]
        if selector.single != nil, patches.count == 1 {
            object = PublishedPatch(patch: patches[0], targetsVersion: targetsVersion).json.objectValue ?? [:]
        } else {
            let first = patches[0]
            object = [
                "app": .string(first.app.rawValue), "selector": .string(selector.description),
                "appVersions": .array(patches.map { .string($0.appVersion.rawValue) }),
                "channel": .string(first.channel.rawValue), "rollout": .int(Int64(first.rollout)),
                "sha256": .string(first.plaintext.sha256), "md5": .string(first.plaintext.md5), "length": .int(Int64(first.plaintext.length)),
                "encrypted": .bool(first.encrypted), "patches": .array(patches.map(\.json)), "targetsVersion": .int(targetsVersion),
            ]
        }
        if let warning { object["versionWarning"] = .string(warning.message) }
        return .object(object)
    }
}

extension Registry {
    /// The most versions one publish may name: each is a patch, signed and listed in targets.
    public static let maxVersionsPerPublish = 64

    /// Publishes a bundle as the next patch of an app version in `channel`, in one transaction:
    /// the patch row, its bytes, new targets/snapshot/timestamp metadata and the audit event.
    /// Patch numbers are one sequence per app version across channels. Bytes identical to an
    /// active patch of the version and channel are refused (a re-run of the same release would
    /// otherwise become a new patch that every device downloads again) unless `allowSame`.
    /// `message` (release notes) is stored and signed with the target. `dryRun` does
    /// everything and commits nothing. `channel` must be declared, unless `newChannel`, which
    /// declares it (`channel.create`) in the publish's own transaction; a declared channel
    /// with `newChannel` is published to as usual (a retried job).
    public func publish(app name: AppName, appVersion: AppVersion, bundle: [UInt8], channel: ChannelName = .production, rollout: Int = 100,
                        message: String? = nil, conditions: DeliveryConditions? = nil, allowSame: Bool = false, newChannel: Bool = false,
                        skipCheck: String? = nil, expectLive: Int? = nil, dryRun: Bool = false, actor: Actor, now: Date = Date()) throws(RegistryError) -> PublishedPatch {
        let published = try publish(app: name, versions: VersionSelector(appVersion), bundle: bundle, channel: channel, rollout: rollout, message: message,
                                    conditions: conditions, allowSame: allowSame, newChannel: newChannel, skipCheck: skipCheck, expectLive: expectLive,
                                    dryRun: dryRun, actor: actor, now: now)
        return PublishedPatch(patch: published.patches[0], targetsVersion: published.targetsVersion)
    }

    /// `publish` to every version `selector` names (issue 44), as one change: a list is taken as
    /// given; a range or wildcard expands now to the versions the registry knows of
    /// (`knownVersions`), and an empty expansion is refused (`notFound`) with nothing written. Each version
    /// gets the next patch of its own sequence, all in one transaction with one targets version
    /// and one `patch.publish` event that lists them (`patch_sets` keeps them together for
    /// `status`); the signed layout is the one a publish to each would make, so devices see
    /// nothing new. A pending change stores the expanded list, which is what its signers sign.
    ///
    /// Anything but one exact version needs `confirmed` (`--yes`), unless a dry run: the
    /// refusal (`unconfirmed`) names the expansion. A version no device checked for in the last
    /// `askedVersionsDays` days, while devices ask for others, is a `warning` in the answer;
    /// with `strictVersion` it (or no device asking for anything) refuses the publish.
    /// `expectLive` (`--expect-patch`) must hold for each version.
    ///
    /// The script is checked first (`checkBeforeRelease`, issue 45), against each version's
    /// native manifest: an error refuses the publish, nothing stored or signed, unless
    /// `skipCheck` gives the reason, which the audit event records with the findings.
    public func publish(app name: AppName, versions selector: VersionSelector, bundle: [UInt8], channel: ChannelName = .production, rollout: Int = 100,
                        message: String? = nil, conditions: DeliveryConditions? = nil, allowSame: Bool = false, newChannel: Bool = false,
                        strictVersion: Bool = false, skipCheck: String? = nil, expectLive: Int? = nil, dryRun: Bool = false, confirmed: Bool = true,
                        actor: Actor, now: Date = Date()) throws(RegistryError) -> PublishedVersions {
        try Registry.checkBundleShape(bundle)
        guard (0...100).contains(rollout) else { throw .invalidInput("rollout must be a percentage from 0 to 100, got \(rollout)") }
        let message = try Registry.releaseNotes(message)
        let plaintext = BundleDigests(of: bundle)
        let asked = try askedVersionRows(app: name, now: now)
        let versions = try targetVersions(selector, app: name, now: now)
        let warning = VersionWarning(versions: versions, asked: asked, strict: strictVersion)
        if selector.single == nil, !confirmed, !dryRun {
            let named = selector.expands ? "what \(selector) names now" : "as listed"
            throw .unconfirmed("publishing to \(versions.count) versions of \(name) (\(VersionWarning.list(versions.map(\.rawValue))): \(named)) makes one patch for each in one change\(warning.map { "; \($0.message)" } ?? "")")
        }
        // Before the transaction: the script runs for up to the check's deadline, holding no lock.
        let checks = try checkBeforeRelease(bundle, app: name, versions: versions, skip: skipCheck, now: now)
        // What is stored if it waits for signatures: the versions it makes, not the range,
        // which could expand differently when it is approved.
        let stored = selector.single == nil ? VersionSelector(versions: versions) : selector
        let change = ReleaseChange(PublishOperation(versions: stored, channel: channel, rollout: rollout, message: message, conditions: conditions,
                                                    allowSame: allowSame, newChannel: newChannel, strictVersion: strictVersion, skipCheck: skipCheck,
                                                    bundle: bundle))
        return try proposing(change, app: name, dryRun: dryRun, actor: actor, now: now) { () throws(RegistryError) in try write(dryRun: dryRun) { () throws -> PublishedVersions in
            // `newChannel` declares the channel with the publish, in its transaction: a crash
            // leaves both or neither. Without it, an undeclared channel is refused here.
            let app = try self.app(name, declaring: newChannel ? [] : [channel])
            if newChannel { _ = try addChannel(channel, app: name, actor: actor, now: now) }
            // With several versions, each must serve `expectLive` (0: a first fix for all of them).
            for version in versions { try requireLive(expectLive, app: name, appVersion: version, channel: channel) }
            if strictVersion, let warning { throw RegistryError.conflict("\(warning.message): nothing was published (--strict-version)") }
            for version in versions {
                // Only unconditional patches count as "the same release": a script sent to test
                // phones first and then to everyone is the same bytes on purpose.
                if !allowSame, conditions == nil, let same = try sameRelease(app: name, appVersion: version, channel: channel, sha256: plaintext.sha256) {
                    throw RegistryError.conflict("the bundle is identical to \(name) \(version) patch \(same), which is live in \(channel) (sha256 \(plaintext.sha256)); give --allow-same to publish it again")
                }
            }
            let result: PublishedVersions
            if versions.count == 1 {
                let published = try addPatch(app: app, appVersion: versions[0], bundle: bundle, channel: channel, rollout: rollout, message: message,
                                             promotedFrom: nil, conditions: conditions, digests: plaintext, check: checks[versions[0]], actor: actor, now: now)
                result = PublishedVersions(selector: selector, patches: [published.patch], targetsVersion: published.targetsVersion, warning: warning)
            } else {
                result = try addPatches(app: app, versions: versions, selector: selector, bundle: bundle, channel: channel, rollout: rollout,
                                        message: message, conditions: conditions, digests: plaintext, warning: warning, checks: checks, actor: actor, now: now)
            }
            CrashPoint.hit("publish.before-commit")
            return result
        } }
    }

    /// The versions a publish makes patches for: one exact version as it is; anything else
    /// expanded against the app's known versions, refused when it names none or too many.
    private func targetVersions(_ selector: VersionSelector, app: AppName, now: Date) throws(RegistryError) -> [AppVersion] {
        if let single = selector.single { return [single] }
        _ = try self.app(app)
        let known = selector.expands ? try knownVersions(app: app, now: now) : []
        let versions = selector.expand(known: known)
        guard !versions.isEmpty else {
            let shown = known.isEmpty ? "it knows of none (no patches, and no device checked in the last \(Registry.askedVersionsDays) days)"
                : "it knows of \(VersionWarning.list(known.suffix(VersionWarning.shown).map(\.rawValue)))\(known.count > VersionWarning.shown ? " and \(known.count - VersionWarning.shown) older" : "")"
            // Not found, as an unknown app is: the selector is well formed, the versions are not there.
            throw .notFound("\(selector) matches no version of \(app): \(shown). Nothing was published")
        }
        guard versions.count <= Registry.maxVersionsPerPublish else {
            throw .invalidInput("\(selector) names \(versions.count) versions of \(app); one publish makes at most \(Registry.maxVersionsPerPublish). Nothing was published")
        }
        return versions
    }

    /// The patches of a publish to several versions, inside its write transaction: every row
    /// first, then targets signed once and one `patch.publish` event whose details list them
    /// (`patches`: each version's patch and served sha256), and the set recorded under the
    /// event's seq. An encrypted app seals each version under its own number; a change being
    /// proposed keeps those ciphertexts (framed, in version order) for its approval to serve.
    private func addPatches(app: AppRecord, versions: [AppVersion], selector: VersionSelector, bundle: [UInt8], channel: ChannelName, rollout: Int,
                            message: String?, conditions: DeliveryConditions?, digests: BundleDigests, warning: VersionWarning?,
                            checks: [AppVersion: PatchCheckRecord], actor: Actor, now: Date) throws -> PublishedVersions {
        let context = SigningContext.current
        let presealed = try context?.approval?.captured.map { captured throws(RegistryError) in try Registry.unframe(captured, count: versions.count) }
        var records: [PatchRecord] = [], sealed: [[UInt8]] = []
        for (index, version) in versions.enumerated() {
            let (record, served) = try insertPatch(app: app, appVersion: version, bundle: bundle, channel: channel, rollout: rollout, message: message,
                                                   promotedFrom: nil, rolledBackTo: nil, conditions: conditions, digests: digests,
                                                   sealed: presealed?[index], check: checks[version], actor: actor, now: now)
            records.append(record)
            if record.encrypted { sealed.append(served) }
        }
        if !sealed.isEmpty { context?.captured = Registry.frame(sealed) }
        let signed = try resign(app: app.name, from: .targets, now: now, channel: channel)
        CrashPoint.hit("publish.after-metadata")
        var details = Registry.auditDetails(of: records[0])
        details["appVersion"] = nil
        details["patch"] = nil
        details["servedSha256"] = nil
        details["selector"] = .string(selector.description)
        details["appVersions"] = .array(records.map { .string($0.appVersion.rawValue) })
        details["patches"] = .array(records.map { record in
            var entry: [String: JSON] = ["appVersion": .string(record.appVersion.rawValue), "patch": .int(Int64(record.number)), "servedSha256": .string(record.served.sha256)]
            if let check = checks[record.appVersion] { entry["check"] = check.auditJSON }
            return .object(entry)
        })
        let event = try AuditLog.append(db, app: app.name.rawValue, actor: actor, action: "patch.publish", details: .object(details), at: now)
        for record in records {
            try db.runInTransaction("INSERT INTO patch_sets(app, app_version, number, publish_seq) VALUES (?,?,?,?)",
                                    [.text(app.name.rawValue), .text(record.appVersion.rawValue), .int(Int64(record.number)), .int(event.seq)])
        }
        let targetsVersion = try signed[.targets] ?? latestMetadata(app: app.name, role: .targets).version
        return PublishedVersions(selector: selector, patches: records, targetsVersion: targetsVersion, warning: warning)
    }

    /// The newest active unconditional patch of the version and channel with these plaintext
    /// bytes: one row looked up, not every patch of the version read.
    private func sameRelease(app: AppName, appVersion: AppVersion, channel: ChannelName, sha256: String) throws(RegistryError) -> Int? {
        try read { () throws(StorageError) in
            try db.query("""
                SELECT p.number FROM patches p
                LEFT JOIN patch_releases r ON r.app = p.app AND r.app_version = p.app_version AND r.number = p.number
                WHERE p.app = ? AND p.app_version = ? AND p.state = 'active' AND p.sha256 = ?
                    AND COALESCE(r.channel, 'production') = ?
                    AND NOT EXISTS (SELECT 1 FROM patch_conditions c WHERE c.app = p.app AND c.app_version = p.app_version AND c.number = p.number)
                ORDER BY p.number DESC LIMIT 1
                """, [.text(app.rawValue), .text(appVersion.rawValue), .text(sha256), .text(channel.rawValue)]) { Int($0.int(0)) }.first
        }
    }

    /// Several ciphertexts as one captured value: each a 4-byte big-endian length, then its bytes.
    static func frame(_ parts: [[UInt8]]) -> [UInt8] {
        parts.flatMap { part in withUnsafeBytes(of: UInt32(part.count).bigEndian, Array.init) + part }
    }

    static func unframe(_ bytes: [UInt8], count: Int) throws(RegistryError) -> [[UInt8]] {
        var parts: [[UInt8]] = [], offset = 0
        while offset < bytes.count {
            guard offset + 4 <= bytes.count else { break }
            let length = bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            offset += 4
            guard offset + length <= bytes.count else { break }
            parts.append(Array(bytes[offset..<offset + length]))
            offset += length
        }
        guard offset == bytes.count, parts.count == count else {
            throw .internalError("the ciphertexts stored with a change to \(count) versions do not read as \(count)")
        }
        return parts
    }
}
