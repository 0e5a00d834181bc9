import Foundation
import Testing
import PatchCore
import PatchSigning
@testable import PatchRegistry

/// A publish to the versions meant, and only those (issue 44): a list or range is one change to
/// each version it names now, the versions devices ask for are counted and kept 30 days, and a
/// version no device asks for is said (or refused with `strictVersion`). On SQLite and, with
/// HOTPATCH_TEST_REGISTRY=postgres, on PostgreSQL.
@Suite("Publishing to several versions")
struct VersionPublishTests {
    let bundle = Array("fix()".utf8)
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func v(_ name: String) throws -> AppVersion { try AppVersion(name) }

    /// demo with a patch for 2.2 and devices asking for 2.3, 2.3.1, 2.3.2 (and 2.4, most).
    func fleet() throws -> (TempRegistry, AppName) {
        let t = try TempRegistry()
        let app = try t.app("demo")
        try t.publish(app, "2.2", "old()", now: now)
        try t.registry.addVersionChecks([app: ["2.3": 40, "2.3.1": 30, "2.3.2": 20, "2.4": 90]], now: now)
        return (t, app)
    }

    func publish(_ t: TempRegistry, _ app: AppName, _ selector: String, strict: Bool = false, dryRun: Bool = false, confirmed: Bool = true,
                 expectLive: Int? = nil) throws -> PublishedVersions {
        try t.registry.publish(app: app, versions: try VersionSelector(selector), bundle: bundle, strictVersion: strict, expectLive: expectLive,
                               dryRun: dryRun, confirmed: confirmed, actor: t.actor, now: now)
    }

