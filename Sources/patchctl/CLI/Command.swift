import HotpatchCLI
import PatchCore

/// One CLI command: its declaration and what it does. `run` returns normally on success
/// and throws a `CLIError` for every failure; the root prints it once.
protocol Command: Sendable {
    static var spec: CommandSpec { get }
    static func run(_ arguments: Arguments) throws(CLIError)
}

enum PatchCtl {
    static let commands: [any Command.Type] = [
        AppsCreateCommand.self, AppsListCommand.self, AppsVersionsCommand.self, AppsRootCommand.self, AppsThrottleCommand.self, AppsGuardCommand.self, AppsJSPatchCommand.self, AppsJSPatchKeyCommand.self,
        TokensCreateCommand.self, TokensListCommand.self, TokensRevokeCommand.self, PublishCommand.self, RevokeCommand.self, RolloutCommand.self, HaltCommand.self, ResumeCommand.self, ChannelsCreateCommand.self, ChannelsListCommand.self,
        ListCommand.self, AuditCommand.self, KeysRotateCommand.self, KeysDelegateCommand.self, KeysUndelegateCommand.self, KeysWithholdCommand.self, ExportCommand.self, VerifyCommand.self, FetchCommand.self,
        InitCommand.self, DiffCommand.self, StatusCommand.self, RollbackCommand.self,
        PromoteCommand.self, DbCopyCommand.self, AppsAPNsCommand.self, NotifyCommand.self,
        PendingCommand.self, ApproveCommand.self, RejectCommand.self, KeysGenerateCommand.self, KeysSetCommand.self,
        CheckCommand.self, AppsManifestCommand.self,
        AppsWebhookAddCommand.self, AppsWebhookListCommand.self, AppsWebhookRemoveCommand.self, AppsWebhookTestCommand.self,
    ]

    static var overview: String {
        var text = "patchctl \(Hotpatch.version): publish, sign, list, audit and verify hotpatch patches\n\nCommands:\n"
        let width = commands.map { $0.spec.name.count }.max() ?? 0
        for command in commands {
            text += "  " + command.spec.name.padding(toLength: width + 2, withPad: " ", startingAt: 0) + command.spec.summary + "\n"
        }
        text += "\nRun `patchctl COMMAND --help` or `patchctl help COMMAND` for a command's options; `patchctl --version` for the release.\n"
        text += "With --json, stdout is one JSON value: an object, or an array for listings (apps list, tokens list, list, revoke);\n"
        text += "a command that fails before it has a result prints {\"error\":{\"code\":…,\"message\":…,\"exit\":N}} instead.\n"
        text += "Exit codes: 0 ok, 1 verification failed, 2 refused or could not run, 3 pending (waits for another key holder's `patchctl approve`), 64 usage error.\n"
        return text
    }

    /// Parses, runs and maps errors to exit codes.
    static func main(_ words: [String]) -> Int32 {
        if words.isEmpty || words == ["--help"] || words == ["-h"] || words == ["help"] {
            print(overview, terminator: "")
            return words.isEmpty ? 64 : 0
        }
        if words == ["--version"] || words == ["version"] {
            print("patchctl \(Hotpatch.version)")
            return 0
        }
        // `patchctl help CMD` prints what `patchctl CMD --help` prints.
        if words.first == "help" {
            let topic = Array(words.dropFirst())
            guard let command = command(for: topic), command.spec.words.count == topic.count else { return unknown(topic, json: false) }
            print(command.spec.help, terminator: "")
            return 0
        }
        let json = words.contains("--json")
        guard let command = command(for: words) else { return unknown(words, json: json) }
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
            // Not a failure: what was stored and who must act, on stdout.
            if case .pending(let message, let pending) = error {
                if json, !Output.printedJSON.withLock { $0 } { Output.json(["pending": pending]) } else if !json { Output.line(message) }
                return error.exitCode
            }
            // One line: the reason, and for usage errors where to read more.
            if case .usage = error {
                Output.error("\(error.message) (see `patchctl \(command.spec.name) --help`)")
            } else {
                Output.error(error.message)
            }
            if json, !Output.printedJSON.withLock { $0 } { Output.json(error.json) }
            return error.exitCode
        }
    }

    /// The command whose words start `words`, the longest if several do (`apps` vs `apps create`).
    static func command(for words: [String]) -> (any Command.Type)? {
        commands.filter { words.starts(with: $0.spec.words) }.max { $0.spec.words.count < $1.spec.words.count }
    }

    /// Exit 64 for a command that does not exist, with the nearest one when it looks like a typo.
    private static func unknown(_ words: [String], json: Bool) -> Int32 {
        let typed = words.prefix { !$0.hasPrefix("-") }.prefix(2)
        // Compare with each command as many words as it has: `apps craete` with `apps create`.
        let guesses = commands.compactMap { command -> (String, Int)? in
            guard typed.count >= command.spec.words.count else { return nil }
            let candidate = typed.prefix(command.spec.words.count).joined(separator: " ")
            return (command.spec.name, Suggestion.distance(candidate, command.spec.name))
        }
        let best = guesses.min { $0.1 < $1.1 }.flatMap { Suggestion.isTypo($0.1, of: $0.0) ? $0.0 : nil }
        // `patchctl apps` alone: name the subcommands of the group.
        let group = commands.filter { $0.spec.words.count > 1 && $0.spec.words.first == typed.first && typed.count == 1 }.map { $0.spec.words[1] }
        let hint = best.map { "; did you mean `patchctl \($0)`?" }
            ?? (group.isEmpty ? "; run `patchctl --help`" : "; `\(typed[typed.startIndex])` takes one of: \(group.joined(separator: ", "))")
        let error = CLIError.usage("unknown command \"\(typed.joined(separator: " ").debugSanitized)\"\(hint)")
        Output.error(error.message)
        if json { Output.json(error.json) }
        return error.exitCode
    }
}

extension CommandSpec {
    /// `apps create`
    var name: String { words.joined(separator: " ") }
}

extension CLIError {
    /// What `--json` prints for a command that failed before it had a result.
    var json: JSON {
        let code: String
        switch self {
        case .usage: code = "usage"
        case .verificationFailed: code = "verification_failed"
        case .failed: code = "failed"
        case .pending: code = "pending"
        }
        return ["error": ["code": .string(code), "message": .string(message), "exit": .int(Int64(exitCode))]]
    }
}
