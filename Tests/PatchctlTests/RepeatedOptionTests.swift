import Foundation
import HotpatchCLI
import Testing

/// Issue 42: an option that takes one value, given twice, is a usage error naming it, never
/// "the last one wins" (`rollout --rollout 10 --rollout 100` would otherwise ship 100 %).
@Suite("the option grammar refuses a single-value option given twice")
struct RepeatedOptionTests {
    static let spec = CommandSpec("rollout", summary: "test", options: [
        Option.value("--rollout", "PCT", "share").alias("--percent"),
        Option.value("--key", "FILE", "a key").repeatable,
        Option.value("--data", "DIR", "registry").environment("HOTPATCH_DATA"),
        Option.flag("--json", "json"),
    ])

    static func refusal(_ words: [String], environment: [String: String] = [:]) -> CLIError? {
        do { _ = try Arguments(spec: spec, parsing: words, environment: environment); return nil } catch { return error }
    }

    @Test("the same option twice, in any spelling, is exit 64 naming it",
          arguments: [["--rollout", "10", "--rollout", "100"], ["--rollout=10", "--rollout", "100"], ["--rollout", "10", "--rollout=10"],
                      ["--percent", "10", "--rollout", "100"], ["--rollout=10", "--percent=100"]])
    func valueTwice(words: [String]) throws {
        let error = try #require(Self.refusal(words))
        #expect(error.exitCode == 64)
        #expect(error.message.hasPrefix("--rollout is given twice"), "\(error.message)")
        // The values stay out of the message (one may be a token bound for a CI log).
        #expect(!error.message.contains("100"))
    }

    @Test("an alias names both spellings; a flag twice is refused too")
    func aliasAndFlag() throws {
        let alias = try #require(Self.refusal(["--percent", "10", "--rollout", "100"]))
        #expect(alias.message.contains("(as --percent and --rollout)"))
        let flag = try #require(Self.refusal(["--json", "--json"]))
        #expect(flag.exitCode == 64 && flag.message.hasPrefix("--json is given twice"))
    }

    @Test("a repeatable option keeps every value; an environment value is overridden once by the command line")
    func repeatableAndEnvironment() throws {
        let keys = try Arguments(spec: Self.spec, parsing: ["--key", "a.pub", "--key=b.pub", "--key", "c.pub"])
        #expect(keys.all("--key") == ["a.pub", "b.pub", "c.pub"])
        let data = try Arguments(spec: Self.spec, parsing: ["--data", "mine"], environment: ["HOTPATCH_DATA": "theirs"])
        #expect(data.value("--data") == "mine")
        #expect(Self.refusal(["--data", "a", "--data", "b"], environment: ["HOTPATCH_DATA": "theirs"])?.exitCode == 64)
    }

    @Test("patchctl rollout --rollout 10 --rollout 100: exit 64 naming --rollout, and the rollout is unchanged")
    func rolloutEndToEnd() throws {
        let w = try Workspace()
        #expect(try w.run(["apps", "create", "demo"]).status == 0)
        #expect(try w.run(["publish", "--app", "demo", "--app-version", "2.3", "--rollout", "5", try w.write("main.js", "fix()")]).status == 0)
        let base = ["rollout", "--app", "demo", "--app-version", "2.3", "--patch", "1"]
        for twice in [["--rollout", "10", "--rollout", "100"], ["--rollout=10", "--percent", "100"]] {
            let result = try w.run(base + twice)
            #expect(result.status == 64 && result.stderr.contains("--rollout is given twice"), "\(result.stderr)")
        }
        let publishTwice = try w.run(["publish", "--app", "demo", "--app", "demo", "--app-version", "2.3", try w.write("b.js", "b()")])
        #expect(publishTwice.status == 64 && publishTwice.stderr.contains("--app is given twice"))
        #expect(try w.json(["list"]).arrayValue?.map { $0["rollout"]?.intValue } == [5])
    }

    @Test("patchd parses its own options as before, and refuses one given twice")
    func patchd() throws {
        let patchd = Workspace.binary.deletingLastPathComponent().appendingPathComponent("patchd")
        func run(_ words: [String]) throws -> (Int32, String) {
            let process = Process()
            process.executableURL = patchd
            process.arguments = words
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = pipe
            try process.run()
            let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            return (process.terminationStatus, text)
        }
        let twice = try run(["--listen", "127.0.0.1:0", "--listen=127.0.0.1:1", "--data", "/nonexistent"])
        #expect(twice.0 == 64 && twice.1.contains("--listen is given twice"), "\(twice.1)")
        // Every option once, on a registry that is not there: past the grammar, refused for
        // the registry (exit 2), not for its options.
        let once = try run(["--data", "/nonexistent/hotpatch-data", "--keys", "/nonexistent/keys", "--listen", "127.0.0.1:0", "--threads", "2",
                            "--trusted-proxy", "10.0.0.0/8", "--max-conns", "100", "--upkeep-lease", "30", "--expiry-margin", "60"])
        #expect(once.0 == 2 && once.1.contains("no registry at"), "\(once.1)")
    }
}
