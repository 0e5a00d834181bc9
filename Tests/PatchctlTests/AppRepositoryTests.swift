import Foundation
import PatchCore
import Testing

/// Issue 42: the app's repository workflow. `init` names where the registry is and refuses a
/// hotpatch.json that would publish nowhere; no hint tells anyone to make keys or an app
/// inside an app's repository; an unknown app gets the nearest name, never "create it".
@Suite("an app's repository: init names the registry, hints never make one inside it")
struct AppRepositoryTests {
    /// A workspace with a registry (app demo) at `srv/reg`, outside the app repository `repo`
    /// (a fresh git work tree).
    final class Layout {
        let w: Workspace
        let repo: URL
        var data: String { w.path("srv/reg/data") }
        var keys: String { w.path("srv/reg/keys") }

        init() throws {
            w = try Workspace()
            repo = w.directory.appendingPathComponent("repo", isDirectory: true)
            try FileManager.default.createDirectory(at: repo.appendingPathComponent("src/ios/deep"), withIntermediateDirectories: true)
            let git = Process()
            git.executableURL = URL(fileURLWithPath: "/usr/bin/git")
            git.arguments = ["init", "-q", repo.path]
            try git.run()
            git.waitUntilExit()
            #expect(try w.run(["apps", "create", "demo", "--data", data, "--keys", keys], local: false).status == 0)
        }

        /// patchctl ARGS as typed in `directory` (relative to the repository), with no
        /// $HOTPATCH_* from the test's environment.
        func run(_ arguments: [String], in directory: String = "", environment extra: [String: String] = [:]) throws -> Workspace.Result {
            let process = Process()
            process.executableURL = Workspace.binary
            process.arguments = arguments
            process.currentDirectoryURL = directory.isEmpty ? repo : repo.appendingPathComponent(directory)
            var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("HOTPATCH_") }
            environment["HOTPATCH_ACTOR"] = "ci@test"
            for (key, value) in extra { environment[key] = value }
            process.environment = environment
            let out = Pipe(), err = Pipe()
            process.standardOutput = out
            process.standardError = err
            try process.run()
            let stdout = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            return Workspace.Result(status: process.terminationStatus, stdout: stdout, stderr: stderr, killedBySignal: nil)
        }

        var projectFile: URL { repo.appendingPathComponent("hotpatch.json") }

        func bundle(_ version: String, _ text: String) throws {
            let directory = repo.appendingPathComponent("patches/demo/\(version)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try Data(text.utf8).write(to: directory.appendingPathComponent("main.js"))
        }
    }

    @Test("init's usage line shows --app required; with no registry named it is exit 64 naming both forms and writes nothing")
    func initNeedsARegistry() throws {
        let l = try Layout()
        let help = try l.run(["init", "--help"])
        #expect(help.stdout.contains("Usage: patchctl init --app NAME [--server URL] [--data DIR] [--keys DIR]"), "\(help.stdout)")
        let neither = try l.run(["init", "--app", "demo"])
        #expect(neither.status == 64 && neither.stderr.contains("--server URL") && neither.stderr.contains("--data DIR --keys DIR"), "\(neither.stderr)")
        let half = try l.run(["init", "--app", "demo", "--data", l.data])
        #expect(half.status == 64 && half.stderr.contains("--data and --keys go together"))
        let badServer = try l.run(["init", "--app", "demo", "--server", "patches.example.com"])
        #expect(badServer.status == 64 && badServer.stderr.contains("--server must be an http:// or https:// URL"))
        #expect(!FileManager.default.fileExists(atPath: l.projectFile.path))
    }

    @Test("init refuses a registry that is not there, or does not hold the app (naming the nearest), and writes nothing")
    func initChecksTheRegistry() throws {
        let l = try Layout()
        let missing = try l.run(["init", "--app", "demo", "--data", l.w.path("srv/reg/dta"), "--keys", l.keys])
        #expect(missing.status == 2 && missing.stderr.contains("no registry at \(l.w.path("srv/reg/dta"))"), "\(missing.stderr)")
        #expect(!missing.stderr.contains("apps create"), "inside an app's repository no hint makes a registry")
        #expect(!FileManager.default.fileExists(atPath: l.w.path("srv/reg/dta")))
        let typo = try l.run(["init", "--app", "dmeo", "--data", l.data, "--keys", l.keys])
        #expect(typo.status == 2 && typo.stderr.contains("unknown app \"dmeo\"") && typo.stderr.contains("did you mean `demo`?"), "\(typo.stderr)")
        #expect(!typo.stderr.contains("create"))
        let noKeys = try l.run(["init", "--app", "demo", "--data", l.data, "--keys", l.w.path("elsewhere")])
        #expect(noKeys.status == 2 && noKeys.stderr.contains("has no keys of demo"), "\(noKeys.stderr)")
        #expect(!FileManager.default.fileExists(atPath: l.projectFile.path))
    }

