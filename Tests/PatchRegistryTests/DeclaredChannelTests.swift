import Foundation
import PatchPush
import Testing
import PatchCore
import PatchSigning
@testable import PatchRegistry
import HotpatchTestSupport

/// Declared channels (issue 42): a mistyped channel is refused with nothing changed and a
/// suggestion, instead of becoming a channel no device follows.
@Suite("Declared channels")
struct DeclaredChannelTests {
    let v23 = try! AppVersion("2.3")
    let staging = try! ChannelName("staging")
    let typo = try! ChannelName("stagign")

    /// An app with staging declared, production patch 1 and staging patch 2.
    func fixture() throws -> (TempRegistry, AppName) {
        let t = try TempRegistry()
        let app = try t.app("demo", channels: ["staging"])
        try t.publish(app, "2.3", "prod()")
        _ = try t.registry.publish(app: app, appVersion: v23, bundle: Array("qa()".utf8), channel: staging, actor: t.actor)
        return (t, app)
    }

    /// `body` is refused as an undeclared channel: notFound (HTTP 404, patchctl exit 2), naming
    /// the channel typed and the one meant.
    func refusedAsUndeclared(_ what: String, typed: String = "stagign", meant: String = "staging", _ body: () throws -> Void) {
        let error = #expect(throws: RegistryError.self, "\(what)") { try body() }
        guard case .notFound(let message)? = error else { Issue.record("\(what): \(String(describing: error))"); return }
        #expect(message.contains("app demo has no channel \"\(typed)\"; did you mean \"\(meant)\"?"), "\(what): \(message)")
        #expect(message.contains("patchctl channels create NAME") && message.contains("--new-channel"), "\(what): \(message)")
    }

    @Test("every operation that names a channel refuses an undeclared one: nothing written, no audit event, no metadata version")
    func everyOperationRefuses() throws {
        let (t, app) = try fixture()
        let key = try SigningKey.generateEd25519()
        let before = try t.snapshot()
        let events = try t.registry.auditEvents(app: nil).count
        let targets = try t.registry.latestMetadata(app: app, role: .targets).version
        refusedAsUndeclared("publish") {
            _ = try t.registry.publish(app: app, appVersion: v23, bundle: Array("x()".utf8), channel: typo, actor: t.actor)
        }
        refusedAsUndeclared("publish --dry-run") {
            _ = try t.registry.publish(app: app, appVersion: v23, bundle: Array("x()".utf8), channel: typo, dryRun: true, actor: t.actor)
        }
        refusedAsUndeclared("promote --from") {
            _ = try t.registry.promote(app: app, appVersion: v23, from: typo, to: .production, actor: t.actor)
        }
        refusedAsUndeclared("promote --to") {
            _ = try t.registry.promote(app: app, appVersion: v23, from: .production, to: typo, actor: t.actor)
        }
        refusedAsUndeclared("promote --to prodution", typed: "prodution", meant: "production") {
            _ = try t.registry.promote(app: app, appVersion: v23, from: staging, to: try ChannelName("prodution"), actor: t.actor)
        }
        refusedAsUndeclared("rollback --to") {
            _ = try t.registry.rollBack(app: app, appVersion: v23, channel: typo, to: 2, actor: t.actor)
        }
        refusedAsUndeclared("revoke of a channel") {
            _ = try t.registry.revoke(app: app, appVersion: v23, channel: typo, number: nil, actor: t.actor)
        }
        refusedAsUndeclared("revoke of a patch with a channel") {
            _ = try t.registry.revoke(app: app, appVersion: v23, channel: typo, number: 2, actor: t.actor)
        }
        refusedAsUndeclared("guard set") {
            _ = try t.registry.setGuard(app: app, channel: typo, maxRollbackPPM: 20_000, minDevices: 50, action: .halt, actor: t.actor)
        }
        refusedAsUndeclared("guard remove") { _ = try t.registry.removeGuard(app: app, channel: typo, actor: t.actor) }
        refusedAsUndeclared("keys delegate") {
            _ = try t.registry.delegate(app: app, channel: typo, role: "qa", keys: [key.tufKey], signingKeys: [key], actor: t.actor)
        }
        refusedAsUndeclared("keys undelegate") { _ = try t.registry.undelegate(app: app, channel: typo, actor: t.actor) }
        refusedAsUndeclared("a push round's audience") { _ = try t.registry.pushDevices(app: app, appVersion: v23, channel: typo) }
        refusedAsUndeclared("a push round's record") {
            _ = try t.registry.recordPush(app: app, appVersion: v23, channel: typo, timestampVersion: 1, reason: "publish",
                                          summary: PushSummary(), actor: t.actor)
        }
        refusedAsUndeclared("what a channel serves") { _ = try t.registry.serving(app: app, appVersion: v23, channel: typo) }
        #expect(try t.snapshot() == before)
        #expect(try t.registry.auditEvents(app: nil).count == events)
        #expect(try t.registry.latestMetadata(app: app, role: .targets).version == targets)
        #expect(try t.registry.channels(app: app) == [.production, staging])
        // The same operations on the declared channel go through.
        #expect(try t.registry.serving(app: app, appVersion: v23, channel: staging).newestLive == 2)
        #expect(try t.registry.promote(app: app, appVersion: v23, from: staging, to: .production, actor: t.actor).patch.number == 3)
    }

