import Foundation
import PatchPush
import Testing
import PatchCore
import PatchSigning
@testable import PatchRegistry
import HotpatchTestSupport

/// The registry calls the server, the CLI and the console reach only through their routes and
/// commands, tested here at the registry itself: `make test` runs the registry's suites on both
/// backends and the layers above once (on SQLite), so every statement the registry runs must be
/// run by a registry suite (`scripts/pg-statements.py` compares what the PostgreSQL pass
/// executes with what the full pass before this layout did).
@Suite("The registry's reads and writes the layers above use, on each backend")
struct StorageContractTests {
    @Test("tokens: listed per app or all in creation order, revoked once (a second revoke is a conflict), unknown ids not found; each change audited")
    func tokens() throws {
        let t = try TempRegistry()
        let demo = try t.app("demo"), other = try t.app("other")
        let ci = try t.registry.createToken(app: demo, role: .publisher, name: "ci", actor: t.actor)
        let audit = try t.registry.createToken(app: nil, role: .auditor, name: "auditor", actor: t.actor)
        _ = try t.registry.createToken(app: other, role: .publisher, name: "other-ci", actor: t.actor)
        #expect(try t.registry.tokens(scope: demo).map(\.record.id) == [ci.record.id])
        #expect(try t.registry.tokens(scope: nil).count == 3)
        #expect(try t.registry.token(presented: ci.secret)?.id == ci.record.id)

        let revoked = try t.registry.revokeToken(id: ci.record.id, actor: t.actor)
        #expect(revoked.name == "ci")
        #expect(try t.registry.token(presented: ci.secret) == nil, "a revoked token stops working at once")
        #expect(try t.registry.tokens(scope: demo).first?.revokedAt != nil)
        #expect(throws: RegistryError.self) { try t.registry.revokeToken(id: ci.record.id, actor: t.actor) }
        #expect(throws: RegistryError.self) { try t.registry.revokeToken(id: "000000000000", actor: t.actor) }
        #expect(try t.registry.token(presented: audit.secret)?.role == .auditor)
        let actions = try t.registry.auditEvents(app: demo).map(\.action)
        #expect(actions.filter { $0 == "token.create" }.count == 1 && actions.contains("token.revoke"))
    }

    /// A registry whose audit log interleaves two apps: four publishes each, alternating.
    private func twoAppsOfFourPatches() throws -> (TempRegistry, AppName) {
        let t = try TempRegistry()
        let demo = try t.app("demo"), other = try t.app("other")
        for n in 1...4 {
            try t.publish(demo, "2.3", "demo(\(n))")
            try t.publish(other, "1.0", "other(\(n))")
        }
        return (t, demo)
    }

