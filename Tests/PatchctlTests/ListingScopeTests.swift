import Foundation
import PatchCore
import Testing

/// Which apps `status`, `list` and `audit` show (issue 42): hotpatch.json's app, as for every
/// other command, unless `--app` names another or `--all-apps` asks for every app; and what
/// `status` says of a halted patch.
@Suite("status, list and audit: the app they show, and halted patches")
struct ListingScopeTests {
    /// Apps demo (2.3 patch 1) and other (1.0 patch 1), and a hotpatch.json naming demo.
    func workspace() throws -> Workspace {
        let w = try Workspace()
        for (app, version) in [("demo", "2.3"), ("other", "1.0")] {
            #expect(try w.run(["apps", "create", app]).status == 0)
            #expect(try w.run(["publish", "--app", app, "--app-version", version, try w.write("\(app).js", "\(app)()")]).status == 0)
        }
        try w.write("hotpatch.json", #"{"app":"demo","patchesDirectory":"patches"}"#)
        return w
    }

    func apps(_ json: JSON, _ key: String = "app") -> Set<String> {
        Set((json.arrayValue ?? json["apps"]?.arrayValue ?? json["events"]?.arrayValue ?? []).compactMap { $0[key]?.stringValue })
    }

    @Test("without --app, status, list and audit show hotpatch.json's app; --app another; --all-apps every app")
    func defaultApp() throws {
        let w = try workspace()
        for command in ["status", "list", "audit"] {
            #expect(apps(try w.json([command])) == ["demo"], "\(command)")
            #expect(apps(try w.json([command, "--app", "other"])) == ["other"], "\(command) --app other")
            #expect(apps(try w.json([command, "--all-apps"])) == ["demo", "other"], "\(command) --all-apps")
            let both = try w.run([command, "--app", "other", "--all-apps"])
            #expect(both.status == 64 && both.stderr.contains("give --app NAME or --all-apps, not both"), "\(command): \(both.stderr)")
            #expect(try w.run([command, "--help"], local: false).stdout.contains("--all-apps"), "\(command) --help")
        }
        // Without hotpatch.json there is nothing to default to: every app, as before.
        try FileManager.default.removeItem(atPath: w.path("hotpatch.json"))
        #expect(apps(try w.json(["status"])) == ["demo", "other"])
        #expect(apps(try w.json(["list"])) == ["demo", "other"])
    }

    @Test("status names each halted patch: offered to no device, kept by the devices that installed it until a newer patch or a revoke")
    func haltedPatches() throws {
        let w = try workspace()
        #expect(try w.run(["publish", "--app", "demo", "--app-version", "2.3", "--rollout", "0", try w.write("b.js", "b()")]).status == 0)
        let text = try w.run(["status"])
        #expect(text.status == 0)
        #expect(text.stdout.contains("halted: 2.3 production patch 2 (rollout 0 %) is offered to no device; devices that installed it keep it until a newer patch reaches them or it is revoked (0 devices reported installing it)"), "\(text.stdout)")
        let demo = try #require(try w.json(["status"])["apps"]?.arrayValue?.first)
        #expect(demo["halted"] == .array([["appVersion": "2.3", "channel": "production", "patch": 2, "rollout": 0,
                                          "installedDevices": 0, "rolledBackDevices": 0]]))
        // Resumed, it is live again and no longer named.
        #expect(try w.run(["rollout", "--app", "demo", "--app-version", "2.3", "--patch", "2", "--rollout", "50"]).status == 0)
        #expect(try !w.run(["status"]).stdout.contains("halted:"))
        #expect(try w.json(["status"])["apps"]?.arrayValue?.first?["halted"] == .array([]))
    }
}
