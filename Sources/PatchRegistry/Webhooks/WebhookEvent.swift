import Foundation
import PatchCore
import PatchSigning

/// One event a webhook subscription is told of (docs/PROTOCOL.md, "Webhooks"): what the body
/// of its POST is. An audited change is its audit event (`type` is the audit action, `seq`
/// its place in the chain, `details` its details); the events nobody's change makes (a
/// schedule's step and hold with the figures that decided, a re-sign failure, an expiry
/// warning, health turning degraded, a test) have no `seq`.
public struct WebhookEvent: Sendable, Equatable {
    /// The idempotency id: the same in every attempt, on every instance (`X-Hotpatch-Event-Id`).
    public let id: String
    public let type: String
    public let app: String
    /// When it happened (`YYYY-MM-DDTHH:MM:SSZ`).
    public let at: String
    public let seq: Int64?
    public let actor: String?
    public let details: [String: JSON]

    public init(id: String, type: String, app: String, at: String, seq: Int64?, actor: String?, details: [String: JSON]) {
        self.id = id
        self.type = type
        self.app = app
        self.at = at
        self.seq = seq
        self.actor = actor
        self.details = details
    }

    /// A new event: its id 16 random bytes in hex.
    static func make(type: String, app: String, at: Date, seq: Int64? = nil, actor: String? = nil, details: [String: JSON]) throws(StorageError) -> WebhookEvent {
        let random: [UInt8]
        do { random = try SecureRandom.bytes(16) } catch {
            throw StorageError(kind: .other, code: "random", message: "no random bytes for a webhook event id: \(error)", sql: nil)
        }
        return WebhookEvent(id: Hex.encode(random), type: type, app: app, at: TUFTime.format(at), seq: seq, actor: actor, details: details)
    }

    /// The audit event as a webhook event, or nil for what is not sent: changes to the
    /// subscriptions themselves (`webhook.*`), which would tell a receiver of itself.
    static func audited(_ event: AuditEvent) throws(StorageError) -> WebhookEvent? {
        guard !event.action.hasPrefix("webhook.") else { return nil }
        return try make(type: event.action, app: event.app, at: TUFTime.parse(event.at) ?? Date(), seq: event.seq, actor: event.actor,
                        details: event.details.objectValue ?? ["value": event.details])
    }

    /// The POST body: canonical JSON, so the bytes signed are the bytes stored and sent.
    public var body: [UInt8] {
        let out: [String: JSON] = ["id": .string(id), "type": .string(type), "app": .string(app), "at": .string(at),
                                   "seq": seq.map { .int($0) } ?? .null, "actor": actor.map(JSON.string) ?? .null,
                                   "details": .object(details), "text": .string(text)]
        return JSON.object(out).canonicalBytes
    }

    /// One line a person reads, for Slack's incoming webhooks (which show `text` and ignore
    /// the rest), so a Slack URL works as the subscription's URL as it is.
    public var text: String { "[\(app)] " + WebhookEvent.sentence(type: type, actor: actor, details) }

