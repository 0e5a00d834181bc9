/// One CLI command: its declaration and what it does. `run` returns normally on success
/// and throws a `CLIError` for every failure; the root prints it once.
protocol Command: Sendable {
    static var spec: CommandSpec { get }
    static func run(_ arguments: Arguments) throws(CLIError)
}

enum PatchCtl {
    static let commands: [any Command.Type] = [
        AppsCreateCommand.self, AppsRootCommand.self, AppsThrottleCommand.self, AppsJSPatchCommand.self, AppsJSPatchKeyCommand.self, TokensCreateCommand.self, TokensRevokeCommand.self, PublishCommand.self, RevokeCommand.self, RolloutCommand.self,
        ListCommand.self, AuditCommand.self, KeysRotateCommand.self, ExportCommand.self, VerifyCommand.self, FetchCommand.self,
        InitCommand.self, DiffCommand.self,
    ]

    static var overview: String {
        var text = "patchctl: publish, sign, list, audit and verify hotpatch patches\n\nCommands:\n"
        let width = commands.map { $0.spec.words.joined(separator: " ").count }.max() ?? 0
        for command in commands {
            let name = command.spec.words.joined(separator: " ")
            text += "  " + name.padding(toLength: width + 2, withPad: " ", startingAt: 0) + command.spec.summary + "\n"
        }
        text += "\nRun `patchctl COMMAND --help` for a command's options.\n"
        text += "Exit codes: 0 ok, 1 verification failed, 2 refused or could not run, 64 usage error.\n"
        return text
    }

    /// Parses, runs and maps errors to exit codes.
    static func main(_ words: [String]) -> Int32 {
        if words.isEmpty || words == ["--help"] || words == ["-h"] || words == ["help"] {
            print(overview, terminator: "")
            return words.isEmpty ? 64 : 0
        }
        let match = commands
            .filter { words.starts(with: $0.spec.words) }
            .max { $0.spec.words.count < $1.spec.words.count }
        guard let command = match else {
            Output.error("unknown command \"\(words.prefix(2).joined(separator: " ").debugSanitized)\"; run `patchctl --help`")
            return 64
        }
        let rest = Array(words.dropFirst(command.spec.words.count))
        if rest.contains("--help") || rest.contains("-h") {
            print(command.spec.help, terminator: "")
            return 0
        }
        do {
            let arguments = try Arguments(spec: command.spec, parsing: rest)
            try command.run(arguments)
            return 0
        } catch {
            // One line: the reason, and for usage errors where to read more.
            if case .usage = error {
                Output.error("\(message(error)) (see `patchctl \(command.spec.words.joined(separator: " ")) --help`)")
            } else {
                Output.error(message(error))
            }
            return error.exitCode
        }
    }

    private static func message(_ error: CLIError) -> String {
        switch error {
        case .usage(let m), .verificationFailed(let m), .failed(let m): return m
        }
    }
}
