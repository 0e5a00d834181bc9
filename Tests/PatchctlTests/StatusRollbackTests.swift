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
        #expect(try w.run(["revoke", "--app", "demo", "--app-version", "2.3", "--patch", "1", "--yes"]).status == 0)
        #expect(try w.run(["list", "--active"]).stdout == "no patches served now\n")
    }

    @Test("rollback revokes the newest release and prints what devices get now; one that would leave nothing is refused")
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
        // 2.4 has only a halted patch: undoing it would leave nothing, refused, nothing changed.
        let events = try w.json(["audit"])["events"]?.arrayValue?.count
        let none = try w.run(["rollback", "--app", "demo", "--app-version", "2.4"])
        #expect(none.status == 2 && none.stderr.contains("rolling back demo 2.4 patch 1 would leave production with no patch"), "\(none.stderr)")
        #expect(try w.json(["audit"])["events"]?.arrayValue?.count == events)
        #expect(try w.run(["rollback", "--help"], local: false).stdout.contains("Usage: patchctl rollback --app-version V [--app NAME]"))
        for command in ["status", "rollback", "halt", "resume"] {
            #expect(try w.run(["help", command], local: false).stdout == (try w.run([command, "--help"], local: false).stdout))
        }
    }

    @Test("halt, then rollback, undoes the halted patch (not a good one); run again with --expect-patch it refuses")
    func haltThenRollback() throws {
        let w = try workspace()
        #expect(try w.run(["publish", "--app", "demo", "--app-version", "2.3", "--rollout", "50", try w.write("b.js", "bad()")]).status == 0)
        let halted = try w.run(["halt", "--app", "demo", "--app-version", "2.3", "--patch", "4"])
        #expect(halted.status == 0 && halted.stdout.hasPrefix("demo 2.3 patch 4 halted: offered to no more devices (it rolled out to 50%)"), "\(halted.stdout)")
        #expect(halted.stdout.contains("devices that installed patch 4 keep it"))
        let undone = try w.json(["rollback", "--app", "demo", "--app-version", "2.3", "--expect-patch", "4"])
        #expect(undone["revoked"]?["patch"]?.intValue == 4 && undone["revoked"]?["state"]?.stringValue == "revoked")
        let listed = try w.json(["list"]).arrayValue?.map { "\($0["appVersion"]?.stringValue ?? "")/\($0["patch"]?.intValue ?? 0) \($0["state"]?.stringValue ?? "")" }
        #expect(listed?.prefix(4) == ["2.3/1 active", "2.3/2 active", "2.3/3 active", "2.3/4 revoked"])
        let events = try w.json(["audit"])["events"]?.arrayValue?.count
        let again = try w.run(["rollback", "--app", "demo", "--app-version", "2.3", "--expect-patch", "4"])
        #expect(again.status == 2 && again.stderr.contains("is patch 3, not patch 4 (--expect-patch)"), "\(again.stderr)")
        #expect(try w.json(["audit"])["events"]?.arrayValue?.count == events, "nothing changed")
        // --patch names the release; --patch with --to is a usage error, as is --rollout without --to.
        #expect(try w.run(["rollback", "--app", "demo", "--app-version", "2.3", "--patch", "2", "--to", "1"]).status == 64)
        #expect(try w.run(["rollback", "--app", "demo", "--app-version", "2.3", "--rollout", "10"]).status == 64)
        let named = try w.json(["rollback", "--app", "demo", "--app-version", "2.3", "--patch", "2"])
        #expect(named["revoked"]?["patch"]?.intValue == 2)
    }

    @Test("resume goes back to the rollout the halt found; a patch published at 0 % needs --rollout; one not halted is refused")
    func resume() throws {
        let w = try workspace()
        #expect(try w.run(["halt", "--app", "demo", "--app-version", "2.3", "--patch", "3"]).status == 0)
        let resumed = try w.json(["resume", "--app", "demo", "--app-version", "2.3", "--patch", "3"])
        #expect(resumed["rollout"]?.intValue == 25 && resumed["from"]?.intValue == 0 && resumed["changed"]?.boolValue == true)
        let notHalted = try w.run(["resume", "--app", "demo", "--app-version", "2.3", "--patch", "3"])
        #expect(notHalted.status == 2 && notHalted.stderr.contains("is not halted: it rolls out to 25 %"), "\(notHalted.stderr)")
        let neverOut = try w.run(["resume", "--app", "demo", "--app-version", "2.4", "--patch", "1"])
        #expect(neverOut.status == 64 && neverOut.stderr.contains("was published at 0 %"), "\(neverOut.stderr)")
        #expect(try w.json(["resume", "--app", "demo", "--app-version", "2.4", "--patch", "1", "--rollout", "10"])["rollout"]?.intValue == 10)
        let actions = try w.json(["audit"])["events"]?.arrayValue?.compactMap { $0["action"]?.stringValue }.suffix(3)
        #expect(actions.map(Array.init) == ["patch.halt", "patch.resume", "patch.resume"])
    }

    @Test("revoke and rollout end with the same now-serves line; a dry run does not")
    func nowServed() throws {
        let w = try workspace()
        let rollout = try w.run(["rollout", "--app", "demo", "--app-version", "2.3", "--patch", "3", "--rollout", "50"])
        #expect(rollout.stdout.hasSuffix("demo 2.3 now serves: patch 3 → 50 %, patch 2 → 50 %\n"))
        let revoke = try w.run(["revoke", "--app", "demo", "--app-version", "2.3", "--patch", "2"])
        #expect(revoke.stdout == "revoked demo 2.3 patch 2 (production)\ndemo 2.3 now serves: patch 3 → 50 %, patch 1 → 50 %\n")
        let dry = try w.run(["revoke", "--app", "demo", "--app-version", "2.3", "--all", "--dry-run"])
        #expect(dry.status == 0 && !dry.stdout.contains("now serves"))
    }

    @Test("revoke needs --patch or --all; one that would leave nothing served needs --yes off a terminal, and says what devices run then")
    func revokeNeedsAllAndYes() throws {
        let w = try workspace()
        let events = try w.json(["audit"])["events"]?.arrayValue?.count
        let bare = try w.run(["revoke", "--app", "demo", "--app-version", "2.3"])
        #expect(bare.status == 64 && bare.stderr.contains("--patch N") && bare.stderr.contains("--all"), "\(bare.stderr)")
        #expect(try w.run(["revoke", "--app", "demo", "--app-version", "2.3", "--patch", "1", "--all"]).status == 64)
        let unconfirmed = try w.run(["revoke", "--app", "demo", "--app-version", "2.3", "--all"])
        #expect(unconfirmed.status == 64 && unconfirmed.stderr.contains("would leave production serving no patch") && unconfirmed.stderr.contains("--yes"),
                "\(unconfirmed.stderr)")
        let only = try w.run(["revoke", "--app", "demo", "--app-version", "2.4", "--patch", "1"])
        #expect(only.status == 64 && only.stderr.contains("then get none → 100 %"), "\(only.stderr)")
        #expect(try w.json(["audit"])["events"]?.arrayValue?.count == events, "nothing changed")
        let done = try w.run(["revoke", "--app", "demo", "--app-version", "2.3", "--all", "--yes"])
        #expect(done.status == 0 && done.stdout.contains("demo 2.3 now serves: none → 100 %"), "\(done.stdout)")
    }
}
