import Foundation
import HotpatchCLI
import PatchCore
import PatchRegistry

/// `patchctl apps webhook add|list|remove|test`: an app's webhook subscriptions (issue 47),
/// each change through its operation (AddWebhookOperation…), locally or `--server` alike.
/// patchd delivers the events (docs/PROTOCOL.md, "Webhooks").
enum AppsWebhookCommand {
    static let options: [Option] = [.flag("--json", "print JSON")] + Context.globalOptions + Remote.options

    /// The app named first, and the backend.
    static func open(_ arguments: Arguments) throws(CLIError) -> (AppName, any Backend) {
        let name: AppName
        do { name = try AppName(arguments.positionals[0]) } catch { throw .usage(error.message) }
        return (name, try Backends.open(arguments))
    }

    /// `remove` and `test`: the operation on the webhook named second. With `--json` its answer
    /// is printed here and nil returned; otherwise the caller prints its line.
    static func run<Operation: WebhookIDOperation>(_ type: Operation.Type, _ arguments: Arguments) throws(CLIError) -> (AppName, String, JSON)? {
        let operation = try ReleaseCall.make(type, ["id": arguments.positionals[1]])
        let (name, backend) = try open(arguments)
        let answer = try ReleaseCall.run(operation, app: name, backend: backend, arguments)
        if arguments.flag("--json") {
            Output.json(answer)
            return nil
        }
        return (name, operation.id, answer)
    }

    static func line(_ hook: JSON) -> String {
        func s(_ key: String) -> String { hook[key]?.stringValue ?? hook[key]?.intValue.map(String.init) ?? "-" }
        let events = (hook["events"]?.arrayValue ?? []).compactMap(\.stringValue).joined(separator: ",")
        var text = "\(s("id"))  \(s("url"))  events \(events)  delivered \(s("delivered")), failed \(s("failed")), dropped \(s("dropped")), pending \(s("pending"))"
        text += hook["insecureHttp"]?.boolValue == true ? "  (insecure http)" : ""
        text += "\n    last delivery \(hook["lastDeliveryAt"]?.stringValue ?? "never")"
        if let error = hook["lastError"]?.stringValue { text += "; last error at \(s("lastErrorAt")): \(error)" }
        return text
    }
}

struct AppsWebhookAddCommand: Command {
    static let spec = CommandSpec("apps webhook add", summary: "Subscribe a URL to an app's events (signed POSTs, delivered at least once by patchd)",
                                  positionals: ["NAME"],
                                  options: [.value("--url", "URL", "where events are POSTed: https://, or http:// to a loopback host; a Slack incoming-webhook URL works as it is"),
                                            .value("--events", "LIST", "event types, comma-separated, or a family such as patch.* (default: every event)"),
                                            .value("--secret-file", "FILE", "the signing secret (16 to 512 printable characters); without it one is made and printed once"),
                                            .flag("--insecure-http", "allow http:// to a host that is not loopback (recorded with the subscription)"),
                                            .value("--max-pending", "N", "undelivered events kept; past it the oldest is dropped and counted (default 10000)")]
                                      + AppsWebhookCommand.options)

    static func run(_ arguments: Arguments) throws(CLIError) {
        guard let url = arguments.value("--url") else { throw .usage("--url is required") }
        var secret: String?
        if let file = arguments.value("--secret-file") {
            let bytes = try Output.readFile(file, what: "secret file", limit: 4096)
            secret = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let operation = try ReleaseCall.make(AddWebhookOperation.self, ["url": url, "events": arguments.value("--events"), "secret": secret,
                                                                         "insecureHttp": arguments.flag("--insecure-http") ? "true" : nil,
                                                                         "maxPending": arguments.value("--max-pending")])
        let (name, backend) = try AppsWebhookCommand.open(arguments)
        let added = try ReleaseCall.run(operation, app: name, backend: backend, arguments)
        if arguments.flag("--json") { Output.json(added); return }
        Output.line("\(name): added webhook " + AppsWebhookCommand.line(added))
        if let made = added["secret"]?.stringValue {
            Output.line("secret (shown this once; the receiver checks X-Hotpatch-Signature with it): \(made)")
        }
    }
}

struct AppsWebhookListCommand: Command {
    static let spec = CommandSpec("apps webhook list", summary: "List an app's webhooks with each one's last delivery and last error (never a secret)",
                                  positionals: ["NAME"], options: AppsWebhookCommand.options)

    static func run(_ arguments: Arguments) throws(CLIError) {
        let (name, backend) = try AppsWebhookCommand.open(arguments)
        let hooks = try backend.webhooks(app: name)
        if arguments.flag("--json") { Output.json(.array(hooks)); return }
        if hooks.isEmpty { Output.line("\(name): no webhooks (add one with `patchctl apps webhook add \(name) --url URL`)"); return }
        for hook in hooks { Output.line(AppsWebhookCommand.line(hook)) }
    }
}

struct AppsWebhookRemoveCommand: Command {
    static let spec = CommandSpec("apps webhook remove", summary: "Remove one of an app's webhooks; what it had still to deliver is dropped",
                                  positionals: ["NAME", "ID"], options: AppsWebhookCommand.options)

    static func run(_ arguments: Arguments) throws(CLIError) {
        guard let (name, id, removed) = try AppsWebhookCommand.run(RemoveWebhookOperation.self, arguments) else { return }
        Output.line("\(name): removed webhook \(id) (\(removed["pending"]?.intValue ?? 0) undelivered event(s) dropped)")
    }
}

struct AppsWebhookTestCommand: Command {
    static let spec = CommandSpec("apps webhook test", summary: "Queue a webhook.test event for one of an app's webhooks (patchd delivers it; `apps webhook list` shows how it went)",
                                  positionals: ["NAME", "ID"], options: AppsWebhookCommand.options)

    static func run(_ arguments: Arguments) throws(CLIError) {
        guard let (name, id, queued) = try AppsWebhookCommand.run(TestWebhookOperation.self, arguments) else { return }
        Output.line("\(name): queued event \(queued["event"]?.stringValue ?? "?") (webhook.test) for webhook \(id); patchd delivers it, `patchctl apps webhook list \(name)` shows the result")
    }
}
