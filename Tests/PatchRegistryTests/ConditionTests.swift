import Foundation
import PatchCore
import Testing
@testable import PatchRegistry
import HotpatchTestSupport

/// Delivery conditions in the registry: stored, signed under the conditional name, shown
/// without the hashes, and kept across a reopen.
@Suite("Registry: delivery conditions")
struct RegistryConditionTests {
    static func qaOnly() throws -> DeliveryConditions {
        try DeliveryConditions(devices: try .hashing(["qa-1", "qa-2", "qa-3"]), os: try .init(min: try OSVersion("15.0"), max: nil))
    }

    @Test("signed as main.conditional.js; a conditional 100 % patch does not hide older ones; status names it apart from the split")
    func listingAndStatus() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        let version = try AppVersion("2.3")
        try t.publish(app, "2.3", "one()")
        try t.publish(app, "2.3", "two()", rollout: 25)
        let conditions = try Self.qaOnly()
        let qa = try t.registry.publish(app: app, appVersion: version, bundle: Array("qa()".utf8), conditions: conditions, actor: t.actor).patch
        #expect(qa.conditions == conditions && qa.targetPath == "2.3/3/main.conditional.js")
        let targets = try t.targets(app).targets
        #expect(Set(targets.keys) == ["2.3/1/main.js", "2.3/2/main.js", "2.3/3/main.conditional.js"])
        #expect(PatchTargetInfo(path: "2.3/3/main.conditional.js", file: targets["2.3/3/main.conditional.js"]!)?.conditions == conditions)
        let serving = try t.registry.serving(app: app, appVersion: version)
        #expect(serving.delivery == [1: .live, 2: .live, 3: .live])
        #expect(serving.summary == "patch 3 → where 3 listed devices, OS ≥ 15.0 (rollout 100 %); otherwise patch 2 → 25 %, patch 1 → 75 %")
        #expect(qa.json["conditions"]?.canonicalString == #"{"devices":3,"os":{"min":"15.0"}}"#)
        // The listing round-trips through the remote path's parser to the same summary.
        let entries = try t.registry.patches(app: app, appVersion: version, activeOnly: false).compactMap { VersionServing.Entry(listing: $0.json) }
        #expect(VersionServing(app: app, appVersion: version, entries: entries).summary == serving.summary)
        // A newer unconditional 100 % patch reaches every device first.
        try t.publish(app, "2.3", "four()")
        #expect(try t.registry.serving(app: app, appVersion: version).delivery[3] == .superseded)
        #expect(try t.targets(app).targets.keys.sorted() == ["2.3/4/main.js"])
    }

    @Test("the same bytes for test phones first and then for everyone is not refused as a duplicate; a re-run for everyone is")
    func sameBytes() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        let version = try AppVersion("2.3")
        _ = try t.registry.publish(app: app, appVersion: version, bundle: Array("fix()".utf8), conditions: try Self.qaOnly(), actor: t.actor)
        try t.publish(app, "2.3", "fix()")
        #expect(throws: RegistryError.self) { try t.publish(app, "2.3", "fix()") }
    }

    @Test("conditions survive a reopen, are in the audit event (hashed), verify passes, and raw IDs are stored nowhere")
    func persisted() async throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        let conditions = try Self.qaOnly()
        _ = try t.registry.publish(app: app, appVersion: try AppVersion("2.3"), bundle: Array("qa()".utf8), conditions: conditions, actor: t.actor)
        let reopened = try TestBackend.registry(dataDirectory: t.root.appendingPathComponent("data"), keysDirectory: t.root.appendingPathComponent("keys"))
        #expect(try reopened.patches(app: app, appVersion: nil, activeOnly: false).first?.conditions == conditions)
        #expect(try reopened.auditEvents(app: app).last?.details["conditions"] == conditions.json)
        let report = try await t.verify(app)
        #expect(report.targets.count == 1 && report.targets.allSatisfy { $0.problem == nil && $0.plaintextChecked })
        let stored = try TestBackend.storedBytes(dataDirectory: t.root.appendingPathComponent("data"))
        #expect(!stored.isEmpty && stored.range(of: Data("qa-1".utf8)) == nil, "a raw device ID reached the registry's storage")
    }
}
