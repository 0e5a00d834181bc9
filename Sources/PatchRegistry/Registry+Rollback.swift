import Foundation
import PatchCore

/// What a plain `rollback` did: the release it undid, and what devices of its version and
/// channel are offered now.
public struct ReleaseRollback: Sendable {
    public let revoked: PatchRecord
    public let now: VersionServing

    /// `{"revoked": Patch, "now": VersionServing}`, as the rollback route and patchctl answer.
    public var json: JSON { ["revoked": revoked.json, "now": now.json] }
}

extension Registry {
    /// `rollback` without `--to`: undoes the newest *release* of the version and channel — its
    /// newest patch that is not revoked, whatever its rollout (live, staged or halted) — by
    /// revoking it, so devices that run it go back to what the rollout rule picks next. That is
    /// CodePush's rollback, and what a person who halted a bad patch first means next.
    /// `number` names the release instead; `expectPatch` is the release the caller means to
    /// undo (409 when the newest is another: a retried job does not undo a second release).
    /// Refused, nothing changed, when it would leave the channel serving no patch: going back
    /// to nothing is a revoke, said as one.
    public func rollBackRelease(app name: AppName, appVersion: AppVersion, channel: ChannelName = .production, number: Int? = nil,
                                message: String? = nil, expectPatch: Int? = nil, dryRun: Bool = false, actor: Actor,
                                now: Date = Date()) throws(RegistryError) -> ReleaseRollback {
        let message = try Registry.releaseNotes(message)
        let change = ReleaseChange(RollbackOperation(appVersion: appVersion, channel: channel, patch: number, message: message))
        return try proposing(change, app: name, dryRun: dryRun, actor: actor, now: now) { () throws(RegistryError) in try write(dryRun: dryRun) { () throws -> ReleaseRollback in
            _ = try app(name)
            let all = try patches(app: name, appVersion: appVersion, activeOnly: false)
            let target: PatchRecord
            if let number {
                guard let patch = all.first(where: { $0.number == number }) else { throw RegistryError.notFound("\(name) \(appVersion) has no patch \(number)") }
                guard patch.channel == channel else {
                    throw RegistryError.conflict("\(name) \(appVersion) patch \(number) is a \(patch.channel) patch, not \(channel): nothing was rolled back")
                }
                guard patch.state == .active else { throw RegistryError.conflict("\(name) \(appVersion) patch \(number) is already revoked") }
                target = patch
            } else {
                guard let newest = all.filter({ $0.channel == channel && $0.state == .active }).max(by: { $0.number < $1.number }) else {
                    throw RegistryError.notFound("\(name) \(appVersion) has no release on \(channel) to roll back")
                }
                target = newest
            }
            if let expectPatch, expectPatch != target.number {
                throw RegistryError.conflict("the release of \(name) \(appVersion) \(channel) a rollback undoes is patch \(target.number), not \(expectPatch == 0 ? "none" : "patch \(expectPatch)") (--expect-patch): nothing was changed")
            }
            let after = Registry.serving(all, withoutPatches: [target.number], app: name, appVersion: appVersion, channel: channel)
            guard !after.servesNothing else {
                throw RegistryError.conflict("rolling back \(name) \(appVersion) patch \(target.number) would leave \(channel) with no patch (devices get: \(after.summary)); nothing was changed. To go back to an earlier patch: `patchctl rollback --app \(name) --app-version \(appVersion) --channel \(channel) --to N`; to take it away anyway: `patchctl revoke --app \(name) --app-version \(appVersion) --patch \(target.number) --yes`")
            }
            let revoked = try revokeRows([target], app: name, appVersion: appVersion, message: message, actor: actor, now: now, rollback: true)
            return ReleaseRollback(revoked: revoked[0], now: after)
        } }
    }

    /// What devices of `channel` would be offered with `numbers` revoked: the one rule, over
    /// the same patches, that revoke's confirmation, rollback and the guards ask.
    static func serving(_ all: [PatchRecord], withoutPatches numbers: Set<Int>, app: AppName, appVersion: AppVersion,
                        channel: ChannelName) -> VersionServing {
        let entries = all.map(VersionServing.Entry.init).map { numbers.contains($0.number) ? $0.revoked : $0 }
        return VersionServing(app: app, appVersion: appVersion, channel: channel, entries: entries)
    }

    /// Marks `targets` (active patches of one version and channel) revoked, re-signs their
    /// channel's targets and appends `patch.revoke`, inside the caller's write: the rows as
    /// they are now.
    func revokeRows(_ targets: [PatchRecord], app name: AppName, appVersion: AppVersion, message: String?, actor: Actor, now: Date,
                    rollback: Bool = false) throws -> [PatchRecord] {
        let time = TUFTime.format(now)
        for patch in targets {
            try db.run("UPDATE patches SET state = 'revoked', revoked_at = ?, revoked_by = ? WHERE app = ? AND app_version = ? AND number = ?",
                       [.text(time), .text(actor.name), .text(name.rawValue), .text(appVersion.rawValue), .int(Int64(patch.number))])
            if let message {
                try db.run("INSERT INTO patch_revocations(app, app_version, number, message) VALUES (?, ?, ?, ?)",
                           [.text(name.rawValue), .text(appVersion.rawValue), .int(Int64(patch.number)), .text(message)])
            }
        }
        // A delegated channel's revoke is signed by its role (with the key the registry holds).
        try resign(app: name, from: .targets, now: now, channel: targets[0].channel)
        var details: [String: JSON] = ["appVersion": .string(appVersion.rawValue), "channel": .string(targets[0].channel.rawValue),
                                       "patches": .array(targets.map { .int(Int64($0.number)) })]
        if let message { details["message"] = .string(message) }
        if rollback { details["rollback"] = true }
        try AuditLog.append(db, app: name.rawValue, actor: actor, action: "patch.revoke", details: .object(details), at: now)
        return try patches(app: name, appVersion: appVersion, activeOnly: false).filter { p in targets.contains { $0.number == p.number } }
    }
}
