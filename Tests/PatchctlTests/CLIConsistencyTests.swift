import Foundation
import PatchCore
import Testing

@Suite("patchctl consistency: help, version, suggestions, --json")
struct CLIConsistencyTests {
    /// Every command patchctl has, as its words: the "Commands:" section of `patchctl --help`.
    static let commands: [String] = {
        guard let w = try? Workspace(), let overview = try? w.run(["--help"], local: false).stdout else { return [] }
        let section = overview.components(separatedBy: "Commands:\n").dropFirst().first?.components(separatedBy: "\n\n").first ?? ""
        // "  apps create  Create an app…": the words before the two-space gap.
        return section.split(separator: "\n").compactMap { line in
            line.trimmingCharacters(in: .whitespaces).components(separatedBy: "  ").first
        }
    }()

    /// The options of a command as its --help lists them: (name, takes a value).
    static func options(_ help: String) -> [(name: String, valued: Bool)] {
        let section = help.components(separatedBy: "\nOptions:\n").dropFirst().first ?? ""
        return section.split(separator: "\n").compactMap { line in
            let words = line.trimmingCharacters(in: .whitespaces).split(separator: " ", omittingEmptySubsequences: true)
            guard let name = words.first, name.hasPrefix("--") else { return nil }
            // "--app NAME  the app…": a value is an upper-case word right after the name.
            let valued = words.count > 1 && line.contains("\(name) \(words[1])  ") && words[1].first?.isUppercase == true
            return (String(name), valued)
        }
    }

    @Test("`patchctl help CMD` prints exactly what `patchctl CMD --help` prints", arguments: commands)
    func helpCommand(command: String) throws {
        let w = try Workspace()
        let words = command.split(separator: " ").map(String.init)
        let viaHelp = try w.run(["help"] + words, local: false)
        let viaFlag = try w.run(words + ["--help"], local: false)
        #expect(viaHelp.status == 0 && viaFlag.status == 0)
        #expect(viaHelp.stdout == viaFlag.stdout && viaHelp.stdout.contains("Usage: patchctl \(command)"))
        #expect(try w.run(["help", "frobnicate"], local: false).status == 64)
    }

    @Test("every command: an unknown option, an option without its value and a stray argument are exit 64 with the usage pointer, never 2",
          arguments: commands)
    func usageErrorsAre64(command: String) throws {
        let w = try Workspace()
        let words = command.split(separator: " ").map(String.init)
        let help = try w.run(words + ["--help"], local: false).stdout
        let options = Self.options(help)
        #expect(!options.isEmpty, "\(command) lists no options")
        let unknown = try w.run(words + ["--no-such-option"], local: false)
        #expect(unknown.status == 64 && unknown.stderr.contains("see `patchctl \(command) --help`"), "\(command): \(unknown.stderr)")
        for option in options where option.valued {
            let bare = try w.run(words + [option.name], local: false)
            #expect(bare.status == 64 && bare.stderr.contains("\(option.name) needs a value"), "\(command) \(option.name): \(bare.stderr)")
        }
        for option in options where !option.valued && option.name != "--json" {
            let valued = try w.run(words + ["\(option.name)=yes"], local: false)
            #expect(valued.status == 64 && valued.stderr.contains("takes no value"), "\(command) \(option.name)=yes: \(valued.stderr)")
        }
        // More arguments than any command takes.
        let stray = try w.run(words + Array(repeating: "stray", count: 10), local: false)
        #expect(stray.status == 64, "\(command) with ten stray arguments: \(stray.stderr)")
    }

    @Test("--version prints the one release number, for patchctl and patchd")
    func version() throws {
        let w = try Workspace()
        let version = try w.run(["--version"], local: false)
        #expect(version.status == 0 && version.stdout == "patchctl \(Hotpatch.version)\n")
        let patchd = Process()
        patchd.executableURL = Workspace.binary.deletingLastPathComponent().appendingPathComponent("patchd")
        patchd.arguments = ["--version"]
        let pipe = Pipe()
        patchd.standardOutput = pipe
        try patchd.run()
        patchd.waitUntilExit()
        #expect(patchd.terminationStatus == 0)
        #expect(String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self) == "patchd \(Hotpatch.version)\n")
    }

