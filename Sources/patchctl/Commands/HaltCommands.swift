import Foundation
import HotpatchCLI
import PatchCore
import PatchRegistry

/// `patchctl halt`: stop offering a patch (0 %); devices that installed it keep it.
struct HaltCommand: Command {
    static let spec = CommandSpec("halt", summary: "Stop offering a patch to more devices (rollout 0 %); devices that installed it keep it",
                                  options: RolloutOutput.options(patch: "the patch to halt",
                                                                 .value("--message", "TEXT", "why (one line): kept in the audit log")))

    static func run(_ arguments: Arguments) throws(CLIError) {
        let version = try arguments.appVersion()
        guard let number = try arguments.int("--patch", in: 1...Int(Int32.max)) else { throw .usage("--patch is required") }
        let operation = HaltOperation(appVersion: version, patch: number, message: arguments.value("--message"))
        let backend = try Backends.open(arguments)
        let name = try backend.app(arguments)
        let patch = try ReleaseCall.run(operation, app: name, backend: backend, arguments)
        try RolloutOutput.print(patch, app: name, version: version, number: number, dryRun: arguments.flag("--dry-run"), backend: backend, arguments)
        if !arguments.flag("--json"), !arguments.flag("--dry-run") {
            Output.line("devices that installed patch \(number) keep it; to take it from them: `patchctl rollback --app \(name) --app-version \(version) --patch \(number)`")
        }
    }
}

/// `patchctl resume`: a halted patch offered again, at the percentage its halt found.
struct ResumeCommand: Command {
    static let spec = CommandSpec("resume", summary: "Offer a halted patch again, at the rollout it had when it was halted (or --rollout PCT)",
                                  options: RolloutOutput.options(patch: "the halted patch",
                                                                 .value("--rollout", "PCT", "rollout percentage, 1-100 (default: what it had when it was halted)")))

    static func run(_ arguments: Arguments) throws(CLIError) {
        let version = try arguments.appVersion()
        guard let number = try arguments.int("--patch", in: 1...Int(Int32.max)) else { throw .usage("--patch is required") }
        let operation = try ReleaseCall.make(ResumeOperation.self, ["appVersion": version.rawValue, "patch": String(number),
                                                                    "rollout": try arguments.percent("--rollout").map(String.init)])
        let backend = try Backends.open(arguments)
        let name = try backend.app(arguments)
        let patch = try ReleaseCall.run(operation, app: name, backend: backend, arguments)
        try RolloutOutput.print(patch, app: name, version: version, number: number, dryRun: arguments.flag("--dry-run"), backend: backend, arguments)
    }
}

/// What halt and resume take, and what rollout, halt and resume print: the one answer they
/// share (`RolloutChange.json`).
enum RolloutOutput {
    /// The options of a command on one patch's rollout, `extra` after `--patch`.
    static func options(patch help: String, _ extra: Option) -> [Option] {
        [.value("--app", "NAME", "the app (default: hotpatch.json's, or the registry's only app)"),
         .value("--app-version", "V", "the app version").required,
         .value("--patch", "N", help).required,
         extra,
         .flag("--dry-run", "say what would change and change nothing"),
         .flag("--json", "print JSON"), ExpectPatch.option, SigningKeys.option] + Context.globalOptions + Remote.options
    }

    static func print(_ patch: JSON, app name: AppName, version: AppVersion, number: Int, dryRun: Bool, backend: any Backend,
                      _ arguments: Arguments) throws(CLIError) {
        if arguments.flag("--json") { Output.json(patch); return }
        let now = patch["rollout"]?.intValue ?? 0, before = patch["from"]?.intValue ?? 0
        if dryRun {
            Output.line("dry run: \(name) \(version) patch \(number) would roll out to \(now)% of devices (now \(before)%); nothing was changed")
        } else if patch["withheld"] != nil {
            // Through the withhold role: the targets keys are elsewhere (the two-person rule).
            Output.line("\(name) \(version) patch \(number) \(patch["changed"]?.boolValue == false ? "was already" : "is now") withheld: offered to no more devices from their next sync, signed with the withhold key (no second person needed); `patchctl resume` gives it back and needs the release keys")
        } else if patch["changed"]?.boolValue == false {
            Output.line("\(name) \(version) patch \(number) unchanged: it already rolls out to \(now)% of devices (nothing signed, no audit event)")
        } else if now == 0 {
            Output.line("\(name) \(version) patch \(number) halted: offered to no more devices (it rolled out to \(before)%)")
        } else {
            Output.line("\(name) \(version) patch \(number) now rolls out to \(now)% of devices")
        }
        if let stopped = patch["stoppedSchedule"] {
            let steps = (stopped["steps"]?.arrayValue ?? []).compactMap(\.intValue).map { "\($0) %" }.joined(separator: ", ")
            Output.line("stopped its staged rollout (next steps \(steps)): a manual rollout takes over from the schedule; `publish --advance` sets a new one")
        }
        if !dryRun { try NowServed.print(app: name, version: version, backend: backend) }
    }
}
