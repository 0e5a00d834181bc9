import Foundation
import PatchCore

/// `channels create`: declares a channel of an app (`Registry.declareChannel`), so publishes,
/// promotions and guards may name it. Declaring one that exists changes nothing.
public struct CreateChannelOperation: ReleaseOperation, Equatable {
    public static let definition = OperationDefinition(
        kind: "channel", routes: [.createChannel],
        parameters: [OperationParameter("channel", .query, .channel, required: true, "the channel to declare, e.g. staging")],
        audits: ["channel.create"], danger: .routine, dryRun: false, expectPatch: false, metric: "publish")

    public var channel: ChannelName

    public init(channel: ChannelName) { self.channel = channel }

    public init(_ values: OperationValues) throws(RegistryError) {
        guard let channel = try values.channel("channel") else { throw .invalidCall("channel (the name to declare) is required") }
        self.init(channel: channel)
    }

    public var values: OperationValues { .encode(["channel": channel]) }

    public var summary: String { "declare the channel \(channel)" }

    public func execute(on registry: Registry, _ context: OperationContext) throws(RegistryError) -> JSON {
        let app = try context.requireApp()
        let created = try registry.declareChannel(app: app, channel: channel, actor: context.actor, now: context.now)
        return ["app": .string(app.rawValue), "channel": .string(channel.rawValue), "created": .bool(created)]
    }
}