    @Test("a range publishes one patch to each version it matches, in one targets version and one audit event that lists them")
    func oneChange() async throws {
        let (t, app) = try fleet()
        let targetsBefore = try t.registry.latestMetadata(app: app, role: .targets).version
        let eventsBefore = try t.registry.auditEvents(app: app).count
        let published = try publish(t, app, "2.3.*")
        #expect(published.patches.map(\.appVersion.rawValue) == ["2.3", "2.3.1", "2.3.2"])
        #expect(published.patches.allSatisfy { $0.number == 1 && $0.channel == .production && $0.rollout == 100 })
        #expect(published.targetsVersion == targetsBefore + 1 && published.warning == nil)
        let events = try t.registry.auditEvents(app: app)
        #expect(events.count == eventsBefore + 1)
        let event = try #require(events.last)
        #expect(event.action == "patch.publish" && event.details["selector"]?.stringValue == "2.3.*")
        #expect(event.details["appVersions"]?.arrayValue?.compactMap(\.stringValue) == ["2.3", "2.3.1", "2.3.2"])
        #expect(event.details["patches"]?.arrayValue?.compactMap { $0["patch"]?.intValue } == [1, 1, 1] && event.details["appVersion"] == nil)
        // The signed layout is one target per version, as three publishes would have made it.
        let report = try await t.verify(app)
        #expect(report.ok && Set(report.targets.map(\.path)) == ["2.2/1/main.js", "2.3/1/main.js", "2.3.1/1/main.js", "2.3.2/1/main.js"])
        // status shows them together, under the event's seq.
        let status = try #require(try t.registry.status(app: app).first)
        #expect(status.together == [PatchSet(publishSeq: event.seq, channel: .production,
                                             patches: [(try v("2.3"), 1), (try v("2.3.1"), 1), (try v("2.3.2"), 1)])])
        // The answer lists the patches; a publish to one version answers as it always did.
        let json = published.json
        #expect(json["appVersions"]?.arrayValue?.count == 3 && json["patches"]?.arrayValue?.count == 3 && json["patch"] == nil)
        let single = try publish(t, app, "2.4").json
        #expect(single["patch"]?.intValue == 1 && single["appVersions"] == nil && single["selector"] == nil && single["versionWarning"] == nil)
    }

    @Test("ranges expand against versions with patches and versions devices asked for; a list is taken as given")
    func expansionSource() throws {
        let (t, app) = try fleet()
        #expect(try t.registry.knownVersions(app: app, now: now).map(\.rawValue) == ["2.2", "2.3", "2.3.1", "2.3.2", "2.4"])
        #expect(try publish(t, app, "<2.3.1", dryRun: true).patches.map(\.appVersion.rawValue) == ["2.2", "2.3"])
        #expect(try publish(t, app, "2.5,2.3", dryRun: true).patches.map(\.appVersion.rawValue) == ["2.3", "2.5"])
        // Checks older than the window no longer count.
        let later = now.addingTimeInterval(31 * 86_400)
        #expect(try t.registry.knownVersions(app: app, now: later).map(\.rawValue) == ["2.2"])
    }

    @Test("an empty expansion, a malformed selector or an expectPatch one of the versions does not serve is refused and changes nothing")
    func refusals() throws {
        let (t, app) = try fleet()
        let before = try t.snapshot()
        #expect {
            _ = try publish(t, app, ">=3")
        } throws: { error in
            guard case RegistryError.notFound(let message) = error else { return false }
            return message.contains(">=3 matches no version of demo") && message.contains("2.4") && message.contains("Nothing was published")
        }
        #expect {
            _ = try PublishOperation(OperationValues(["appVersion": "~2.3"], bundle: bundle))
        } throws: { error in
            guard case RegistryError.invalidCall(let message) = error else { return false }
            return message.hasPrefix("invalid app version selector \"~2.3\"")
        }
        // expectPatch holds for each version: none of 2.3.* serves patch 1.
        #expect {
            _ = try publish(t, app, "2.3.*", expectLive: 1)
        } throws: { error in
            guard case RegistryError.conflict(let message) = error else { return false }
            return message.contains("demo 2.3 production serves no patch now, not patch 1")
        }
        #expect(try t.snapshot() == before)
        #expect(try publish(t, app, "2.3.*", dryRun: true, expectLive: 0).patches.count == 3)
    }

    @Test("several versions need confirming (the refusal names them); a dry run shows them without, and keeps nothing")
    func confirmation() throws {
        let (t, app) = try fleet()
        let before = try t.snapshot()
        #expect {
            _ = try publish(t, app, "2.3.*", confirmed: false)
        } throws: { error in
            guard case RegistryError.unconfirmed(let message) = error else { return false }
            return message == "publishing to 3 versions of demo (2.3, 2.3.1 and 2.3.2: what 2.3.* names now) makes one patch for each in one change"
        }
        let dry = try publish(t, app, "2.3.*", dryRun: true, confirmed: false)
        #expect(dry.patches.map(\.appVersion.rawValue) == ["2.3", "2.3.1", "2.3.2"])
        #expect(try t.snapshot() == before)
        // One exact version needs no confirming: the publish of today.
        #expect(try publish(t, app, "2.3", confirmed: false).patches.count == 1)
    }

    @Test("a version no device asks for is warned of with what they do ask for; strictVersion refuses it and changes nothing")
    func warningAndStrict() throws {
        let (t, app) = try fleet()
        let warned = try publish(t, app, "2.3.0")
        #expect(warned.json["versionWarning"]?.stringValue?.hasPrefix("devices ask for 2.4, 2.3, 2.3.1 and 2.3.2, none for 2.3.0 (2.3 and 2.3.0") == true)
        let before = try t.snapshot()
        #expect {
            _ = try publish(t, app, "2.3.1,2.5", strict: true)
        } throws: { error in
            guard case RegistryError.conflict(let message) = error else { return false }
            return message.hasSuffix("none for 2.5: nothing was published (--strict-version)")
        }
        #expect(try t.snapshot() == before)
        #expect(try publish(t, app, "2.3.1", strict: true).warning == nil)
        // An app no device has checked: no warning, unless strict.
        let fresh = try t.app("fresh")
        #expect(try t.registry.publish(app: fresh, versions: try VersionSelector("1.0"), bundle: bundle, actor: t.actor, now: now).warning == nil)
        #expect(throws: RegistryError.self) {
            _ = try t.registry.publish(app: fresh, versions: try VersionSelector("1.1"), bundle: bundle, strictVersion: true, actor: t.actor, now: now)
        }
    }

    @Test("bytes live in one of the versions refuse the whole publish: nothing of it lands")
    func sameBytesRefuseAll() throws {
        let (t, app) = try fleet()
        _ = try publish(t, app, "2.3.1")
        let before = try t.snapshot()
        #expect(throws: RegistryError.self) { _ = try publish(t, app, "2.3.*") }
        #expect(try t.snapshot() == before)
    }

    @Test("an encrypted app seals each version under its own number")
    func encrypted() async throws {
        let t = try TempRegistry()
        let app = try t.app("sealed", encrypted: true)
        let published = try t.registry.publish(app: app, versions: try VersionSelector("2.3,2.3.1"), bundle: bundle, actor: t.actor, now: now)
        #expect(Set(published.patches.map(\.served.sha256)).count == 2)
        let report = try await t.verify(app, contentKey: try t.registry.keys.contentKey(app: app))
        #expect(report.ok && report.targets.count == 2 && report.targets.allSatisfy { $0.plaintextChecked })
    }

    @Test("checks add up per day, the least asked go past 512 versions a day, days past 30 are pruned; askedVersions sums, most asked first")
    func counting() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        try t.registry.addVersionChecks([app: ["2.3": 5, "2.4": 1]], now: now)
        // A second instance's counts add to the same rows; an unknown app is skipped.
        try t.registry.addVersionChecks([app: ["2.3": 7], try AppName("ghost"): ["1.0": 3]], now: now)
        try t.registry.addVersionChecks([app: ["2.4": 20]], now: now.addingTimeInterval(86_400))
        let asked = try t.registry.askedVersions(app: app, now: now.addingTimeInterval(86_400))
        #expect(asked.map(\.appVersion.rawValue) == ["2.4", "2.3"] && asked.map(\.checks) == [21, 12])
        #expect(asked.first?.lastDay == Registry.day(now.addingTimeInterval(86_400)) && asked.last?.lastDay == Registry.day(now))
        // Made-up versions, one check each, beside the fleet's: the day keeps 512, 2.3 among them.
        var junk: [String: Int] = [:]
        for i in 0..<600 { junk["9.\(i)"] = 1 }
        try t.registry.addVersionChecks([app: junk], now: now)
        let rows = try t.registry.db.query("SELECT count(*) FROM version_checks WHERE app = 'demo' AND day = ?", [.text(Registry.day(now))]) { $0.int(0) }.first
        #expect(rows == Int64(Registry.maxAskedVersionsPerDay))
        #expect(try t.registry.askedVersions(app: app, now: now).contains { $0.appVersion.rawValue == "2.3" && $0.checks == 12 })
        #expect(try t.registry.pruneVersionChecks(now: now.addingTimeInterval(31 * 86_400)) == Registry.maxAskedVersionsPerDay)
        #expect(try t.registry.askedVersions(app: app, now: now.addingTimeInterval(31 * 86_400)).map(\.checks) == [20])
        #expect(try t.registry.establishedVersions(app: app, limit: 5, now: now.addingTimeInterval(31 * 86_400)) == ["2.4"])
    }
}