    static func sentence(type: String, actor: String?, _ d: [String: JSON]) -> String {
        func s(_ key: String) -> String { d[key]?.stringValue ?? d[key]?.intValue.map(String.init) ?? "?" }
        let patch = "patch \(s("patch")) of \(s("appVersion"))"
        let by = actor.map { " by \($0)" } ?? ""
        let note = d["message"]?.stringValue.map { ": \($0)" } ?? d["reason"]?.stringValue.map { ": \($0)" } ?? ""
        switch type {
        case "patch.publish": return "\(patch) published to \(d["channel"]?.stringValue ?? "production") at \(s("rollout")) %\(by)\(note)"
        case "patch.promote": return "\(patch) promoted\(by)\(note)"
        case "patch.rollout": return "\(patch) rollout \(s("from")) % → \(s("to")) %\(by)\(note)"
        case "patch.halt": return "\(patch) halted\(by)\(note)"
        case "patch.resume": return "\(patch) resumed\(by)\(note)"
        case "patch.revoke": return "revoked \(d["patch"] == nil ? "every patch of \(s("appVersion"))" : patch)\(by)\(note)"
        case "patch.rollback": return "\(s("appVersion")) rolled back\(by)\(note)"
        case "guard.halt", "guard.revoke": return "GUARD TRIPPED: \(patch) halted\(note)"
        case "rollout.schedule.step": return "staged rollout: \(patch) raised \(s("from")) % → \(s("to")) % (\(s("rolledBack")) of \(s("installed")) installed devices rolled back)"
        case "rollout.schedule.hold": return "staged rollout: \(patch) holds before \(s("step")) %: \(s("why"))"
        case "rollout.schedule.stop": return "staged rollout of \(patch) stopped\(by)\(note)"
        case "change.propose": return "change \(s("id")) waits for signatures (\(s("summary"))): \(d["signedBy"]?.arrayValue?.count ?? 0) of \(s("threshold")) signed\(by)"
        case "change.approve": return "change \(s("id")) signed\(by): \(d["signedBy"]?.arrayValue?.count ?? 0) of \(s("threshold")) (\(s("summary")))"
        case "change.reject": return "change \(s("id")) rejected\(by) (\(s("summary")))\(note)"
        case "metadata.resign.failed": return "RE-SIGN FAILED: \(s("error"))"
        case "metadata.expiring": return "\(s("role")) metadata expires at \(s("expires")) (in \(s("secondsLeft")) s)"
        case "health.degraded": return "health degraded: \(s("reason"))"
        case "webhook.test": return "webhook test from hotpatch\(by)"
        default: return "\(type)\(by)\(note)"
        }
    }

    /// The types a subscription can name in `events`: every audited action sent, and the
    /// events without an audit entry. A family (`patch.*`) names every type that starts with it.
    public static let types: [String] = [
        "patch.publish", "patch.promote", "patch.rollout", "patch.halt", "patch.resume", "patch.revoke", "patch.rollback",
        "patch.withhold", "patch.withhold.rollback", "patch.withhold.lift",
        "guard.halt", "guard.set", "guard.remove",
        "rollout.schedule", "rollout.schedule.step", "rollout.schedule.hold", "rollout.schedule.stop",
        "change.propose", "change.approve", "change.reject", "change.supersede",
        "metadata.resign.failed", "metadata.expiring", "health.degraded",
        "app.create", "app.throttle", "app.jspatch", "app.apns", "app.manifest", "channel.create", "push.notify", "token.create", "token.revoke",
        "keys.delegate", "keys.undelegate", "keys.withhold", "key.rotate", "key.targets",
        "webhook.test",
    ]

    /// The family a type belongs to: its first word (`patch` of `patch.withhold.lift`).
    static func family(_ type: String) -> String { String(type.prefix { $0 != "." }) }
}

/// Which events a subscription wants: every one (`*`), or types and families (`patch.*`).
public struct WebhookEventFilter: Sendable, Equatable {
    public let items: [String]

    public static let all = WebhookEventFilter(checked: ["*"])

    private init(checked items: [String]) { self.items = items }

    /// A comma-separated list; an unknown type is refused with the ones there are.
    public init(_ text: String) throws(RegistryError) {
        let items = text.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        let families = Set(WebhookEvent.types.map(WebhookEvent.family))
        guard !items.isEmpty, items.count <= 64 else { throw .invalidCall("events must list 1 to 64 event types") }
        for item in items {
            if item == "*" || WebhookEvent.types.contains(item) { continue }
            if item.hasSuffix(".*"), families.contains(String(item.dropLast(2))) { continue }
            throw .invalidCall("events: no event type \(item.debugSanitized); the types are \(WebhookEvent.types.joined(separator: ", ")), a family such as patch.*, or *")
        }
        self.init(checked: items.contains("*") ? ["*"] : Array(Set(items)).sorted())
    }

    /// As stored: `*`, or `,a,b.*,` so one LIKE finds a type or its family.
    var stored: String { items == ["*"] ? "*" : "," + items.joined(separator: ",") + "," }

    init(stored: String) {
        self.init(checked: stored == "*" ? ["*"] : stored.split(separator: ",").map(String.init))
    }

    public var description: String { items.joined(separator: ",") }
}
