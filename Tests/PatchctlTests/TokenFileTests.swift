import Foundation
import Testing
import PatchCore

/// The token for --server: from a file or HOTPATCH_TOKEN, since a command line is readable by
/// every user of the machine. (Publishing with --token-file against a live patchd is in
/// Tests/interop/test_registry_hardening.py.)
@Suite("Token sources for --server")
struct TokenFileTests {
    /// A port nothing listens on: the token is resolved before any connection is tried.
    static let server = ["--server", "http://127.0.0.1:9"]

    @Test("a missing, empty, oversized or multi-line token file is a clear error (exit 2) before anything is sent")
    func badTokenFiles() throws {
        let w = try Workspace()
        let cases: [(String, String?, String)] = [
            ("missing", nil, "cannot read the token file"),
            ("empty", "", "is empty"),
            ("blank", "\n", "is empty"),
            ("big", String(repeating: "a", count: 5000), "is over 4096 bytes"),
            ("two-lines", "hp_one\nhp_two\n", "does not hold a token"),
        ]
        for (name, contents, message) in cases {
            if let contents { try w.write(name, contents); chmod(w.path(name), 0o600) }
            let result = try w.run(["list", "--app", "demo", "--token-file", w.path(name)] + Self.server, local: false)
            #expect(result.status == 2, "\(name): \(result.stderr)")
            #expect(result.stderr.contains(message), "\(name): \(result.stderr)")
            #expect(!result.stderr.contains("cannot reach"), "\(name): a request was sent")
        }
        let both = try w.run(["list", "--app", "demo", "--token", "hp_x", "--token-file", w.path("empty")] + Self.server, local: false)
        #expect(both.status == 64 && both.stderr.contains("not both"))
        let noValue = try w.run(["list", "--app", "demo", "--token-file"], local: false)
        #expect(noValue.status == 64)
    }

    @Test("--token works but warns; --token-file and HOTPATCH_TOKEN do not, unless the file is readable by others")
    func warnings() throws {
        let w = try Workspace()
        let inline = try w.run(["list", "--app", "demo", "--token", "hp_x"] + Self.server, local: false)
        #expect(inline.stderr.contains("warning: --token is visible to other users"), "\(inline.stderr)")
        #expect(inline.stderr.contains("cannot reach"))  // it went on to send the request
        try w.write("token", "hp_x\n")
        chmod(w.path("token"), 0o600)
        let file = try w.run(["list", "--app", "demo", "--token-file", w.path("token")] + Self.server, local: false)
        #expect(!file.stderr.contains("warning") && file.stderr.contains("cannot reach"), "\(file.stderr)")
        let env = try w.run(["list", "--app", "demo"] + Self.server, environment: ["HOTPATCH_TOKEN": "hp_x"], local: false)
        #expect(!env.stderr.contains("warning") && env.stderr.contains("cannot reach"), "\(env.stderr)")
        chmod(w.path("token"), 0o644)
        let shared = try w.run(["list", "--app", "demo", "--token-file", w.path("token")] + Self.server, local: false)
        #expect(shared.stderr.contains("readable by group or others") && shared.stderr.contains("chmod 600"), "\(shared.stderr)")
    }

    @Test("--help of every remote command names --token-file and says to avoid --token", arguments: ["publish", "revoke", "rollout", "list", "audit"])
    func help(command: String) throws {
        let w = try Workspace()
        let help = try w.run([command, "--help"], local: false)
        #expect(help.stdout.contains("--token-file FILE"))
        #expect(help.stdout.contains("$HOTPATCH_TOKEN"))
        #expect(help.stdout.contains("can read it (ps, /proc); avoid"))
    }
}
