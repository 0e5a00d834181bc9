import Foundation
import PatchCore

/// `publish`: a bundle as the next patch of each app version a selector names, in a channel
/// (`Registry.publish(app:versions:…)`). One exact version is a publish as it always was; a
/// list or range is one change to several versions (issue 44), which needs `confirm`.
public struct PublishOperation: ReleaseOperation, Equatable {
    public static let definition = OperationDefinition(
        kind: "publish", routes: [.publishPatch],
        parameters: [
            OperationParameter("appVersion", .query, .versions, required: true,
                               "the app version the patch is for, as devices send it; or a list (2.3,2.3.1) or range ('>=2.3 <2.4', 2.3.*) of versions, one patch each (docs/PROTOCOL.md \"Version selectors\")"),
            .channel("the channel devices follow to get it (default production)"),
            .rollout("percent of devices offered it (default 100)"),
            .message,
            OperationParameter("allowSame", .query, .flag, "true: publish even if the bytes are those of a live patch of the version and channel"),
            OperationParameter("newChannel", .query, .flag, "true: declare the channel with this publish (a channel not declared otherwise is 404, with a did-you-mean)"),
            OperationParameter("strictVersion", .query, .flag, "true: refuse (409) a version no device checked for in the last 30 days, instead of answering versionWarning"),
            .skipCheck,
            OperationParameter("conditions", .header, .conditions, header: "X-Patch-Conditions",
                               "signed delivery conditions (docs/PROTOCOL.md section 5), device IDs already hashed"),
            OperationParameter("bundle", .content, .bytes, required: true, "the script: UTF-8 JavaScript, at most Registry.maxBundleSize bytes"),
        ],
        audits: ["patch.publish", "change.propose"], danger: .routine, confirms: true, status: 201, metric: "publish", bodyLimit: Registry.maxBundleSize,
        checksScript: true)

    public var versions: VersionSelector
    public var channel: ChannelName
    public var rollout: Int
    public var message: String?
    public var conditions: DeliveryConditions?
    public var allowSame: Bool
    /// The publish declares its channel, in its own transaction (`publish --new-channel`).
    public var newChannel: Bool
    /// A version no device asks for refuses the publish rather than warning (`--strict-version`).
    public var strictVersion: Bool
    /// Publishes past the script check's errors, for this reason (`--skip-check`).
    public var skipCheck: String?
    public var bundle: [UInt8]

    public init(versions: VersionSelector, channel: ChannelName = .production, rollout: Int = 100, message: String? = nil,
                conditions: DeliveryConditions? = nil, allowSame: Bool = false, newChannel: Bool = false, strictVersion: Bool = false,
                skipCheck: String? = nil, bundle: [UInt8]) {
        self.versions = versions
        self.channel = channel
        self.rollout = rollout
        self.message = message
        self.conditions = conditions
        self.allowSame = allowSame
        self.newChannel = newChannel
        self.strictVersion = strictVersion
        self.skipCheck = skipCheck
        self.bundle = bundle
    }

    public init(appVersion: AppVersion, channel: ChannelName = .production, rollout: Int = 100, message: String? = nil,
                conditions: DeliveryConditions? = nil, allowSame: Bool = false, newChannel: Bool = false, strictVersion: Bool = false,
                skipCheck: String? = nil, bundle: [UInt8]) {
        self.init(versions: VersionSelector(appVersion), channel: channel, rollout: rollout, message: message, conditions: conditions,
                  allowSame: allowSame, newChannel: newChannel, strictVersion: strictVersion, skipCheck: skipCheck, bundle: bundle)
    }

    public init(_ values: OperationValues) throws(RegistryError) {
        guard let bundle = values.bundle else { throw .invalidCall("the bundle (the request body) is required") }
        self.init(versions: try values.versions(), channel: try values.channel("channel") ?? .production, rollout: try values.percent("rollout") ?? 100,
                  message: values.text("message"), conditions: try values.conditions("conditions"), allowSame: try values.flag("allowSame"),
                  newChannel: try values.flag("newChannel"), strictVersion: try values.flag("strictVersion"), skipCheck: values.text("skipCheck"), bundle: bundle)
    }

    public var values: OperationValues {
        .encode(["appVersion": versions.description, "channel": channel, "rollout": rollout, "message": message, "conditions": conditions,
                 "allowSame": allowSame, "newChannel": newChannel, "strictVersion": strictVersion, "skipCheck": skipCheck], bundle: bundle)
    }