    @Test("a misspelt command or option gets a suggestion, and is still exit 64")
    func didYouMean() throws {
        let w = try Workspace()
        let command = try w.run(["publsh"], local: false)
        #expect(command.status == 64 && command.stderr.contains("did you mean `patchctl publish`?"))
        let sub = try w.run(["apps", "craete", "demo"], local: false)
        #expect(sub.status == 64 && sub.stderr.contains("did you mean `patchctl apps create`?"))
        let option = try w.run(["publish", "--app-verison", "2.3"])
        #expect(option.status == 64 && option.stderr.contains("did you mean --app-version?"))
        let group = try w.run(["tokens"], local: false)
        #expect(group.status == 64 && group.stderr.contains("`tokens` takes one of: create, list, revoke"))
        let far = try w.run(["frobnicate"], local: false)
        #expect(far.status == 64 && !far.stderr.contains("did you mean"))
    }

    @Test("usage lines show required options unbracketed, and the parser requires them")
    func requiredOptions() throws {
        let w = try Workspace()
        let help = try w.run(["rollout", "--help"], local: false).stdout
        #expect(help.contains("Usage: patchctl rollout --app-version V --patch N --rollout PCT [--app NAME] [--dry-run] [--json]"))
        #expect(help.contains("(required; also --percent)"))
        let missing = try w.run(["rollout", "--app", "demo", "--app-version", "2.3", "--patch", "1"])
        #expect(missing.status == 64 && missing.stderr.contains("--rollout is required"))
    }

    @Test("fetch, verify and keys rotate show their required options as required, and the parser requires them")
    func requiredOptionsOfFetchVerifyRotate() throws {
        let w = try Workspace()
        let fetch = try w.run(["fetch", "--help"], local: false).stdout
        #expect(fetch.contains("Usage: patchctl fetch --server URL --app-version V --device-id ID --root FILE --cache DIR [--app NAME]"))
        let verify = try w.run(["verify", "--help"], local: false).stdout
        #expect(verify.contains("Usage: patchctl verify --root FILE [--repo DIR]"))
        let rotate = try w.run(["keys", "rotate", "--help"], local: false).stdout
        #expect(rotate.contains("Usage: patchctl keys rotate --role ROLE [--app NAME]"))
        let noCache = try w.run(["fetch", "--server", "http://127.0.0.1:1", "--app", "demo", "--app-version", "2.3", "--device-id", "d", "--root", "r.json"], local: false)
        #expect(noCache.status == 64 && noCache.stderr.contains("--cache is required"))
        let noRoot = try w.run(["verify", "--repo", w.path("site")], local: false)
        #expect(noRoot.status == 64 && noRoot.stderr.contains("--root is required"))
        let noRole = try w.run(["keys", "rotate", "--app", "demo"])
        #expect(noRole.status == 64 && noRole.stderr.contains("--role is required"))
    }

    @Test("rollout takes --rollout like publish; --percent still works; the same percentage again says unchanged and writes nothing")
    func rolloutSpelling() throws {
        let w = try Workspace()
        #expect(try w.run(["apps", "create", "demo"]).status == 0)
        let file = try w.write("main.js", "fix()")
        #expect(try w.run(["publish", "--app", "demo", "--app-version", "2.3", "--rollout", "10", file]).status == 0)
        let base = ["rollout", "--app", "demo", "--app-version", "2.3", "--patch", "1"]
        #expect(try w.json(base + ["--rollout", "25"])["rollout"]?.intValue == 25)
        #expect(try w.json(base + ["--percent", "40"])["rollout"]?.intValue == 40)
        let events = try w.json(["audit"])["events"]?.arrayValue?.count
        let versions = try w.json(["list"]).arrayValue?.first
        let same = try w.run(base + ["--rollout", "40"])
        #expect(same.status == 0 && same.stdout.contains("unchanged"))
        #expect(try w.json(["audit"])["events"]?.arrayValue?.count == events)
        #expect(try w.json(["list"]).arrayValue?.first == versions)
        let throttle = try w.run(["apps", "throttle", "demo", "--min-interval", "3600"])
        #expect(throttle.status == 0 && throttle.stdout.contains("unchanged"))
        #expect(try w.json(["audit"])["events"]?.arrayValue?.count == events)
    }

