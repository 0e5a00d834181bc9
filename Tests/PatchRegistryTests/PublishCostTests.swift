import Foundation
import Testing
import PatchCore
@testable import PatchRegistry

/// What one publish asks of the database (issue 23, item 4), counted rather than timed: a
/// statement on SQLite, a round trip to the server on PostgreSQL. The count must not grow
/// with the app's history.
@Suite("Publishing: statements and round trips")
struct PublishCostTests {
    /// SQLite: the versions devices ask for (the warning of issue 44, bounded by the days and
    /// versions kept, not by the app's history), the version's native manifest (the script
    /// check's, issue 45), BEGIN IMMEDIATE, the app, the same-bytes check (not with
    /// `allowSame`), the next number, the blob, patch, release and check rows, the signing
    /// root with every role's newest version, the listed patches, the signed chain (one
    /// INSERT), the audit head and event, the webhook outbox's three (the event for each
    /// subscription that wants it, the drop count and the drop past a subscription's bound:
    /// each a no-op for an app without webhooks), COMMIT.
    static let sqliteStatements = 19
    /// PostgreSQL: the versions devices ask for; the version's native manifest; BEGIN with the
    /// writer lock; the app; the same-bytes check; the next number; the patch's rows (the check's
    /// among them) with the signing root's read; the listed patches; the signed chain with the
    /// audit head; the audit event, the change bump and NOTIFY with COMMIT (the webhook outbox's
    /// statements ride with it).
    static let postgresRoundTrips = 10

    func calls(_ t: TempRegistry, _ body: () throws -> Void) rethrows -> Int {
        let before = t.registry.db.calls
        try body()
        return t.registry.db.calls - before
    }

    @Test("a publish costs the same statements after 1 patch as after 40, plain and encrypted")
    func constant() throws {
        let t = try TempRegistry()
        let expected = t.registry.db.dialect == .sqlite ? Self.sqliteStatements : Self.postgresRoundTrips
        for encrypted in [false, true] {
            let app = try t.app(encrypted ? "sealed" : "plain", encrypted: encrypted)
            try t.publish(app, "2.3", "first()")
            let early = try calls(t) { try t.publish(app, "2.3", "second()") }
            for i in 0..<40 { try t.publish(app, "2.3", "p\(i)()", rollout: i % 3 == 0 ? 100 : 50) }
            try t.publish(app, "2.4", "other()")
            let late = try calls(t) { try t.publish(app, "2.3", "late()") }
            #expect(early == expected, "\(encrypted ? "encrypted" : "plain"): \(early) calls")
            #expect(late == expected, "\(encrypted ? "encrypted" : "plain"): \(late) calls after 40 patches")
        }
    }

    @Test("targets list exactly what listedPatches chooses from every active patch (channels, halts, conditions, revokes)")
    func listingMatchesTheRule() throws {
        let t = try TempRegistry()
        let app = try t.app("demo", channels: ["staging"])
        let v23 = try AppVersion("2.3"), v24 = try AppVersion("2.4")
        let staging = try ChannelName("staging")
        let qa = try DeliveryConditions(devices: try .hashing(["qa-1"]), os: nil)
        func check(_ step: String) throws {
            let all = try t.registry.patches(app: app, appVersion: nil, activeOnly: true)
            let expected = Set(Dictionary(grouping: all) { "\($0.channel)/\($0.appVersion)" }.values.flatMap { Registry.listedPatches($0) }.map(\.targetPath))
            #expect(Set(try t.targets(app).targets.keys) == expected, "after \(step)")
            #expect(Set(try t.registry.listablePatches(app: app).map(\.targetPath)).isSuperset(of: expected), "after \(step)")
        }
        try t.publish(app, "2.3", "a()"); try check("one patch")
        try t.publish(app, "2.3", "b()", rollout: 20); try check("a partial rollout above a full one")
        _ = try t.registry.publish(app: app, appVersion: v23, bundle: Array("c()".utf8), channel: staging, actor: t.actor); try check("a staging patch")
        _ = try t.registry.publish(app: app, appVersion: v23, bundle: Array("d()".utf8), channel: staging, rollout: 30, actor: t.actor)
        _ = try t.registry.publish(app: app, appVersion: v23, bundle: Array("e()".utf8), conditions: qa, actor: t.actor); try check("a conditional patch at 100 %")
        try t.registry.setRollout(app: app, appVersion: v23, number: 2, percent: 0, actor: t.actor); try check("a halt")
        try t.publish(app, "2.3", "f()"); try check("a full rollout over everything")
        _ = try t.registry.revoke(app: app, appVersion: v23, number: 6, actor: t.actor); try check("revoking the newest full rollout")
        _ = try t.registry.publish(app: app, appVersion: v24, bundle: Array("g()".utf8), channel: staging, rollout: 10, actor: t.actor)
        try check("a version with only a partial rollout")
        _ = try t.registry.revoke(app: app, appVersion: v23, channel: staging, number: nil, actor: t.actor); try check("revoking a channel")
    }
}
