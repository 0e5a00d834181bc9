import Foundation
import PatchCore
import PatchRegistry

struct NotifyCommand: Command {
    static let spec = CommandSpec("notify", summary: "Wake the devices of an app version and channel through APNs now, announcing the current timestamp (exit 2 when no device was reached)",
                                  options: [.value("--app", "NAME", "the app (default: hotpatch.json's, or the registry's only app)"),
                                            .value("--app-version", "V", "only the devices of this app version (default: every version)"),
                                            .value("--channel", "NAME", "only the devices following this channel (default: every channel)"),
                                            .flag("--json", "print JSON: sent, failed, removed, reasons (why tokens were not sent, with counts)")] + Context.globalOptions)

    static func run(_ arguments: Arguments) throws(CLIError) {
        let version = arguments.value("--app-version") == nil ? nil : try arguments.appVersion()
        let channel = try arguments.channel()
        let context = try Context(arguments: arguments)
        let registry = try context.openRegistry()
        let name = try AppDefault.resolve(arguments, registry: registry)
        let summary = try Notify.run(registry: registry, app: name, version: version, channel: channel, reason: "notify", actor: context.actor)
        if arguments.flag("--json") { Output.json(summary.json) } else { Output.line(Notify.line(summary)) }
        try Notify.requireReached(summary)
    }
}
