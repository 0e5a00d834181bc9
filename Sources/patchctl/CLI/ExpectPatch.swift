import HotpatchCLI
/// `--expect-patch N` on every change (publish, promote, rollout, revoke, rollback): the change
/// commits only if the newest live patch of its version and channel is N when it commits (0:
/// none is live); otherwise exit 2 and nothing changed (Registry.requireLive, the server's
/// `expectPatch`). What a retried CI job, or two engineers at once, need.
enum ExpectPatch {
    static let option = Option.value("--expect-patch", "N", "change nothing (exit 2) unless the newest live patch of the version and channel is N (0: none)")

    static func value(_ arguments: Arguments) throws(CLIError) -> Int? {
        try arguments.int("--expect-patch", in: 0...Int(Int32.max))
    }

    /// `query` with `expectPatch` added when the option was given.
    static func query(_ query: [String: String], _ expected: Int?) -> [String: String] {
        guard let expected else { return query }
        var out = query
        out["expectPatch"] = String(expected)
        return out
    }
}
