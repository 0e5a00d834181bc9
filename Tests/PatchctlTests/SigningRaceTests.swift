import Foundation
import Testing
import PatchCore

/// Two processes changing one registry: whatever decides which keys sign (the current root)
/// must be read inside the transaction that signs, or a rotation committed in between makes
/// the other change sign with the replaced key and every client refuses the repository.
@Suite("Signing races between processes")
struct SigningRaceTests {
    /// The changes that re-sign targets, as patchctl arguments (patch 1 exists, at 50 %).
    static let changes: [String: [String]] = [
        "publish": ["publish", "--app", "demo", "--app-version", "2.3", "two.js"],
        "revoke": ["revoke", "--app", "demo", "--app-version", "2.3", "--patch", "1", "--yes"],
        "rollout": ["rollout", "--app", "demo", "--app-version", "2.3", "--patch", "1", "--percent", "80"],
    ]

    @Test("a rotation in the window between reading the root and signing cannot make a change sign with the replaced key",
          arguments: ["publish", "revoke", "rollout"], [Role.targets, .snapshot, .timestamp])
    func rotationInsideTheSigningWindow(change: String, role: Role) throws {
        let w = try Workspace()
        try w.run(["apps", "create", "demo"])
        try w.run(["publish", "--app", "demo", "--app-version", "2.3", "--rollout", "50", try w.write("one.js", "one()")])
        try w.write("two.js", "two()")
        let pauses = w.path("pauses")
        try FileManager.default.createDirectory(atPath: pauses, withIntermediateDirectories: true)
        let exists = { (name: String) in FileManager.default.fileExists(atPath: "\(pauses)/\(name)") }
        let touch = { (name: String) in _ = FileManager.default.createFile(atPath: "\(pauses)/\(name)", contents: nil) }

        // The change stops right after it has read the root that says which keys sign.
        let changing = try w.start(Self.changes[change]!, environment: ["HOTPATCH_PAUSE_AT": "signing-root.read", "HOTPATCH_PAUSE_DIR": pauses])
        #expect(Workspace.poll(seconds: 30) { exists("signing-root.read.paused") || !changing.isRunning })
        // The rotation stops after its commit, before it deletes the replaced key file: the
        // slowest a machine can be there. If the change holds the write lock (the fix), the
        // rotation waits for it and never gets here while the change is paused.
        let rotating = try w.start(["keys", "rotate", "--app", "demo", "--role", role.rawValue],
                                   environment: ["HOTPATCH_PAUSE_AT": "rotate.after-commit", "HOTPATCH_PAUSE_DIR": pauses])
        let rotationCommittedFirst = Workspace.poll(seconds: 3) { exists("rotate.after-commit.paused") || !rotating.isRunning }
        touch("signing-root.read.resume")
        let changed = changing.wait()
        touch("rotate.after-commit.resume")
        let rotated = rotating.wait()

        #expect(changed.status == 0, "\(change): \(changed.stderr)")
        #expect(rotated.status == 0, "rotate: \(rotated.stderr)")
        #expect(!rotationCommittedFirst, "the rotation committed while \(change) was between reading the root and signing")
        try w.write("root.json", try w.run(["apps", "root", "demo"]).stdout)
        try w.run(["export", "--app", "demo", "--out", w.path("out")])
        let verify = try w.run(["verify", "--repo", w.path("out"), "--root", w.path("root.json"), "--app", "demo"], local: false)
        #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
    }

    @Test("publishes and rotations of every role run side by side all succeed, and the repository verifies")
    func concurrentPublishesAndRotations() throws {
        let w = try Workspace()
        try w.run(["apps", "create", "demo"])
        for round in 0..<3 {
            var running: [(String, Workspace.Running)] = []
            for n in 0..<4 {
                let file = try w.write("r\(round)p\(n).js", "patch(\(round), \(n))")
                running.append(("publish \(n)", try w.start(["publish", "--app", "demo", "--app-version", "2.3", file])))
            }
            for role in Role.allCases {
                running.append(("rotate \(role)", try w.start(["keys", "rotate", "--app", "demo", "--role", role.rawValue])))
            }
            for (what, process) in running {
                let result = process.wait()
                #expect(result.status == 0, "round \(round), \(what): \(result.stderr)")
            }
        }
        #expect(try w.json(["list"]).arrayValue?.count == 12)
        try w.write("root.json", try w.run(["apps", "root", "demo"]).stdout)
        try w.run(["export", "--app", "demo", "--out", w.path("out")])
        let verify = try w.run(["verify", "--repo", w.path("out"), "--root", w.path("root.json"), "--app", "demo"], local: false)
        #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
    }
}

/// An export writes timestamp, snapshot and targets that pin each other, so it must read
/// them from one state of the registry.
@Suite("Export under a concurrent publish")
struct ExportRaceTests {
    @Test("a publish committed while an export reads still leaves an export that verifies")
    func publishDuringExport() throws {
        let w = try Workspace()
        try w.run(["apps", "create", "demo"])
        try w.run(["publish", "--app", "demo", "--app-version", "2.3", try w.write("one.js", "one()")])
        let pauses = w.path("pauses")
        try FileManager.default.createDirectory(atPath: pauses, withIntermediateDirectories: true)
        let exporting = try w.start(["export", "--app", "demo", "--out", w.path("out")],
                                    environment: ["HOTPATCH_PAUSE_AT": "export.targets-read", "HOTPATCH_PAUSE_DIR": pauses])
        #expect(Workspace.poll(seconds: 30) { FileManager.default.fileExists(atPath: "\(pauses)/export.targets-read.paused") || !exporting.isRunning })
        // A reader never blocks a writer (SQLite in WAL mode; PostgreSQL, MVCC): the publish commits at once.
        let published = try w.run(["publish", "--app", "demo", "--app-version", "2.3", try w.write("two.js", "two()")])
        #expect(published.status == 0, "\(published.stderr)")
        _ = FileManager.default.createFile(atPath: "\(pauses)/export.targets-read.resume", contents: nil)
        let exported = exporting.wait()
        #expect(exported.status == 0, "\(exported.stderr)")
        try w.write("root.json", try w.run(["apps", "root", "demo"]).stdout)
        let verify = try w.run(["verify", "--repo", w.path("out"), "--root", w.path("root.json"), "--app", "demo"], local: false)
        #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
    }
}