    @Test("the audit log pages by seq, per app and across apps, and the pages join into the whole chain")
    func auditPages() throws {
        let (t, demo) = try twoAppsOfFourPatches()
        let all = try t.registry.auditEvents(app: nil)
        var paged: [AuditEvent] = [], after: Int64 = 0
        while true {
            let page = try t.registry.auditEvents(app: nil, after: after, limit: 3)
            guard let last = page.last else { break }
            #expect(page.count <= 3)
            paged += page
            after = last.seq
        }
        #expect(paged.map(\.seq) == all.map(\.seq))
        let demoPage = try t.registry.auditEvents(app: demo, after: 0, limit: 2)
        #expect(demoPage.count == 2 && demoPage.allSatisfy { $0.app == "demo" })
        let rest = try t.registry.auditEvents(app: demo, after: demoPage[1].seq)
        #expect(rest.allSatisfy { $0.app == "demo" && $0.seq > demoPage[1].seq })
        #expect(demoPage.count + rest.count == all.filter { $0.app == "demo" }.count)
        if case .intact(let count, _) = try t.registry.verifyAudit() { #expect(count == all.count) } else { Issue.record("chain broken") }
    }

    @Test("the audit log pages newest first below a seq, per app and across apps, and the pages join into the whole log reversed")
    func auditPagesNewestFirst() throws {
        let (t, demo) = try twoAppsOfFourPatches()
        let all = try t.registry.auditEvents(app: nil)
        var paged: [AuditEvent] = [], before = Int64.max
        while true {
            let page = try t.registry.auditEvents(app: nil, before: before, limit: 3)
            guard let last = page.last else { break }
            #expect(page.count <= 3 && page.allSatisfy { $0.seq < before })
            paged += page
            before = last.seq
        }
        #expect(paged.map(\.seq) == all.reversed().map(\.seq))
        let demoAll = all.filter { $0.app == "demo" }
        let demoPage = try t.registry.auditEvents(app: demo, before: demoAll.last!.seq, limit: 2)
        #expect(demoPage.map(\.seq) == demoAll.dropLast().suffix(2).reversed().map(\.seq))
        #expect(try t.registry.auditEvents(app: nil, before: 1).isEmpty)
        #expect(try t.registry.auditEvents(app: nil, before: all[4].seq, after: all[1].seq).map(\.seq) == [all[3].seq, all[2].seq])
    }

    @Test("APNs settings: stored with their key file, read back, replaced by a second set; a key that is not P-256 changes nothing")
    func apnsSettings() throws {
        let t = try TempRegistry()
        let demo = try t.app("demo")
        #expect(try t.registry.apnsConfig(app: demo) == nil)
        let key = try ECDSAPrivateKey.generate().pemRepresentation()
        try t.registry.setAPNs(app: demo, teamID: "TEAM123456", keyID: "KEY1234567", topic: "com.example.demo", keyPEM: key, actor: t.actor)
        let first = try #require(try t.registry.apnsConfig(app: demo))
        #expect(first.teamID == "TEAM123456" && first.keyID == "KEY1234567" && first.topic == "com.example.demo")
        #expect(try t.registry.apnsKey(app: demo).config == first)
        try t.registry.setAPNs(app: demo, teamID: "TEAM123456", keyID: "KEY1234567", topic: "com.example.demo2", keyPEM: key, actor: t.actor)
        #expect(try t.registry.apnsConfig(app: demo)?.topic == "com.example.demo2", "replaced, one row")
        #expect(throws: RegistryError.self) {
            try t.registry.setAPNs(app: demo, teamID: "TEAM123456", keyID: "KEY7654321", topic: "com.example.demo", keyPEM: Array("not a key".utf8), actor: t.actor)
        }
        #expect(try t.registry.apnsConfig(app: demo)?.topic == "com.example.demo2")
    }

    @Test("push tokens are selected by version and by channel, the most recently registered first")
    func pushSelection() throws {
        let t = try TempRegistry()
        let demo = try t.app("demo", channels: ["staging"])
        try t.publish(demo, "2.3", "a()")
        try t.publish(demo, "2.4", "b()")
        let staging = try ChannelName("staging")
        _ = try t.registry.publish(app: demo, appVersion: try AppVersion("2.3"), bundle: Array("s()".utf8), channel: staging, actor: t.actor)
        let start = Date()
        func register(_ n: Int, _ version: String, _ channel: ChannelName = .production) throws {
            _ = try t.registry.registerPushDevice(app: demo, token: String(repeating: String(format: "%02x", n), count: 32), deviceID: "device-\(n)",
                                                   environment: .production, appVersion: try AppVersion(version), channel: channel,
                                                   limit: 100, now: start.addingTimeInterval(Double(n))) { true }
        }
        try register(1, "2.3")
        try register(2, "2.4")
        try register(3, "2.3", staging)
        try register(4, "2.3")
        let v23 = try t.registry.pushDevices(app: demo, appVersion: try AppVersion("2.3"), now: start.addingTimeInterval(10))
        #expect(v23.map { String($0.token.prefix(2)) } == ["04", "03", "01"])
        let production = try t.registry.pushDevices(app: demo, appVersion: try AppVersion("2.3"), channel: .production, now: start.addingTimeInterval(10))
        #expect(production.map { String($0.token.prefix(2)) } == ["04", "01"])
        #expect(try t.registry.pushDevices(app: demo, now: start.addingTimeInterval(10)).count == 4)
    }

    @Test("every app's active patches in one read (the guards' and figures' sweep)")
    func activeAcrossApps() throws {
        let t = try TempRegistry()
        let demo = try t.app("demo"), other = try t.app("other")
        try t.publish(demo, "2.3", "a()")
        try t.publish(other, "1.0", "b()")
        _ = try t.registry.revoke(app: other, appVersion: try AppVersion("1.0"), number: 1, actor: t.actor)
        let active = try t.registry.patches(app: nil, appVersion: nil, activeOnly: true)
        #expect(active.map(\.app) == [demo])
        #expect(try t.registry.patches(app: nil, appVersion: nil, activeOnly: false).count == 2)
    }
}

