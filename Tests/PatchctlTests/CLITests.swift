import Foundation
import Testing
import PatchCore

@Suite("patchctl command line")
struct CLITests {
    static let commands = ["apps create", "apps root", "publish", "revoke", "rollout", "list", "audit", "keys rotate", "keys delegate", "export", "verify", "init", "diff", "promote"]

    @Test("every command has --help", arguments: commands)
    func help(command: String) throws {
        let w = try Workspace()
        let result = try w.run(command.split(separator: " ").map(String.init) + ["--help"], local: false)
        #expect(result.status == 0)
        #expect(result.stdout.contains("Usage: patchctl \(command)"))
    }

    @Test("unknown commands and options are usage errors: exit 64, one line on stderr")
    func usageErrors() throws {
        let w = try Workspace()
        let unknown = try w.run(["frobnicate"], local: false)
        #expect(unknown.status == 64)
        #expect(unknown.stderr.hasPrefix("patchctl: unknown command"))
        let option = try w.run(["list", "--colour"])
        #expect(option.status == 64)
        #expect(option.stderr.split(separator: "\n").first?.hasPrefix("patchctl: unknown option --colour") == true)
        let missing = try w.run(["publish", "--app", "demo", "main.js"])
        #expect(missing.status == 64 && missing.stderr.contains("--app-version is required"))
    }

    @Test("publish prints the patch number, SHA-256 and MD5; --json for machines")
    func publish() throws {
        let w = try Workspace()
        #expect(try w.run(["apps", "create", "demo"]).status == 0)
        let file = try w.write("main.js", "abc")
        let text = try w.run(["publish", "--app", "demo", "--app-version", "2.3", file])
        #expect(text.status == 0)
        #expect(text.stdout.contains("patch 1"))
        #expect(text.stdout.contains("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"))
        #expect(text.stdout.contains("900150983cd24fb0d6963f7d28e17f72"))
        let json = try w.json(["publish", "--app", "demo", "--app-version", "2.3", "--rollout", "25", "--allow-same", file])
        #expect(json["patch"]?.intValue == 2)
        #expect(json["rollout"]?.intValue == 25)
        #expect(json["sha256"]?.stringValue == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        let list = try w.json(["list", "--active"])
        #expect(list.arrayValue?.count == 2)
    }

    @Test("export then verify passes; a tampered target fails with exit 1, a missing repo with exit 2")
    func verify() throws {
        let w = try Workspace()
        try w.run(["apps", "create", "demo"])
        try w.run(["publish", "--app", "demo", "--app-version", "2.3", try w.write("main.js", "fix()")])
        let root = try w.run(["apps", "root", "demo"])
        try w.write("root.json", root.stdout)
        #expect(try w.run(["export", "--app", "demo", "--out", w.path("out")]).status == 0)
        let ok = try w.run(["verify", "--repo", w.path("out"), "--root", w.path("root.json")], local: false)
        #expect(ok.status == 0, "\(ok.stderr)")
        let sha = Digest.sha256Hex(Array("fix()".utf8))
        try Data("evil()".utf8).write(to: URL(fileURLWithPath: w.path("out/v1/apps/demo/targets/2.3/1/\(sha).main.js")))
        let bad = try w.run(["verify", "--repo", w.path("out"), "--root", w.path("root.json")], local: false)
        #expect(bad.status == 1)
        #expect(bad.stdout.contains("FAIL"))
        let missing = try w.run(["verify", "--repo", w.path("nowhere"), "--root", w.path("root.json")], local: false)
        #expect(missing.status == 2)
    }
}

/// A publish killed at any point leaves the registry as it was before: the patch is either
/// fully there (metadata, bytes, audit event) or not at all.
@Suite("Crash safety of publish")
struct CrashSafetyTests {
    @Test("SIGKILL mid-publish leaves the old state, which still verifies", arguments: [
        "publish.after-blob", "publish.after-patch", "publish.after-metadata", "publish.before-commit",
    ])
    func killMidPublish(point: String) throws {
        let w = try Workspace()
        try w.run(["apps", "create", "demo", "--encrypt"])
        try w.run(["publish", "--app", "demo", "--app-version", "2.3", try w.write("one.js", "one()")])
        let before = try w.json(["list"])
        let auditBefore = try w.json(["audit"])

        let crashed = try w.run(["publish", "--app", "demo", "--app-version", "2.3", try w.write("two.js", "two()")],
                                environment: ["HOTPATCH_CRASH_AT": point])
        #expect(crashed.killedBySignal == SIGKILL, "the crash point \(point) was not reached")

        #expect(try w.json(["list"]) == before)
        #expect(try w.json(["audit"]) == auditBefore)
        #expect(try w.run(["audit", "--verify"]).status == 0)
        try w.write("root.json", try w.run(["apps", "root", "demo"]).stdout)
        try w.run(["export", "--app", "demo", "--out", w.path("out")])
        let verify = try w.run(["verify", "--repo", w.path("out"), "--root", w.path("root.json"),
                                "--app", "demo", "--key", w.path("keys/demo/content.key")], local: false)
        #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
        #expect(verify.stdout.contains("verified 1 active patch"))

        let next = try w.json(["publish", "--app", "demo", "--app-version", "2.3", w.path("two.js")])
        #expect(next["patch"]?.intValue == 2)
    }
}