    @Test("a name far from every declared channel lists them instead of guessing; an unknown app is still an unknown app")
    func noGuess() throws {
        let (t, app) = try fixture()
        let error = #expect(throws: RegistryError.self) {
            try t.registry.publish(app: app, appVersion: v23, bundle: Array("x()".utf8), channel: try ChannelName("qa"), actor: t.actor)
        }
        guard case .notFound(let message)? = error else { Issue.record("\(String(describing: error))"); return }
        #expect(message.contains("app demo has no channel \"qa\" (its channels: production, staging)") && !message.contains("did you mean"), "\(message)")
        let unknown = #expect(throws: RegistryError.self) {
            try t.registry.publish(app: try AppName("dmeo"), appVersion: v23, bundle: Array("x()".utf8), channel: typo, actor: t.actor)
        }
        #expect(unknown?.description.contains("unknown app \"dmeo\"") == true, "\(String(describing: unknown))")
    }

    @Test("declaring a channel is audited as channel.create once; again is false and writes nothing; production comes with every app")
    func declare() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        #expect(try t.registry.channels(app: app) == [.production])
        let events = try t.registry.auditEvents(app: app).count
        #expect(try t.registry.declareChannel(app: app, channel: staging, actor: t.actor))
        let event = try #require(try t.registry.auditEvents(app: app).last)
        #expect(event.action == "channel.create" && event.details["channel"]?.stringValue == "staging" && event.actor == t.actor.name)
        let after = try t.snapshot()
        #expect(try !t.registry.declareChannel(app: app, channel: staging, actor: t.actor))
        #expect(try !t.registry.declareChannel(app: app, channel: .production, actor: t.actor))
        #expect(try t.snapshot() == after)
        #expect(try t.registry.auditEvents(app: app).count == events + 1)
        #expect(try t.registry.channels(app: app) == [.production, staging])
        #expect(throws: RegistryError.self) { try t.registry.declareChannel(app: try AppName("nope"), channel: staging, actor: t.actor) }
        #expect(throws: RegistryError.self) { try t.registry.channels(app: try AppName("nope")) }
        #expect(try t.registry.verifyAudit() == .intact(events: events + 1, head: try #require(try t.registry.auditEvents(app: nil).last?.hash)))
    }

    @Test("publish with newChannel declares the channel in the publish's transaction: both land, or (refused, dry run) neither")
    func publishNewChannel() throws {
        let (t, app) = try fixture()
        let beta = try ChannelName("beta")
        let before = try t.snapshot()
        // Refused inside the transaction, after the declaration: it goes with the publish.
        #expect(throws: RegistryError.self) {
            try t.registry.publish(app: app, appVersion: v23, bundle: Array("b()".utf8), channel: beta, newChannel: true, expectLive: 7, actor: t.actor)
        }
        let would = try t.registry.publish(app: app, appVersion: v23, bundle: Array("b()".utf8), channel: beta, newChannel: true, dryRun: true, actor: t.actor)
        #expect(would.patch.channel == beta)
        #expect(try t.snapshot() == before && t.registry.channels(app: app) == [.production, staging])
        let published = try t.registry.publish(app: app, appVersion: v23, bundle: Array("b()".utf8), channel: beta, newChannel: true, actor: t.actor).patch
        #expect(published.channel == beta && published.number == 3)
        #expect(try t.registry.channels(app: app) == [.production, beta, staging])
        #expect(try t.registry.auditEvents(app: app).map(\.action).suffix(2) == ["channel.create", "patch.publish"])
        // A retried job with the flag on a channel that now exists just publishes.
        let again = try t.registry.publish(app: app, appVersion: v23, bundle: Array("c()".utf8), channel: beta, newChannel: true, actor: t.actor).patch
        #expect(try again.number == 4 && t.registry.auditEvents(app: app).map(\.action).suffix(2) == ["patch.publish", "patch.publish"])
    }

    @Test("a registry from before declared channels opens with production and every channel it used: patches, guards, delegations; a new app gets production")
    func upgrade() throws {
        let t = try TempRegistry()
        let app = try t.app("demo", channels: ["staging", "beta", "rc", "unused"])
        let quiet = try t.app("quiet")
        try t.publish(app, "2.3", "prod()")
        _ = try t.registry.publish(app: app, appVersion: v23, bundle: Array("qa()".utf8), channel: staging, actor: t.actor)
        try t.registry.setGuard(app: app, channel: try ChannelName("beta"), maxRollbackPPM: 20_000, minDevices: 50, action: .halt, actor: t.actor)
        let rc = try SigningKey.generateEd25519()
        try t.registry.delegate(app: app, channel: try ChannelName("rc"), role: "rc", keys: [rc.tufKey], signingKeys: [rc], actor: t.actor)
        let before = try t.snapshot()
        // What the previous hotpatch left: the same schema without the channels table.
        try t.registry.db.execute("DROP TABLE channels")
        let reopened = try TestBackend.registry(dataDirectory: t.root.appendingPathComponent("data"), keysDirectory: t.root.appendingPathComponent("keys"))
        #expect(try reopened.channels(app: app).map(\.rawValue) == ["production", "beta", "rc", "staging"], "\"unused\" had nothing: not declared again")
        #expect(try reopened.channels(app: quiet) == [.production])
        #expect(try t.snapshot() == before, "the upgrade audits nothing and signs nothing")
        // It works unchanged, and refuses what it never had.
        #expect(try reopened.publish(app: app, appVersion: v23, bundle: Array("qa2()".utf8), channel: staging, actor: t.actor).patch.number == 3)
        #expect(throws: RegistryError.self) {
            try reopened.publish(app: app, appVersion: v23, bundle: Array("x()".utf8), channel: typo, actor: t.actor)
        }
        // Opening again adds nothing.
        let third = try TestBackend.registry(dataDirectory: t.root.appendingPathComponent("data"), keysDirectory: t.root.appendingPathComponent("keys"))
        #expect(try third.channels(app: app).count == 4)
    }

    @Test("SQLite: an upgrade killed between creating the table and filling it (an empty table) is filled on the next open")
    func upgradeInterrupted() throws {
        // PostgreSQL creates and fills the table in the schema script's one transaction.
        guard !TestBackend.isPostgres else { return }
        let t = try TempRegistry()
        let app = try t.app("demo", channels: ["staging"])
        _ = try t.registry.publish(app: app, appVersion: v23, bundle: Array("qa()".utf8), channel: staging, actor: t.actor)
        try t.registry.db.execute("DELETE FROM channels")
        let reopened = try TestBackend.registry(dataDirectory: t.root.appendingPathComponent("data"), keysDirectory: t.root.appendingPathComponent("keys"))
        #expect(try reopened.channels(app: app) == [.production, staging])
    }

    @Test("a pending publish's stored form keeps newChannel; one stored before the flag reads as false")
    func storedForm() throws {
        let change = ReleaseChange(PublishOperation(appVersion: v23, channel: staging, rollout: 50, newChannel: true, bundle: Array("a()".utf8)))
        #expect(change.json["newChannel"] == .bool(true))
        #expect(try ReleaseChange(json: change.json, bundle: Array("a()".utf8)) == change)
        var old = change.json.objectValue ?? [:]
        old["newChannel"] = nil
        guard case .operation(let kind, let values) = try ReleaseChange(json: .object(old), bundle: Array("a()".utf8)) else {
            Issue.record("not an operation"); return
        }
        #expect(try kind == "publish" && !PublishOperation(values).newChannel)
        let plain = ReleaseChange(PublishOperation(appVersion: v23, channel: staging, rollout: 50, bundle: Array("a()".utf8)))
        #expect(plain.json["newChannel"] == nil, "written only when set: what older code stored and reads")
    }
}

