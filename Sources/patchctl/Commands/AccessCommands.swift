import Foundation
import HotpatchCLI
import PatchCore
import PatchRegistry

struct TokensCreateCommand: Command {
    static let spec = CommandSpec("tokens create", summary: "Issue an API token for patchd (printed once, alone on the last line; stored only as a hash)",
                                  options: [.value("--app", "NAME", "scope the token to one app"),
                                            .flag("--all", "scope the token to every app"),
                                            .value("--role", "ROLE", "publisher (publish, revoke, rollout, read) or auditor (read); default publisher"),
                                            .value("--name", "LABEL", "who or what uses it, recorded as the actor (default: the token's creator)"),
                                            .flag("--json", "print JSON: the token's listing entry and, once, the token as \"token\"")]
                                      + Context.globalOptions + Remote.options)

    static func run(_ arguments: Arguments) throws(CLIError) {
        let app = try arguments.optionalAppName()
        guard (app == nil) == arguments.flag("--all") else { throw .usage("give exactly one of --app NAME or --all") }
        let roleName = arguments.value("--role") ?? "publisher"
        guard let role = TokenRole(rawValue: roleName) else { throw .usage("--role must be publisher or auditor, got \(roleName.debugSanitized)") }
        let issued = try ReleaseCall.run(CreateTokenOperation(app: app, role: role, name: arguments.value("--name")), app: nil,
                                         backend: try Backends.open(arguments), arguments)
        // A default that may publish is said, on stderr (stdout's last line stays the secret).
        if arguments.value("--role") == nil {
            Output.error("note: no --role given, so this is a publisher token (it may publish, revoke and change rollouts); for read-only use (CI checks, dashboards) create one with --role auditor")
        }
        if arguments.flag("--json") { Output.json(issued); return }
        Output.line("token \(issued["id"]?.stringValue ?? ""): \(issued["role"]?.stringValue ?? "") for \(app?.rawValue ?? "every app"), acting as \"\(issued["name"]?.stringValue ?? "")\"")
        Output.line("store it now: it is shown only once and kept only as a SHA-256 hash")
        Output.line(issued["token"]?.stringValue ?? "")
    }
}

struct TokensRevokeCommand: Command {
    static let spec = CommandSpec("tokens revoke", summary: "Revoke an API token by its id (shown when it was created, and in the audit log), and every token issued with it",
                                  positionals: ["ID"], options: [.flag("--json", "print JSON")] + Context.globalOptions + Remote.options)

    static func run(_ arguments: Arguments) throws(CLIError) {
        let operation = try ReleaseCall.make(RevokeTokenOperation.self, ["id": arguments.positionals[0]])
        let revoked = try ReleaseCall.run(operation, app: nil, backend: try Backends.open(arguments), arguments)
        if arguments.flag("--json") { Output.json(revoked); return }
        Output.line("revoked token \(revoked["id"]?.stringValue ?? "") (\(revoked["role"]?.stringValue ?? ""), \"\(revoked["name"]?.stringValue ?? "")\")")
    }
}

struct AppsThrottleCommand: Command {
    static let spec = CommandSpec("apps throttle", summary: "Show or set an app's throttling rules (minimum refetch interval per device, per-IP rate)",
                                  positionals: ["NAME"],
                                  options: [.value("--min-interval", "SECONDS", "minimum seconds between two checks of one device (default 3600)"),
                                            .value("--ip-rate", "N/min", "requests per minute per client IP, or 'off' (default 600/min)"),
                                            .flag("--json", "print JSON")] + Context.globalOptions + Remote.options)

    static func run(_ arguments: Arguments) throws(CLIError) {
        let name: AppName
        do { name = try AppName(arguments.positionals[0]) } catch { throw .usage(error.message) }
        let interval = try arguments.int("--min-interval", in: 0...(86_400 * 30))
        let rate = try arguments.value("--ip-rate").map { (text) throws(CLIError) in try parseRate(text) }
        let backend = try Backends.open(arguments)
        let rules = interval != nil || rate != nil
            ? try ReleaseCall.run(ThrottleOperation(minInterval: interval, ipRatePerMinute: rate), app: name, backend: backend, arguments)
            : try backend.throttle(app: name)
        if arguments.flag("--json") { Output.json(rules); return }
        let changed = rules["changed"]?.boolValue
        let minInterval = rules["minInterval"]?.intValue ?? 0, perIP = rules["ipRatePerMinute"]?.intValue ?? 0
        Output.line("\(name)\(changed == false ? " unchanged" : ""): a device may check once every \(minInterval) s; " +
                    (perIP == 0 ? "no per-IP limit" : "\(perIP) requests/min per IP"))
    }

    static func parseRate(_ text: String) throws(CLIError) -> Int {
        if text == "off" || text == "0" { return 0 }
        let number = text.hasSuffix("/min") ? String(text.dropLast(4)) : text
        guard let value = Int(number), (1...10_000_000).contains(value) else {
            throw .usage("--ip-rate must look like 120/min, or be 'off'; got \(text.debugSanitized)")
        }
        return value
    }
}
