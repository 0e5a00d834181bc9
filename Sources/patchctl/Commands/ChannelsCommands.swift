import Foundation
import HotpatchCLI
import PatchCore
import PatchRegistry

/// `patchctl channels create NAME`: declares a channel, so a mistyped one elsewhere is refused
/// with a did-you-mean instead of silently becoming a channel no device follows.
struct ChannelsCreateCommand: Command {
    static let spec = CommandSpec("channels create", summary: "Declare a channel of an app (publish, promote and guards refuse one not declared)",
                                  positionals: ["NAME"],
                                  options: [.value("--app", "NAME", "the app (default: hotpatch.json's, or the registry's only app)"),
                                            .flag("--json", "print JSON")] + Context.globalOptions + Remote.options)

    static func run(_ arguments: Arguments) throws(CLIError) {
        guard let raw = arguments.positional(0) else { throw .usage("NAME (the channel to declare) is required") }
        let operation = try ReleaseCall.make(CreateChannelOperation.self, ["channel": raw])
        let backend = try Backends.open(arguments)
        let name = try backend.app(arguments)
        let answer = try ReleaseCall.run(operation, app: name, backend: backend, arguments)
        if arguments.flag("--json") { Output.json(answer); return }
        Output.line(answer["created"]?.boolValue == true ? "declared channel \(operation.channel) of \(name)"
                                                         : "\(name) has the channel \(operation.channel) already: nothing changed")
    }
}

/// `patchctl channels list`: the app's declared channels.
struct ChannelsListCommand: Command {
    static let spec = CommandSpec("channels list", summary: "List the channels an app has declared (production first)",
                                  options: [.value("--app", "NAME", "the app (default: hotpatch.json's, or the registry's only app)"),
                                            .flag("--json", "print JSON (an array)")] + Context.globalOptions + Remote.options)

    static func run(_ arguments: Arguments) throws(CLIError) {
        let backend = try Backends.open(arguments)
        let name = try backend.app(arguments)
        let channels = try backend.channels(app: name)
        if arguments.flag("--json") { Output.json(.array(channels.map { .string($0) })); return }
        for channel in channels { Output.line(channel) }
    }
}
