import Foundation
import HotpatchCLI
import PatchCore
import PatchRegistry

struct AuditCommand: Command {
    static let spec = CommandSpec("audit", summary: "Show the audit log of every change; --verify checks its hash chain",
                                  options: ListedApps.options + [
                                            .value("--after", "SEQ", "only events after this seq (the last one you have read)"),
                                            .value("--page-size", "N", "with --server: events per request, 1 to 1000 (default 1000); every page is read"),
                                            .flag("--verify", "verify the hash chain (exit 1 if broken)"),
                                            .flag("--json", "print JSON")] + Context.globalOptions + Remote.options)

    static func run(_ arguments: Arguments) throws(CLIError) {
        // Every app's events (and the whole chain's verdict either way) with --all-apps.
        let name = try ListedApps.named(arguments)
        let verify = arguments.flag("--verify")
        let after = try arguments.int("--after", in: 0...Int.max) ?? 0
        let pageSize = try arguments.int("--page-size", in: 1...1000)
        let result = try Backends.open(arguments).audit(app: name, after: after, pageSize: pageSize, verify: verify)
        let chain = result["chain"]
        if arguments.flag("--json") {
            Output.json(.object(result))
        } else {
            Output.line(table(["SEQ", "AT", "APP", "ACTOR", "ACTION", "DETAILS"], (result["events"]?.arrayValue ?? []).map { e in
                [String(e["seq"]?.intValue ?? 0), e["at"]?.stringValue ?? "", e["app"]?.stringValue ?? "", e["actor"]?.stringValue ?? "",
                 e["action"]?.stringValue ?? "", e["details"]?.canonicalString ?? ""]
            }))
            if let chain { Output.line(Self.verdict(chain)) }
        }
        if let chain, chain["intact"]?.boolValue != true { throw .verificationFailed(Self.verdict(chain)) }
    }

    /// The chain verdict in words. A server answers a token scoped to one app with only
    /// `{"intact": …}` (the count, head and break point describe other apps' events too).
    static func verdict(_ chain: JSON) -> String {
        let intact = chain["intact"]?.boolValue == true
        guard chain["events"] != nil || chain["seq"] != nil else {
            return "audit chain \(intact ? "intact" : "BROKEN") (the whole log, every app; the count and head are shown only to a token for every app)"
        }
        return intact ? "audit chain intact: \(chain["events"]?.intValue ?? 0) events, head \(chain["head"]?.stringValue ?? "")"
            : "audit chain BROKEN at event \(chain["seq"]?.intValue ?? 0): \(chain["reason"]?.stringValue ?? "")"
    }
}
