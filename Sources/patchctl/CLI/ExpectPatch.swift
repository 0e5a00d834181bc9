import HotpatchCLI
/// `--expect-patch N` on every release change: the change commits only if the newest live
/// patch of its version and channel is N when it commits (0: none is live; a plain rollback:
/// the release it undoes); otherwise exit 2 and nothing changed (Registry.requireLive, the
/// server's `expectPatch`). What a retried CI job, or two engineers at once, need.
enum ExpectPatch {
    static let option = Option.value("--expect-patch", "N", "change nothing (exit 2) unless the newest live patch of the version and channel is N (0: none)")

    static func value(_ arguments: Arguments) throws(CLIError) -> Int? {
        try arguments.int("--expect-patch", in: 0...Int(Int32.max))
    }
}