extension TwoPersonRuleTests {
    @Test("a pending publish with newChannel declares nothing until approved; the approval declares it with the publish")
    func pendingNewChannel() throws {
        let (t, app, alice, bob) = try twoPerson()
        let beta = try ChannelName("beta")
        let pending = try pendingChange { () throws(RegistryError) in
            try Registry.signing(with: [alice]) { () throws(RegistryError) in
                try t.registry.publish(app: app, appVersion: v23, bundle: Array("b()".utf8), channel: beta, newChannel: true, actor: t.actor)
            }
        }
        #expect(pending.change.summary.contains("(a new channel)"))
        #expect(try t.registry.channels(app: app) == [.production])
        let landed = try t.registry.approve(app: app, id: pending.id, keys: [bob], actor: Actor("bob@test"))
        #expect(landed.result?["channel"]?.stringValue == "beta")
        #expect(try t.registry.channels(app: app) == [.production, beta])
        #expect(try t.registry.auditEvents(app: app).map(\.action).suffix(3) == ["channel.create", "patch.publish", "change.approve"])
    }

    @Test("the upgrade declares the channels of changes still waiting for signatures, so approving them works as before")
    func upgradeKeepsPendingChannels() throws {
        let (t, app, alice, bob) = try twoPerson()
        let beta = try ChannelName("beta")
        try t.registry.declareChannel(app: app, channel: beta, actor: t.actor)
        let pending = try pendingChange { () throws(RegistryError) in
            try Registry.signing(with: [alice]) { () throws(RegistryError) in
                try t.registry.publish(app: app, appVersion: v23, bundle: Array("b()".utf8), channel: beta, actor: t.actor)
            }
        }
        try t.registry.db.execute("DROP TABLE channels")
        let reopened = try TestBackend.registry(dataDirectory: t.root.appendingPathComponent("data"), keysDirectory: t.root.appendingPathComponent("keys"))
        #expect(try reopened.channels(app: app) == [.production, beta])
        #expect(try reopened.approve(app: app, id: pending.id, keys: [bob], actor: Actor("bob@test")).result?["channel"]?.stringValue == "beta")
    }
}
