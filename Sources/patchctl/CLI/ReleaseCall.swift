import Foundation
import HotpatchCLI
import PatchCore
import PatchRegistry

/// How every release command runs its operation, local or `--server` alike: the operation is
/// made from the command's options through its own decoder (so a bad combination is the same
/// usage error the server would give, before anything is sent), run with the call options
/// (`--dry-run`, `--expect-patch`, `--yes`), and a change that would leave a version and
/// channel serving no patch is asked about on a terminal or needs `--yes` without one.
enum ReleaseCall {
    static let yes = Option.flag("--yes", "go ahead when the change would leave the version and channel serving no patch, or publishes to several versions (asked on a terminal)")

    /// `Operation` from the wire values the command's options give: the checks and the words
    /// of patchd's own decoding.
    static func make<Operation: ReleaseOperation>(_ type: Operation.Type, _ fields: [String: String?], bundle: [UInt8]? = nil) throws(CLIError) -> Operation {
        let values = OperationValues(fields.compactMapValues { $0 }, bundle: bundle)
        do { return try type.init(values) } catch { throw error.cliError }
    }

    /// Runs `operation` on `backend` for `app`: what its route answers. The call options come
    /// from the command's `arguments` (none: a step of a command that runs no dry run of it).
    static func run<Operation: ReleaseOperation>(_ operation: Operation, app: AppName?, backend: any Backend, _ arguments: Arguments? = nil,
                                                 dryRun: Bool = false) throws(CLIError) -> JSON {
        let definition = Operation.definition
        var options = CallOptions(dryRun: dryRun)
        if let arguments {
            options = CallOptions(dryRun: definition.dryRun && arguments.flag("--dry-run"),
                                  expectPatch: definition.expectPatch ? try ExpectPatch.value(arguments) : nil,
                                  confirmed: definition.confirms && arguments.flag("--yes"))
        }
        switch try backend.perform(operation, app: app, options) {
        case .done(let answer): return answer
        case .needsConfirmation(let reason):
            guard let arguments, !arguments.flag("--json"), isatty(STDIN_FILENO) == 1, isatty(STDERR_FILENO) == 1 else {
                throw .usage("\(reason); nothing was changed. Give --yes to go ahead")
            }
            FileHandle.standardError.write(Data("\(reason).\nType yes to go ahead: ".utf8))
            guard readLine()?.trimmingCharacters(in: .whitespaces) == "yes" else { throw .failed("not confirmed: nothing was changed") }
            options.confirmed = true
            switch try backend.perform(operation, app: app, options) {
            case .done(let answer): return answer
            case .needsConfirmation(let reason): throw .failed("\(reason); nothing was changed")
            }
        }
    }
}