    public var summary: String {
        let target = versions.single.map(\.rawValue) ?? "versions \(versions)"
        return "publish a \(bundle.count)-byte bundle to \(target) \(channel)\(newChannel ? " (a new channel)" : "") at \(rollout) %\(conditions == nil ? "" : " (conditional)")\(skipCheck == nil ? "" : " past the script check")"
    }

    public func scriptToCheck(in registry: Registry, app: AppName) throws(RegistryError) -> [UInt8]? { bundle }

    public func execute(on registry: Registry, _ context: OperationContext) throws(RegistryError) -> JSON {
        let app = try context.requireApp()
        return try registry.publish(app: app, versions: versions, bundle: bundle, channel: channel, rollout: rollout, message: message,
                                    conditions: conditions, allowSame: allowSame, newChannel: newChannel, strictVersion: strictVersion,
                                    skipCheck: skipCheck, expectLive: context.expectPatch, dryRun: context.dryRun, confirmed: context.confirmed,
                                    actor: context.actor, now: context.now).json
    }
}

/// `promote`: the plaintext of a patch of channel `from` as the next patch of channel `to`
/// (`Registry.promote`).
public struct PromoteOperation: ReleaseOperation, Equatable {
    public static let definition = OperationDefinition(
        kind: "promote", routes: [.promotePatch],
        parameters: [
            .appVersion,
            OperationParameter("from", .query, .channel, required: true, "the channel the patch is in"),
            OperationParameter("to", .query, .channel, required: true, "the channel it is published to"),
            OperationParameter("patch", .query, .patch, "the patch of `from` (default: its newest active one)"),
            .rollout("percent of `to`'s devices offered it (default 100)"),
            OperationParameter("message", .query, .text, "release notes of the new patch (default: the source patch's)"),
            .skipCheck,
        ],
        audits: ["patch.promote", "change.propose"], danger: .routine, status: 201, metric: "publish", checksScript: true)

    public var appVersion: AppVersion
    public var from: ChannelName
    public var to: ChannelName
    public var patch: Int?
    public var rollout: Int
    public var message: String?
    public var skipCheck: String?

    public init(appVersion: AppVersion, from: ChannelName, to: ChannelName, patch: Int? = nil, rollout: Int = 100, message: String? = nil,
                skipCheck: String? = nil) {
        self.appVersion = appVersion
        self.from = from
        self.to = to
        self.patch = patch
        self.rollout = rollout
        self.message = message
        self.skipCheck = skipCheck
    }

    public init(_ values: OperationValues) throws(RegistryError) {
        guard let from = try values.channel("from"), let to = try values.channel("to") else { throw .invalidCall("from and to (the two channels) are required") }
        self.init(appVersion: try values.appVersion(), from: from, to: to, patch: try values.patch("patch"), rollout: try values.percent("rollout") ?? 100,
                  message: values.text("message"), skipCheck: values.text("skipCheck"))
    }

    public var values: OperationValues {
        .encode(["appVersion": appVersion, "from": from, "to": to, "patch": patch, "rollout": rollout, "message": message, "skipCheck": skipCheck])
    }

    public var summary: String {
        "promote \(appVersion) \(patch.map { "patch \($0)" } ?? "the newest patch") of \(from) to \(to) at \(rollout) %"
    }

    public func scriptToCheck(in registry: Registry, app: AppName) throws(RegistryError) -> [UInt8]? {
        try registry.plaintext(of: registry.promotionSource(app: app, appVersion: appVersion, from: from, number: patch))
    }

    public func execute(on registry: Registry, _ context: OperationContext) throws(RegistryError) -> JSON {
        let app = try context.requireApp()
        return try registry.promote(app: app, appVersion: appVersion, from: from, to: to, number: patch, rollout: rollout, message: message,
                             skipCheck: skipCheck, expectLive: context.expectPatch, dryRun: context.dryRun, actor: context.actor, now: context.now).json
    }
}

extension OperationParameter {
    static func channel(_ summary: String) -> OperationParameter { OperationParameter("channel", .query, .channel, summary) }
    static func rollout(_ summary: String) -> OperationParameter { OperationParameter("rollout", .query, .percent, summary) }
    /// `{patch}` of a route's path.
    static let pathPatch = OperationParameter("patch", .path, .patch, required: true, "the patch number")
}
