import Foundation
import PatchCore
import Testing

@Suite("patchctl status, rollback, list's delivery and the now-serves line")
struct StatusRollbackTests {
    /// demo 2.3: patch 1 and 2 at 100 %, patch 3 at 25 %; demo 2.4: patch 1 at 0 %.
    func workspace() throws -> Workspace {
        let w = try Workspace()
        #expect(try w.run(["apps", "create", "demo"]).status == 0)
        for (version, text, rollout) in [("2.3", "one()", "100"), ("2.3", "two()", "100"), ("2.3", "three()", "25"), ("2.4", "four()", "0")] {
            let published = try w.run(["publish", "--app", "demo", "--app-version", version, "--rollout", rollout, try w.write("b.js", text)])
            #expect(published.status == 0, "\(published.stderr)")
        }
        return w
    }

    @Test("status shows the split per version and each role's version and expiry, as text and JSON")
    func status() throws {
        let w = try workspace()
        let text = try w.run(["status"])
        #expect(text.status == 0)
        #expect(text.stdout.contains("VERSION  CHANNEL     DEVICES GET NOW"), "\(text.stdout)")
        #expect(text.stdout.contains("2.3      production  patch 3 → 25 %, patch 2 → 75 %"))
        #expect(text.stdout.contains("2.4      production  none → 100 %"))
        #expect(text.stdout.contains("timestamp  ") && text.stdout.contains("in 23 h"))
        let json = try w.json(["status", "--app", "demo"])
        let demo = try #require(json["apps"]?.arrayValue?.first)
        #expect(demo["metadata"]?["targets"]?["version"]?.intValue == 5)
        let served = demo["versions"]?.arrayValue?.first?["served"]?.arrayValue?.map { [$0["patch"]?.intValue ?? 0, $0["basisPoints"]?.intValue ?? 0] }
        #expect(served == [[3, 2500], [2, 7500]])
        let unknown = try w.run(["status", "--app", "nope"])
        #expect(unknown.status == 2 && unknown.stderr.contains("nope"))
    }

    @Test("list shows live, superseded, halted and revoked; --active lists only what is served now (live)")
    func listDelivery() throws {
        let w = try workspace()
        #expect(try w.run(["revoke", "--app", "demo", "--app-version", "2.3", "--patch", "3"]).status == 0)
        let listed = try w.json(["list"]).arrayValue?.map { "\($0["appVersion"]?.stringValue ?? "")/\($0["patch"]?.intValue ?? 0) \($0["delivery"]?.stringValue ?? "")" }
        #expect(listed == ["2.3/1 superseded", "2.3/2 live", "2.3/3 revoked", "2.4/1 halted"])
        let active = try w.json(["list", "--active"]).arrayValue?.map { "\($0["appVersion"]?.stringValue ?? "")/\($0["patch"]?.intValue ?? 0) \($0["delivery"]?.stringValue ?? "")" }
        #expect(active == ["2.3/2 live"], "superseded 2.3/1 and halted 2.4/1 are not revoked, but no device is offered them")
        #expect(try w.run(["list", "--active", "--app", "demo"]).stdout.contains("2.3      production  2      100%     active  live"))
        let table = try w.run(["list"]).stdout
        #expect(table.contains("DELIVERY") && table.contains("superseded"))
        #expect(try w.run(["revoke", "--app", "demo", "--app-version", "2.3", "--patch", "2"]).status == 0)
        #expect(try w.run(["revoke", "--app", "demo", "--app-version", "2.3", "--patch", "1"]).status == 0)
        #expect(try w.run(["list", "--active"]).stdout == "no patches served now\n")
    }

    @Test("rollback revokes the newest live patch and prints what devices get now; with nothing live it refuses")
    func rollback() throws {
        let w = try workspace()
        let first = try w.run(["rollback", "--app", "demo", "--app-version", "2.3"])
        #expect(first.status == 0)
        #expect(first.stdout == "revoked demo 2.3 patch 3 (production)\ndemo 2.3 now serves: patch 2 → 100 %\n")
        // The superseded patch 1 is live again once patch 2 goes.
        let second = try w.json(["rollback", "--app", "demo", "--app-version", "2.3"])
        #expect(second["revoked"]?["patch"]?.intValue == 2 && second["revoked"]?["state"]?.stringValue == "revoked")
        #expect(second["now"]?["served"]?.arrayValue?.first?["patch"]?.intValue == 1)
        // A third (a retried job) would leave 2.3 with no patch: refused, nothing changed.
        let before = try w.json(["audit"])["events"]?.arrayValue?.count
        let third = try w.run(["rollback", "--app", "demo", "--app-version", "2.3"])
        #expect(third.status == 2 && third.stderr.contains("would leave production with no patch") && third.stderr.contains("patchctl revoke"), "\(third.stderr)")
        #expect(try w.json(["audit"])["events"]?.arrayValue?.count == before)
        // 2.4 has only a halted patch: nothing to roll back, nothing changed.
        let events = try w.json(["audit"])["events"]?.arrayValue?.count
        let none = try w.run(["rollback", "--app", "demo", "--app-version", "2.4"])
        #expect(none.status == 2 && none.stderr.contains("no live patch"))
        #expect(try w.json(["audit"])["events"]?.arrayValue?.count == events)
        #expect(try w.run(["rollback", "--help"], local: false).stdout.contains("Usage: patchctl rollback --app-version V [--app NAME]"))
        for command in ["status", "rollback"] {
            #expect(try w.run(["help", command], local: false).stdout == (try w.run([command, "--help"], local: false).stdout))
        }
    }

    @Test("revoke and rollout end with the same now-serves line; a dry run does not")
    func nowServed() throws {
        let w = try workspace()
        let rollout = try w.run(["rollout", "--app", "demo", "--app-version", "2.3", "--patch", "3", "--rollout", "50"])
        #expect(rollout.stdout.hasSuffix("demo 2.3 now serves: patch 3 → 50 %, patch 2 → 50 %\n"))
        let revoke = try w.run(["revoke", "--app", "demo", "--app-version", "2.3", "--patch", "2"])
        #expect(revoke.stdout == "revoked demo 2.3 patch 2 (production)\ndemo 2.3 now serves: patch 3 → 50 %, patch 1 → 50 %\n")
        let dry = try w.run(["revoke", "--app", "demo", "--app-version", "2.3", "--dry-run"])
        #expect(dry.status == 0 && !dry.stdout.contains("now serves"))
    }
}
