import Foundation
import HotpatchCLI
import PatchCore
import PatchRegistry

/// `patchctl apps guard APP`: show, set or remove the guard of one channel of an app, the rule
/// by which patchd halts (or revokes) a patch whose devices roll it back too often.
struct AppsGuardCommand: Command {
    static let spec = CommandSpec("apps guard", summary: "Show, set or remove the guard that halts (or revokes) a patch whose rollback rate is too high",
                                  positionals: ["NAME"],
                                  options: [.value("--channel", "CHANNEL", "the channel the guard watches (default production)"),
                                            .value("--max-rollback-rate", "PERCENT", "act when the 95 % Wilson lower bound of rolled back ÷ installed exceeds this, e.g. 2%"),
                                            .value("--min-devices", "N", "installed devices needed before the guard decides (default 50)"),
                                            .value("--action", "ACTION", "halt (rollout 0: no new device gets it, none loses it; resumed only by hand; the default) or revoke (halts too, since reports are anonymous evidence, and names the rollback a person runs to take the patch away)"),
                                            .flag("--off", "remove the channel's guard"),
                                            .flag("--json", "print JSON")] + Context.globalOptions + Remote.options)

    static func run(_ arguments: Arguments) throws(CLIError) {
        let name: AppName
        do { name = try AppName(arguments.positionals[0]) } catch { throw .usage(error.message) }
        let channel = try arguments.channel() ?? .production
        let rate = try arguments.value("--max-rollback-rate").map { text throws(CLIError) in try parseRate(text) }
        let minDevices = try arguments.int("--min-devices", in: 1...100_000_000)
        let action = try arguments.value("--action").map { text throws(CLIError) in
            guard let action = GuardAction(rawValue: text) else { throw .usage("--action must be halt or revoke, got \(text.debugSanitized)") }
            return action
        }
        let off = arguments.flag("--off")
        if off, rate != nil || minDevices != nil || action != nil { throw .usage("--off cannot be combined with --max-rollback-rate, --min-devices or --action") }
        if !off, rate == nil, minDevices != nil || action != nil { throw .usage("--min-devices and --action need --max-rollback-rate") }
        let backend = try Backends.open(arguments)
        var changed: Bool?
        if off {
            changed = try ReleaseCall.run(RemoveGuardOperation(channel: channel), app: name, backend: backend, arguments)["changed"]?.boolValue
        } else if let rate {
            let operation = GuardOperation(channel: channel, maxRollbackPPM: rate, minDevices: minDevices ?? 50, action: action ?? .halt)
            changed = try ReleaseCall.run(operation, app: name, backend: backend, arguments)["changed"]?.boolValue
        }
        let stats = try backend.stats(app: name)
        let rule = (stats["guards"]?.arrayValue ?? []).first { $0["channel"]?.stringValue == channel.rawValue }
        if arguments.flag("--json") {
            var out: [String: JSON] = ["app": .string(name.rawValue), "channel": .string(channel.rawValue), "guard": rule ?? .null]
            if let changed { out["changed"] = .bool(changed) }
            Output.json(.object(out))
            return
        }
        let prefix = "\(name)\(changed == false ? " unchanged" : "")"
        if let rule { Output.line("\(prefix): " + DeviceFigures.guardLine(rule)) } else { Output.line("\(prefix): no guard on \(channel)") }
    }

    /// "2%", "0.5%", "12.25%" (or without the sign, as every percentage may be typed) → parts
    /// per million; at most 4 decimals, above 0 and at most 100 %.
    static func parseRate(_ text: String) throws(CLIError) -> Int {
        let usage = CLIError.usage("--max-rollback-rate must look like 2% or 0.5% (above 0, at most 100%), got \(text.debugSanitized)")
        let parts = (text.hasSuffix("%") ? text.dropLast() : text[...]).split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let whole = Int(parts[0]), parts[0].allSatisfy(\.isNumber) else { throw usage }
        var ppm = whole * 10_000
        if parts.count == 2 {
            let fraction = parts[1]
            guard (1...4).contains(fraction.count), fraction.allSatisfy(\.isNumber), let digits = Int(fraction) else { throw usage }
            ppm += digits * [1000, 100, 10, 1][fraction.count - 1]
        }
        guard (1...1_000_000).contains(ppm) else { throw usage }
        return ppm
    }
}