    @Test("after init --data --keys in a fresh git repository, publish --app-version works from its root and any subdirectory")
    func publishFromTheRepository() throws {
        let l = try Layout()
        let initialized = try l.run(["init", "--app", "demo", "--data", l.data, "--keys", l.keys])
        #expect(initialized.status == 0, "\(initialized.stderr)")
        let written = try JSONParser.parse(Array(try Data(contentsOf: l.projectFile)))
        #expect(written["data"]?.stringValue == l.data && written["keys"]?.stringValue == l.keys)
        try l.bundle("2.3", "fix(1);\n")
        let root = try l.run(["publish", "--app-version", "2.3"])
        #expect(root.status == 0 && root.stdout.contains("published demo 2.3 patch 1"), "\(root.stderr)")
        try l.bundle("2.3", "fix(2);\n")
        let deep = try l.run(["publish", "--app-version", "2.3"], in: "src/ios/deep")
        #expect(deep.status == 0 && deep.stdout.contains("published demo 2.3 patch 2"), "\(deep.stderr)")
        // Relative paths are kept as given and read against hotpatch.json's directory.
        #expect(try l.run(["init", "--app", "demo", "--data", "../srv/reg/data", "--keys", "../srv/reg/keys", "--force"]).status == 0)
        try l.bundle("2.3", "fix(3);\n")
        let relative = try l.run(["publish", "--app-version", "2.3"], in: "src")
        #expect(relative.status == 0 && relative.stdout.contains("patch 3"), "\(relative.stderr)")
        for leftover in ["data", "keys", "src/data", "src/ios/deep/keys"] {
            #expect(!FileManager.default.fileExists(atPath: l.repo.appendingPathComponent(leftover).path), "\(leftover) made in the repository")
        }
        // A hotpatch.json from before init named the registry (app and patches only) is still read.
        try Data(#"{"app":"demo","patchesDirectory":"patches"}"#.utf8).write(to: l.projectFile)
        try l.bundle("2.3", "fix(4);\n")
        let old = try l.run(["publish", "--app-version", "2.3", "--data", l.data, "--keys", l.keys], in: "src")
        #expect(old.status == 0 && old.stdout.contains("patch 4"), "\(old.stderr)")
    }

    @Test("in an app's repository with no registry, publish says where it looked and how to point at one, never apps create; nothing is made")
    func noRegistryInTheRepository() throws {
        let l = try Layout()
        try Data(#"{"app":"demo","patchesDirectory":"patches"}"#.utf8).write(to: l.projectFile)
        try l.bundle("2.3", "fix();\n")
        for directory in ["", "src/ios"] {
            let result = try l.run(["publish", "--app-version", "2.3"], in: directory)
            #expect(result.status == 2, "\(result.stderr)")
            #expect(result.stderr.contains("no registry at \(l.repo.appendingPathComponent(directory).appendingPathComponent("data").standardizedFileURL.path)"), "\(result.stderr)")
            #expect(result.stderr.contains("--data DIR --keys DIR") && result.stderr.contains("--server URL")
                    && result.stderr.contains("patchctl init --app demo --data DIR --keys DIR"), "\(result.stderr)")
            #expect(!result.stderr.contains("apps create"), "\(result.stderr)")
        }
        // A bare git work tree counts as an app's repository too.
        try FileManager.default.removeItem(at: l.projectFile)
        let bare = try l.run(["list"], in: "src")
        #expect(bare.status == 2 && !bare.stderr.contains("apps create") && bare.stderr.contains("--data DIR --keys DIR"), "\(bare.stderr)")
        #expect(!FileManager.default.fileExists(atPath: l.repo.appendingPathComponent("data").path))
        // Outside any repository, setting a registry up is what `apps create` is for.
        let outside = try l.w.run(["list", "--data", l.w.path("nowhere"), "--keys", l.w.path("nokeys")], local: false)
        #expect(outside.status == 2 && outside.stderr.contains("create one with `patchctl apps create NAME`"), "\(outside.stderr)")
    }

    @Test("an unknown app gets the nearest app of the registry, for Backend commands and local-only ones alike, never \"create it\"")
    func unknownApp() throws {
        let w = try Workspace()
        #expect(try w.run(["apps", "create", "demo"]).status == 0)
        #expect(try w.run(["apps", "create", "shop"]).status == 0)
        let bundle = try w.write("main.js", "fix()")
        let cases: [[String]] = [["publish", "--app", "dmeo", "--app-version", "2.3", bundle], ["keys", "rotate", "--app", "dmeo", "--role", "timestamp"],
                                 ["status", "--app", "dmeo"], ["apps", "root", "dmeo"]]
        for words in cases {
            let result = try w.run(words)
            #expect(result.status == 2 && result.stderr.contains("unknown app \"dmeo\"") && result.stderr.contains("did you mean `demo`?"), "\(words): \(result.stderr)")
            #expect(!result.stderr.contains("create"), "\(words): \(result.stderr)")
        }
        let far = try w.run(["publish", "--app", "zzzzzz", "--app-version", "2.3", bundle])
        #expect(far.status == 2 && far.stderr.contains("which holds demo, shop") && !far.stderr.contains("create"), "\(far.stderr)")
        #expect(try w.json(["list"]).arrayValue?.isEmpty == true)
    }
}