@Suite("Tokens issued from tokens (POST /v1/tokens), on each backend")
struct TokenParentTests {
    @Test("a token issued with another records it as parent, in the listing and the token.create event; revoking the parent revokes its descendants, transitively, each with its own token.revoke")
    func revokeCascades() throws {
        let t = try TempRegistry()
        let demo = try t.app("demo")
        let root = try t.registry.createToken(app: nil, role: .publisher, name: "root", actor: t.actor)
        let child = try t.registry.createToken(app: demo, role: .publisher, name: "child", actor: t.actor, parent: root.record.id)
        let grandchild = try t.registry.createToken(app: demo, role: .auditor, name: "grandchild", actor: t.actor, parent: child.record.id)
        let sibling = try t.registry.createToken(app: demo, role: .publisher, name: "sibling", actor: t.actor)
        #expect(child.listing.parent == root.record.id && child.json["parent"] == .string(root.record.id) && child.json["token"] == .string(child.secret))
        let listed = try t.registry.tokens(scope: nil)
        #expect(listed.first { $0.record.id == grandchild.record.id }?.json["parent"] == .string(child.record.id))
        #expect(listed.first { $0.record.id == root.record.id }?.json["parent"] == nil, "no parent member when there is none")
        #expect(try t.registry.auditEvents(app: demo).first { $0.details["id"] == .string(grandchild.record.id) }?.details["parent"] == .string(child.record.id))

        _ = try t.registry.revokeToken(id: root.record.id, actor: t.actor)
        for token in [root, child, grandchild] { #expect(try t.registry.token(presented: token.secret) == nil, "\(token.record.name)") }
        #expect(try t.registry.token(presented: sibling.secret) != nil)
        let revokes = try t.registry.auditEvents(app: nil).filter { $0.action == "token.revoke" }
        #expect(revokes.first?.details["id"] == .string(root.record.id) && revokes.first?.app == "*")
        #expect(Set(revokes.dropFirst().compactMap { $0.details["id"]?.stringValue }) == [child.record.id, grandchild.record.id])
        #expect(revokes.dropFirst().allSatisfy { $0.app == "demo" }, "each under its own scope")
        #expect(revokes.dropFirst().allSatisfy { $0.details["revokedWith"] == .string(root.record.id) })
        #expect(try t.registry.verifyAudit() == .intact(events: try t.registry.auditEvents(app: nil).count, head: revokes.last!.hash))
    }

    @Test("a revoked or unknown parent issues nothing (409): no child outlives its parent's revocation")
    func revokedParentIssuesNothing() throws {
        let t = try TempRegistry()
        let demo = try t.app("demo")
        let parent = try t.registry.createToken(app: demo, role: .publisher, name: "ci", actor: t.actor)
        _ = try t.registry.revokeToken(id: parent.record.id, actor: t.actor)
        let before = try t.registry.tokens(scope: nil).count
        for id in [parent.record.id, "000000000000"] {
            #expect(throws: RegistryError.self) { try t.registry.createToken(app: demo, role: .auditor, name: "late", actor: t.actor, parent: id) }
        }
        #expect(try t.registry.tokens(scope: nil).count == before)
    }

    @Test("a registry from before the parent column gains it on open, its tokens intact")
    func olderRegistryGainsTheColumn() throws {
        let t = try TempRegistry()
        let demo = try t.app("demo")
        let old = try t.registry.createToken(app: demo, role: .publisher, name: "ci", actor: t.actor)
        try t.registry.db.execute("ALTER TABLE tokens DROP COLUMN parent")
        if t.registry.db.dialect == .postgres { try t.registry.db.execute("DELETE FROM schema_script") }
        let reopened = try TestBackend.registry(dataDirectory: t.root.appendingPathComponent("data"), keysDirectory: t.root.appendingPathComponent("keys"),
                                                create: false)
        #expect(try reopened.token(presented: old.secret)?.id == old.record.id)
        let child = try reopened.createToken(app: demo, role: .auditor, name: "child", actor: t.actor, parent: old.record.id)
        let parents = Dictionary(uniqueKeysWithValues: try reopened.tokens(scope: demo).map { ($0.record.id, $0.parent ?? "none") })
        #expect(parents == [old.record.id: "none", child.record.id: old.record.id])
        _ = try reopened.revokeToken(id: old.record.id, actor: t.actor)
        #expect(try reopened.token(presented: child.secret) == nil)
    }
}