extension TwoPersonRuleTests {
    @Test("a publish to several versions waits as the expanded list, round-trips the pending store, and lands as one change when approved")
    func severalVersionsWait() async throws {
        let (t, app, alice, bob) = try twoPerson(encrypted: true)
        try t.registry.addVersionChecks([app: ["2.3": 3, "2.3.1": 2]])
        let selector = try VersionSelector("2.3.*")
        let pending = try pendingChange { () throws(RegistryError) in
            try Registry.signing(with: [alice]) { () throws(RegistryError) in
                try t.registry.publish(app: app, versions: selector, bundle: Array("fix()".utf8), actor: Actor("alice@test"))
            }
        }
        // Stored as the versions it makes, not the range: approving it later makes exactly these.
        guard case .operation(let kind, let values) = pending.change else { Issue.record("not an operation"); return }
        #expect(kind == "publish" && values["appVersion"] == "2.3,2.3.1")
        let stored = try ReleaseChange(json: pending.change.json, bundle: pending.change.bundle)
        #expect(stored == pending.change && pending.change.summary.contains("versions 2.3,2.3.1"))
        #expect(try t.registry.pendingChanges(app: app).first?.change == pending.change)
        // A version devices start asking for meanwhile changes nothing of it.
        try t.registry.addVersionChecks([app: ["2.3.2": 9]])
        let approval = try t.registry.approve(app: app, id: pending.id, keys: [bob], actor: Actor("bob@test"))
        #expect(approval.result?["appVersions"]?.arrayValue?.compactMap(\.stringValue) == ["2.3", "2.3.1"])
        let patches = try t.registry.patches(app: app, appVersion: nil, activeOnly: true)
        #expect(patches.map(\.appVersion.rawValue) == ["2.3", "2.3.1"])
        // Each version serves the ciphertext its signers signed the hash of.
        let signed = pending.request.signed["targets"]
        for patch in patches { #expect(signed?[patch.targetPath]?["hashes"]?["sha256"]?.stringValue == patch.served.sha256) }
        let report = try await t.verify(app, contentKey: try t.registry.keys.contentKey(app: app))
        #expect(report.ok && report.targets.count == 2)
        #expect(try t.registry.auditEvents(app: app).filter { $0.action == "patch.publish" }.count == 1)
    }
}
