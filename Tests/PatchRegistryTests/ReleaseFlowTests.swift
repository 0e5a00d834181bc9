import Foundation
import Testing
import PatchCore
@testable import PatchRegistry
import HotpatchTestSupport

@Suite("Release flow: same bytes, dry runs, opening, export")
struct ReleaseFlowTests {
    @Test("bytes identical to a live patch of the version are refused and change nothing, unless allowSame")
    func sameBytes() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        try t.publish(app, "2.3", "same()")
        let before = try t.snapshot()
        #expect(throws: RegistryError.self) { try t.publish(app, "2.3", "same()") }
        #expect(try t.snapshot() == before)
        let again = try t.registry.publish(app: app, appVersion: try AppVersion("2.3"), bundle: Array("same()".utf8), allowSame: true, actor: t.actor)
        #expect(again.patch.number == 2)
        try t.registry.revoke(app: app, appVersion: try AppVersion("2.3"), number: nil, actor: t.actor)
        #expect(try t.publish(app, "2.3", "same()").number == 3)
    }

    @Test("a dry run returns what the change would be and commits nothing")
    func dryRun() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        let version = try AppVersion("2.3")
        try t.publish(app, "2.3", "one()")
        let before = try t.snapshot()
        let published = try t.registry.publish(app: app, appVersion: version, bundle: Array("two()".utf8), dryRun: true, actor: t.actor)
        #expect(published.patch.number == 2)
        #expect(try t.registry.setRollout(app: app, appVersion: version, number: 1, percent: 5, dryRun: true, actor: t.actor).patch.rollout == 5)
        #expect(try t.registry.revoke(app: app, appVersion: version, number: 1, dryRun: true, actor: t.actor).map(\.state) == [.revoked])
        #expect(try t.snapshot() == before)
        #expect(throws: RegistryError.self) { try t.registry.setRollout(app: app, appVersion: version, number: 9, percent: 5, dryRun: true, actor: t.actor) }
    }

    @Test("create: false opens an existing registry and refuses a missing one without creating it")
    func openExisting() throws {
        let t = try TempRegistry()
        _ = try TestBackend.registry(dataDirectory: t.root.appendingPathComponent("data"), keysDirectory: t.root.appendingPathComponent("keys"), create: false)
        let typo = t.root.appendingPathComponent("dta")
        #expect(throws: RegistryError.self) { try TestBackend.registry(dataDirectory: typo, keysDirectory: t.root.appendingPathComponent("keys"), create: false) }
        #expect(!FileManager.default.fileExists(atPath: typo.path))
        if TestBackend.isPostgres { #expect(try TestBackend.tables(dataDirectory: typo) == [], "no table was created in the mistyped registry's schema") }
    }

    @Test("export into an older export deletes what is no longer listed and nothing else")
    func exportPrunes() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        try t.publish(app, "2.3", "one()")
        let two = try t.publish(app, "2.3", "two()")
        let out = t.root.appendingPathComponent("out", isDirectory: true)
        let first = try t.registry.export(app: app, to: out)
        #expect(first.appRoot == out.appendingPathComponent("v1/apps/demo", isDirectory: true))
        #expect(first.removedFiles == 0)
        try t.registry.revoke(app: app, appVersion: two.appVersion, number: 2, actor: t.actor)
        let second = try t.registry.export(app: app, to: out)
        #expect(second.removedFiles == 2)
        let stale = first.appRoot.appendingPathComponent("targets/2.3/2/\(two.served.sha256).main.js")
        #expect(!FileManager.default.fileExists(atPath: stale.path))
        #expect(FileManager.default.fileExists(atPath: first.appRoot.appendingPathComponent("metadata/1.root.json").path))
    }

    @Test("a longer export lifetime re-signs the chain to last it; past 90 days it is refused")
    func exportLifetime() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        let now = Date()
        let summary = try t.registry.export(app: app, to: t.root.appendingPathComponent("out"), timestampLifetime: 30 * 86_400, now: now)
        #expect(abs(summary.timestampExpires.timeIntervalSince(now) - 30 * 86_400) < 2)
        #expect(try t.registry.latestExpiry(app: app, role: .snapshot) >= summary.timestampExpires)
        #expect(throws: RegistryError.self) { try t.registry.export(app: app, to: t.root.appendingPathComponent("o2"), timestampLifetime: 91 * 86_400) }
    }
}