    @Test("every command's --json is one JSON value on stdout: objects, arrays for listings, {\"error\"} on failure")
    func jsonEverywhere() throws {
        let w = try Workspace()
        let file = try w.write("main.js", "fix()")
        let shapes: [([String], Bool)] = [
            (["apps", "create", "demo"], false), (["apps", "create", "jsp", "--jspatch-rsa"], false), (["apps", "list"], true),
            (["apps", "root", "demo"], false), (["apps", "throttle", "demo"], false), (["apps", "jspatch-key", "jsp"], false),
            (["tokens", "create", "--app", "demo"], false), (["tokens", "list"], true),
            (["publish", "--app", "demo", "--app-version", "2.3", file], false),
            (["rollout", "--app", "demo", "--app-version", "2.3", "--patch", "1", "--rollout", "50"], false),
            (["list"], true), (["audit", "--verify"], false), (["keys", "rotate", "--app", "demo", "--role", "snapshot"], false),
            (["export", "--app", "demo", "--out", w.path("site")], false), (["revoke", "--app", "demo", "--app-version", "2.3", "--all", "--yes"], true),
        ]
        for (words, isArray) in shapes {
            let value = try w.json(words)
            #expect(isArray ? value.arrayValue != nil : value.objectValue != nil, "\(words)")
        }
        let token = try w.json(["tokens", "list"]).arrayValue?.first?["id"]?.stringValue ?? ""
        #expect(try w.json(["tokens", "revoke", token])["revoked"]?.boolValue == true)
        try w.write("root.json", try w.run(["apps", "root", "demo"]).stdout)
        let verified = try w.run(["verify", "--repo", w.path("site"), "--root", w.path("root.json"), "--json"], local: false)
        let report = try JSONParser.parse(verified.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(verified.status == 0 && report["ok"]?.boolValue == true)
        // Failures: exit code as ever, the message on stderr, and one error object on stdout.
        for (words, status) in [(["publish", "--app", "nope", "--app-version", "2.3", file], Int32(2)), (["list", "--colour"], 64),
                                (["frobnicate"], 64), (["verify", "--repo", w.path("missing"), "--root", w.path("root.json")], 2)] {
            let result = try w.run(words + ["--json"], local: words.first != "verify" && words.first != "frobnicate")
            #expect(result.status == status, "\(words)")
            #expect(result.stderr.hasPrefix("patchctl: "))
            let error = try JSONParser.parse(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines))["error"]
            #expect(error?["exit"]?.intValue == Int64(status) && error?["message"]?.stringValue?.isEmpty == false, "\(words)")
        }
    }

    @Test("the actor is meaningful with no environment at all: user@host from the account, never \"unknown\"")
    func actorWithoutUser() throws {
        let w = try Workspace()
        let process = Process()
        process.executableURL = Workspace.binary
        process.arguments = ["apps", "create", "demo", "--keys", w.path("keys")] + (try w.registryArguments("data"))
        process.environment = [:]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let actor = try #require(try w.json(["audit"])["events"]?.arrayValue?.first?["actor"]?.stringValue)
        #expect(actor.contains("@") && !actor.hasPrefix("unknown") && !actor.hasPrefix("@"))
        let named = try w.run(["apps", "create", "two"], environment: ["HOTPATCH_ACTOR": "release-bot"])
        #expect(named.status == 0)
        #expect(try w.json(["audit"])["events"]?.arrayValue?.last?["actor"]?.stringValue == "release-bot")
    }
}
