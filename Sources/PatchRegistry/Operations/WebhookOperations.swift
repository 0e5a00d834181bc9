import Foundation
import PatchCore
import PatchPush

/// `apps webhook add APP --url URL [--events LIST] [--secret-file F]`: a subscription to the
/// app's events (`Registry.addWebhook`). The answer carries `secret` only when one was made
/// here: the one time it leaves the registry.
public struct AddWebhookOperation: ReleaseOperation, Equatable {
    public static let definition = OperationDefinition(
        kind: "webhook", routes: [.addWebhook],
        parameters: [
            OperationParameter("url", .body, .text, required: true, "where events are POSTed: https://, or http:// to a loopback host (or with insecureHttp)"),
            OperationParameter("events", .body, .text, "the event types it wants, comma-separated; a family such as patch.*; * (the default) for every one"),
            OperationParameter("secret", .body, .text, "the HMAC-SHA256 key of X-Hotpatch-Signature, 16 to 512 printable characters (left out: one is made and answered once)"),
            OperationParameter("insecureHttp", .body, .flag, "true: allow an http:// URL to a host that is not loopback (recorded with it)"),
            OperationParameter("maxPending", .body, .integer, "undelivered events kept, 1 to 1000000 (default 10000); past it the oldest is dropped and counted"),
        ],
        audits: ["webhook.add"], danger: .routine, dryRun: false, expectPatch: false, status: 201, metric: "webhooks", bodyLimit: 8192)

    public var url: String
    public var events: WebhookEventFilter
    public var secret: String?
    public var insecureHTTP: Bool
    public var maxPending: Int?

    public init(url: String, events: WebhookEventFilter = .all, secret: String? = nil, insecureHTTP: Bool = false, maxPending: Int? = nil) {
        self.url = url
        self.events = events
        self.secret = secret
        self.insecureHTTP = insecureHTTP
        self.maxPending = maxPending
    }

    public init(_ values: OperationValues) throws(RegistryError) {
        guard let url = values.text("url") else { throw .invalidCall("url is required") }
        let insecure = try values.flag("insecureHttp")
        _ = try RegistryError.checking { () throws(WebhookURLError) in try WebhookURL(url, insecureHTTP: insecure) }
        if let secret = values.text("secret") { try WebhookSubscription.checkSecret(secret) }
        self.init(url: url, events: try values.text("events").map { text throws(RegistryError) in try WebhookEventFilter(text) } ?? .all,
                  secret: values.text("secret"), insecureHTTP: insecure, maxPending: try values.integer("maxPending", in: WebhookSubscription.maxPendingRange))
    }

    public var values: OperationValues {
        .encode(["url": url, "events": events == .all ? nil : events.description, "secret": secret, "insecureHttp": insecureHTTP, "maxPending": maxPending])
    }

    public var summary: String { "add a webhook for \(events.description) events" }

    /// The subscription as listed, and `secret` when one was made.
    public func execute(on registry: Registry, _ context: OperationContext) throws(RegistryError) -> JSON {
        let added = try registry.addWebhook(app: try context.requireApp(), url: url, events: events, secret: secret, insecureHTTP: insecureHTTP,
                                            maxPending: maxPending ?? WebhookSubscription.defaultMaxPending, actor: context.actor, now: context.now)
        var out = added.subscription.json.objectValue ?? [:]
        if let made = added.secret { out["secret"] = .string(made) }
        return .object(out)
    }
}

/// An operation on one subscription, named by its id (12 lower-case hex digits) in the path:
/// its parameter, checks and wire form, once for `remove` and `test`.
public protocol WebhookIDOperation: ReleaseOperation {
    var id: String { get }
    /// With an id already checked.
    init(checked id: String)
}

extension WebhookIDOperation {
    public static var idParameter: OperationParameter { OperationParameter("id", .path, .text, required: true, "the webhook's id: 12 lower-case hex digits") }

    public init(id: String) throws(RegistryError) { try self.init(OperationValues(["id": id])) }

    public init(_ values: OperationValues) throws(RegistryError) {
        guard let id = values.text("id"), id.utf8.count == 12, id.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else {
            throw .invalidCall("a webhook id is 12 lower-case hex digits (`patchctl apps webhook list APP`)")
        }
        self.init(checked: id)
    }

    public var values: OperationValues { .encode(["id": id]) }
}

/// `apps webhook remove APP ID`: the subscription ends; what it had still to deliver is dropped.
public struct RemoveWebhookOperation: WebhookIDOperation, Equatable {
    public static let definition = OperationDefinition(
        kind: "webhook-remove", routes: [.removeWebhook], parameters: [idParameter],
        audits: ["webhook.remove"], danger: .routine, dryRun: false, expectPatch: false, metric: "webhooks")

    public let id: String

    public init(checked id: String) { self.id = id }

    public var summary: String { "remove webhook \(id)" }

    public func execute(on registry: Registry, _ context: OperationContext) throws(RegistryError) -> JSON {
        var out = try registry.removeWebhook(app: try context.requireApp(), id: id, actor: context.actor, now: context.now).json.objectValue ?? [:]
        out["removed"] = true
        return .object(out)
    }
}

/// `apps webhook test APP ID`: one `webhook.test` event queued for that subscription, delivered
/// by patchd as every event is; `apps webhook list` then shows how it went.
public struct TestWebhookOperation: WebhookIDOperation, Equatable {
    public static let definition = OperationDefinition(
        kind: "webhook-test", routes: [.testWebhook], parameters: [idParameter],
        audits: ["webhook.test"], danger: .routine, dryRun: false, expectPatch: false, status: 202, metric: "webhooks")

    public let id: String

    public init(checked id: String) { self.id = id }

    public var summary: String { "send a test event to webhook \(id)" }

    /// The event queued: `{"id": webhook id, "event": event id, "queued": true}`.
    public func execute(on registry: Registry, _ context: OperationContext) throws(RegistryError) -> JSON {
        let event = try registry.testWebhook(app: try context.requireApp(), id: id, actor: context.actor, now: context.now)
        return ["id": .string(id), "event": .string(event.id), "type": .string(event.type), "queued": true]
    }
}
