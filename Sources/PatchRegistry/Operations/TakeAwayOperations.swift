import Foundation
import PatchCore

/// `revoke`: one patch, or with `all` every active patch of the version in a channel
/// (`Registry.revoke`). Devices that run a revoked patch drop it. One that would leave the
/// channel serving no patch needs `confirm`.
public struct RevokeOperation: ReleaseOperation, Equatable {
    public static let definition = OperationDefinition(
        kind: "revoke", routes: [.revokePatch, .revokeVersion],
        parameters: [
            .appVersion,
            OperationParameter("patch", .path, .patch, route: "revokePatch", "the patch to revoke"),
            .channel("the channel (default production); with a patch, checked against the patch's"),
            OperationParameter("all", .query, .flag, required: true, route: "revokeVersion",
                               "true: every active patch of the version in the channel; never what a missing parameter means"),
            .message,
        ],
        audits: ["patch.revoke", "change.propose"], danger: .takesAway, confirms: true, metric: "revoke")

    public var appVersion: AppVersion
    public var patch: Int?
    public var channel: ChannelName?
    public var all: Bool
    public var message: String?

    public init(appVersion: AppVersion, patch: Int?, channel: ChannelName? = nil, all: Bool = false, message: String? = nil) {
        self.appVersion = appVersion
        self.patch = patch
        self.channel = channel
        self.all = all
        self.message = message
    }

    public init(_ values: OperationValues) throws(RegistryError) {
        let patch = try values.patch("patch"), all = try values.flag("all")
        // Emptying a version is never what a missing option means.
        if patch == nil, !all {
            throw .invalidCall("name the patch to revoke (--patch N), or revoke every active patch of the version in its channel with --all (all=true)")
        }
        if patch != nil, all { throw .invalidCall("--patch and --all exclude each other: name one patch, or revoke them all") }
        self.init(appVersion: try values.appVersion(), patch: patch, channel: try values.channel("channel"), all: all, message: values.text("message"))
    }

    public var values: OperationValues {
        .encode(["appVersion": appVersion, "patch": patch, "channel": channel, "all": all, "message": message])
    }

    public var summary: String {
        patch.map { "revoke \(appVersion) patch \($0)" } ?? "revoke every active patch of \(appVersion) \(channel ?? .production)"
    }

    public func execute(on registry: Registry, _ context: OperationContext) throws(RegistryError) -> JSON {
        let app = try context.requireApp()
        // A dry run changes nothing, so it needs no confirmation: it shows what would go.
        let revoked = try registry.revoke(app: app, appVersion: appVersion, channel: channel, number: patch, message: message,
                                          expectLive: context.expectPatch, dryRun: context.dryRun, confirmed: context.confirmed || context.dryRun,
                                          actor: context.actor, now: context.now)
        // A revoke that went through the withhold role (the targets keys elsewhere): each patch
        // is still listed and active, and says how devices were told to drop it.
        let withheld = context.dryRun || revoked.allSatisfy({ $0.state != .active }) ? [:]
            : Dictionary(try registry.withheldPatches(app: app).map { ($0.path, $0) }) { first, _ in first }
        return .array(revoked.map { patch in
            guard let entry = withheld[patch.targetPath], var json = patch.json.objectValue else { return patch.json }
            json["withheld"] = entry.json
            return .object(json)
        })
    }
}

/// `rollback`: undoes the newest release of a version and channel, whatever its rollout
/// (`Registry.rollBackRelease`); or with `to`, publishes patch `to`'s bytes again as the next
/// patch (`Registry.rollBack`). Never leaves the channel serving nothing.
public struct RollbackOperation: ReleaseOperation, Equatable {
    public static let definition = OperationDefinition(
        kind: "rollback", routes: [.rollBackTo],
        parameters: [
            .appVersion,
            .channel("the channel (default production)"),
            OperationParameter("patch", .query, .patch, "the release to undo (default: the newest patch of the channel that is not revoked)"),
            OperationParameter("to", .query, .patch, "instead: publish this patch's bytes again as the channel's next patch (signed rolledBackTo)"),
            .rollout("with `to`: percent of devices offered the new patch (default 100)"),
            OperationParameter("message", .query, .text, "why (a plain rollback's revoke), or with `to` the new patch's release notes (default: patch `to`'s)"),
            .skipCheck,
        ],
        audits: ["patch.revoke", "patch.rollback", "change.propose"], danger: .takesAway, status: 201, metric: "publish", checksScript: true)

    public var appVersion: AppVersion
    public var channel: ChannelName
    public var patch: Int?
    public var to: Int?
    public var rollout: Int?
    public var message: String?
    /// With `to`: republishes past the script check's errors, for this reason.
    public var skipCheck: String?

    public init(appVersion: AppVersion, channel: ChannelName = .production, patch: Int? = nil, to: Int? = nil, rollout: Int? = nil, message: String? = nil,
                skipCheck: String? = nil) {
        self.appVersion = appVersion
        self.channel = channel
        self.patch = patch
        self.to = to
        self.rollout = rollout
        self.message = message
        self.skipCheck = skipCheck
    }

    public init(_ values: OperationValues) throws(RegistryError) {
        let patch = try values.patch("patch"), to = try values.patch("to"), rollout = try values.percent("rollout")
        if patch != nil, to != nil {
            throw .invalidCall("--patch (the release to undo) and --to (the patch to publish again) exclude each other")
        }
        if rollout != nil, to == nil { throw .invalidCall("--rollout goes with --to: a plain rollback revokes the release, it publishes nothing") }
        if values["skipCheck"] != nil, to == nil { throw .invalidCall("--skip-check goes with --to: a plain rollback publishes no script") }
        self.init(appVersion: try values.appVersion(), channel: try values.channel("channel") ?? .production, patch: patch, to: to, rollout: rollout,
                  message: values.text("message"), skipCheck: values.text("skipCheck"))
    }

    public var values: OperationValues {
        .encode(["appVersion": appVersion, "channel": channel, "patch": patch, "to": to, "rollout": rollout, "message": message, "skipCheck": skipCheck])
    }

    public var summary: String {
        if let to { return "roll \(appVersion) \(channel) back to patch \(to) at \(rollout ?? 100) %" }
        return "roll back \(appVersion) \(channel)'s \(patch.map { "patch \($0)" } ?? "newest release")"
    }

    public var status: Int { to == nil ? 200 : 201 }

    public func scriptToCheck(in registry: Registry, app: AppName) throws(RegistryError) -> [UInt8]? {
        guard let to else { return nil }
        return try registry.plaintext(of: registry.rollbackSource(app: app, appVersion: appVersion, channel: channel, number: to,
                                                                  in: registry.patches(app: app, appVersion: appVersion, activeOnly: false)))
    }

    public func execute(on registry: Registry, _ context: OperationContext) throws(RegistryError) -> JSON {
        let app = try context.requireApp()
        if let to {
            return try registry.rollBack(app: app, appVersion: appVersion, channel: channel, to: to, rollout: rollout ?? 100, message: message,
                                         skipCheck: skipCheck, expectLive: context.expectPatch, dryRun: context.dryRun, actor: context.actor, now: context.now).json
        }
        return try registry.rollBackRelease(app: app, appVersion: appVersion, channel: channel, number: patch, message: message,
                                            expectPatch: context.expectPatch, dryRun: context.dryRun, actor: context.actor, now: context.now).json
    }
}
