import Foundation
import HotpatchCLI
import PatchCore
import PatchRegistry

struct NotifyCommand: Command {
    static let spec = CommandSpec("notify", summary: "Wake the devices of an app version and channel through APNs now, announcing the current timestamp (exit 2 when no device was reached)",
                                  options: [.value("--app", "NAME", "the app (default: hotpatch.json's, or the registry's only app)"),
                                            .value("--app-version", "V", "only the devices of this app version (default: every version)"),
                                            .value("--channel", "NAME", "only the devices following this channel (default: every channel)"),
                                            .flag("--dry-run", "say how many devices would be woken (the APNs key is checked); send nothing"),
                                            .flag("--json", "print JSON: sent, failed, removed, reasons (why tokens were not sent, with counts)")] + Context.globalOptions + Remote.options)

    static func run(_ arguments: Arguments) throws(CLIError) {
        let version = arguments.value("--app-version") == nil ? nil : try arguments.appVersion()
        let channel = try arguments.channel()
        let backend = try Backends.open(arguments)
        let name = try backend.app(arguments)
        if arguments.flag("--dry-run") {
            let devices = try backend.pushAudience(app: name, version: version, channel: channel)
            if arguments.flag("--json") { Output.json(["dryRun": true, "devices": .int(Int64(devices))]); return }
            Output.line("dry run: would wake \(devices) device\(devices == 1 ? "" : "s") of \(name)\(version.map { " \($0)" } ?? "")\(channel.map { " (\($0))" } ?? ""); nothing was sent")
            return
        }
        let summary = try backend.notify(app: name, version: version, channel: channel, reason: "notify")
        if arguments.flag("--json") { Output.json(summary.json) } else { Output.line(Notify.line(summary)) }
        try Notify.requireReached(summary)
    }
}
