import Foundation
import Testing
import PatchCore

/// The two-person rule through the binary: keys made per person, the rule set at creation,
/// a publish that waits (exit 3) and lands with the second key (issue 24).
@Suite("patchctl two-person rule")
struct TwoPersonCLITests {
    @Test("keys generate ×2, apps create --targets-key ×2, approve ×2; publish --key-file exits 3 pending, pending lists it, approve lands it, verify passes")
    func releaseNeedsTwo() throws {
        let w = try Workspace()
        for person in ["alice", "bob"] {
            let made = try w.run(["keys", "generate", "--out", w.path("people/\(person).pem")], local: false)
            #expect(made.status == 0, "\(made.stderr)")
        }
        #expect(try w.run(["keys", "generate", "--out", w.path("people/alice.pem")], local: false).status == 2, "never overwrites a key")
        let created = try w.run(["apps", "create", "demo", "--targets-key", w.path("people/alice.pem.pub.json"),
                                 "--targets-key", w.path("people/bob.pem.pub.json"), "--json"])
        #expect(created.status == 0, "\(created.stderr)")
        let rule = try JSONParser.parse(Array(created.stdout.utf8))["pending"]
        #expect(rule?["threshold"]?.intValue == 2 && rule?["keyids"]?.arrayValue?.count == 2 && rule?["id"]?.intValue == 1)
        #expect(try w.run(["approve", "--app", "demo", "1", "--key-file", w.path("people/alice.pem")]).status == 3)
        #expect(try w.run(["approve", "--app", "demo", "1", "--key-file", w.path("people/bob.pem")]).status == 0)
        let bundle = try w.write("main.js", "fix()")
        let proposed = try w.run(["publish", "--app", "demo", "--app-version", "2.3", "--key-file", w.path("people/alice.pem"), bundle])
        #expect(proposed.status == 3 && proposed.stdout.contains("1 of 2 signatures") && proposed.stdout.contains("patchctl approve --app demo 2"),
                "\(proposed.stdout) \(proposed.stderr)")
        #expect(try w.run(["list", "--app", "demo", "--json"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "[]")
        let status = try w.run(["status", "--app", "demo"]).stdout
        #expect(status.contains("waiting for signatures: change 2 (publish a 5-byte bundle to 2.3 production at 100 %), 1 of 2 targets signatures"), "\(status)")
        let listed = try w.run(["pending", "--app", "demo"])
        #expect(listed.stdout.contains("change 2 [pending] publish") && listed.stdout.contains("2.3/1/main.js"), "\(listed.stdout)")
        let again = try w.run(["approve", "--app", "demo", "2", "--key-file", w.path("people/alice.pem")])
        #expect(again.status == 2 && again.stderr.contains("already signed"))
        let landed = try w.run(["approve", "--app", "demo", "2", "--key-file", w.path("people/bob.pem"), "--json"])
        #expect(landed.status == 0, "\(landed.stderr)")
        #expect(try JSONParser.parse(Array(landed.stdout.utf8))["result"]?["patch"]?.intValue == 1)
        try w.write("root.json", try w.run(["apps", "root", "demo"]).stdout)
        #expect(try w.run(["export", "--app", "demo", "--out", w.path("out")]).status == 0)
        let verified = try w.run(["verify", "--repo", w.path("out"), "--root", w.path("root.json")], local: false)
        #expect(verified.status == 0 && verified.stdout.contains("2.3/1/main.js"), "\(verified.stderr)")
        let audit = try w.run(["audit", "--app", "demo"]).stdout
        #expect(audit.contains("change.propose") && audit.contains("change.approve") && audit.contains("key.targets"))
    }
}
