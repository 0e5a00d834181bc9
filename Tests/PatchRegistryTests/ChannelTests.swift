import Foundation
import Testing
import PatchCore
@testable import PatchRegistry
import HotpatchTestSupport

@Suite("Channels, promotion and release notes")
struct ChannelTests {
    let v23 = try! AppVersion("2.3")
    let staging = try! ChannelName("staging")

    @Test("a staging patch is signed under staging/{version}/{n}/main.js; numbers are one sequence per version across channels")
    func stagingTargetPath() async throws {
        let t = try TempRegistry()
        let app = try t.app("demo", channels: ["staging"])
        let prod = try t.publish(app, "2.3", "a()")
        let stage = try t.registry.publish(app: app, appVersion: v23, bundle: Array("b()".utf8), channel: staging, actor: t.actor).patch
        #expect(prod.channel == .production && prod.targetPath == "2.3/1/main.js")
        #expect(stage.channel == staging && stage.number == 2 && stage.targetPath == "staging/2.3/2/main.js")
        let targets = try t.targets(app).targets
        #expect(Set(targets.keys) == ["2.3/1/main.js", "staging/2.3/2/main.js"], "each channel lists its own newest full rollout")
        let file = try #require(targets["staging/2.3/2/main.js"])
        let info = try #require(PatchTargetInfo(path: "staging/2.3/2/main.js", file: file))
        #expect(info.channel == staging && info.patch == 2 && info.servedPath(hash: "h") == "staging/2.3/2/h.main.js")
        #expect(try t.registry.patches(app: app, appVersion: v23, channel: staging, activeOnly: true).map(\.number) == [2])
        #expect(try await t.verify(app).ok)
    }

    @Test("the same bytes are refused within a channel, not across channels")
    func sameBytesPerChannel() throws {
        let t = try TempRegistry()
        let app = try t.app("demo", channels: ["staging"])
        try t.publish(app, "2.3", "a()")
        #expect(try t.registry.publish(app: app, appVersion: v23, bundle: Array("a()".utf8), channel: staging, actor: t.actor).patch.number == 2)
        let before = try t.snapshot()
        #expect(throws: RegistryError.self) {
            try t.registry.publish(app: app, appVersion: v23, bundle: Array("a()".utf8), channel: staging, actor: t.actor)
        }
        #expect(try t.snapshot() == before)
    }

    @Test("promote publishes the staging plaintext as the next production patch, signed and audited with where it came from")
    func promote() async throws {
        let t = try TempRegistry()
        let app = try t.app("demo", channels: ["staging"])
        try t.publish(app, "2.3", "old()")
        let tested = try t.registry.publish(app: app, appVersion: v23, bundle: Array("fix()".utf8), channel: staging, actor: t.actor).patch
        let promoted = try t.registry.promote(app: app, appVersion: v23, from: staging, to: .production, rollout: 25, message: "fixes login",
                                              actor: t.actor).patch
        #expect(promoted.number == 3 && promoted.channel == .production && promoted.rollout == 25)
        #expect(promoted.plaintext == tested.plaintext && promoted.served == tested.served, "unencrypted: the very same bytes")
        #expect(promoted.promotedFrom == PatchTargetInfo.Origin(channel: staging, patch: 2, sha256: tested.plaintext.sha256))
        let file = try #require(try t.targets(app).targets["2.3/3/main.js"])
        let info = try #require(PatchTargetInfo(path: "2.3/3/main.js", file: file))
        #expect(info.promotedFrom == promoted.promotedFrom && info.message == "fixes login")
        let event = try #require(try t.registry.auditEvents(app: app).last)
        #expect(event.action == "patch.promote")
        #expect(event.details["from"]?["channel"]?.stringValue == "staging" && event.details["from"]?["patch"]?.intValue == 2)
        #expect(event.details["sha256"]?.stringValue == tested.plaintext.sha256 && event.details["message"]?.stringValue == "fixes login")
        #expect(try await t.verify(app).ok)
    }

    @Test("an encrypted app's promotion is sealed again under the new patch number: same plaintext, other ciphertext")
    func promoteEncrypted() throws {
        let t = try TempRegistry()
        let app = try t.app("secret", encrypted: true, channels: ["staging"])
        let tested = try t.registry.publish(app: app, appVersion: v23, bundle: Array("fix()".utf8), channel: staging, actor: t.actor).patch
        let promoted = try t.registry.promote(app: app, appVersion: v23, from: staging, to: .production, actor: t.actor).patch
        #expect(promoted.plaintext == tested.plaintext && promoted.served.sha256 != tested.served.sha256)
        let key = try t.registry.keys.contentKey(app: app)
        let served = try t.registry.servedBytes(sha256: promoted.served.sha256)
        #expect(try BundleCipher.open(served, key: key, app: "secret", appVersion: "2.3", patch: 2) == Array("fix()".utf8))
        #expect(try t.registry.plaintext(of: promoted) == Array("fix()".utf8))
    }

    @Test("promote refuses: same channel, nothing in --from, a patch of another channel, a revoked patch, bytes already live in --to")
    func promoteRefusals() throws {
        let t = try TempRegistry()
        let app = try t.app("demo", channels: ["staging"])
        try t.publish(app, "2.3", "prod()")
        let same = #expect(throws: RegistryError.self) { try t.registry.promote(app: app, appVersion: v23, from: staging, to: staging, actor: t.actor) }
        guard case .conflict? = same else { Issue.record("same channel: \(String(describing: same))"); return }
        #expect(try t.registry.publish(app: app, appVersion: v23, bundle: Array("x()".utf8), message: String(repeating: "é", count: 500),
                                       dryRun: true, actor: t.actor).patch.message?.unicodeScalars.count == 500)
        #expect(throws: RegistryError.self) { try t.registry.promote(app: app, appVersion: v23, from: staging, to: .production, actor: t.actor) }
        try t.registry.publish(app: app, appVersion: v23, bundle: Array("a()".utf8), channel: staging, actor: t.actor)
        #expect(throws: RegistryError.self) {
            try t.registry.promote(app: app, appVersion: v23, from: staging, to: .production, number: 1, actor: t.actor)
        }
        try t.registry.promote(app: app, appVersion: v23, from: staging, to: .production, actor: t.actor)
        let before = try t.snapshot()
        #expect(throws: RegistryError.self) { try t.registry.promote(app: app, appVersion: v23, from: staging, to: .production, actor: t.actor) }
        try t.registry.revoke(app: app, appVersion: v23, number: 2, actor: t.actor)
        #expect(throws: RegistryError.self) {
            try t.registry.promote(app: app, appVersion: v23, from: staging, to: .production, number: 2, actor: t.actor)
        }
        #expect(try t.snapshot().count == before.count + 1, "only the revocation's event was added")
    }

    @Test("a promotion dry run changes nothing")
    func promoteDryRun() throws {
        let t = try TempRegistry()
        let app = try t.app("demo", channels: ["staging"])
        try t.registry.publish(app: app, appVersion: v23, bundle: Array("a()".utf8), channel: staging, actor: t.actor)
        let before = try t.snapshot()
        let would = try t.registry.promote(app: app, appVersion: v23, from: staging, to: .production, dryRun: true, actor: t.actor).patch
        #expect(would.number == 2 && would.promotedFrom?.patch == 1)
        #expect(try t.snapshot() == before)
    }

    @Test("--message is stored, signed in custom.message, audited (chain intact); too long, or more than one line, is refused")
    func releaseNotes() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        let patch = try t.registry.publish(app: app, appVersion: v23, bundle: Array("a()".utf8), message: "fixes the login crash — ünïcode ok", actor: t.actor).patch
        #expect(patch.message == "fixes the login crash — ünïcode ok" && patch.json["message"]?.stringValue == "fixes the login crash — ünïcode ok")
        #expect(try t.registry.patches(app: app, appVersion: v23, activeOnly: false).first?.message == "fixes the login crash — ünïcode ok")
        #expect(try t.targets(app).targets["2.3/1/main.js"]?.custom?["message"]?.stringValue == "fixes the login crash — ünïcode ok")
        #expect(try t.registry.auditEvents(app: app).last?.details["message"]?.stringValue == "fixes the login crash — ünïcode ok")
        #expect(try t.registry.verifyAudit() == .intact(events: 2, head: try #require(try t.registry.auditEvents(app: nil).last?.hash)))
        for bad in [String(repeating: "é", count: 501), "a\u{1B}[31mred", "two\nlines"] {
            #expect(throws: RegistryError.self) {
                try t.registry.publish(app: app, appVersion: v23, bundle: Array("b()".utf8), message: bad, actor: t.actor)
            }
        }
    }

    @Test("a registry written before channels opens: its patches are production, and re-signing keeps their target paths")
    func olderRegistryOpens() throws {
        let t = try TempRegistry()
        let app = try t.app("old")
        try t.publish(app, "2.3", "a()")
        try t.publish(app, "2.3", "b()", rollout: 50)
        let oldTargets = try t.targets(app).targets
        // What the previous hotpatch left: the same schema without patch_releases.
        try t.registry.db.execute("DROP TABLE patch_releases")
        let reopened = try TestBackend.registry(dataDirectory: t.root.appendingPathComponent("data"), keysDirectory: t.root.appendingPathComponent("keys"))
        let patches = try reopened.patches(app: app, appVersion: nil, activeOnly: false)
        #expect(patches.map(\.channel) == [.production, .production] && patches.allSatisfy { $0.message == nil && $0.promotedFrom == nil })
        try reopened.setRollout(app: app, appVersion: v23, number: 2, percent: 60, actor: t.actor)
        let newTargets = try SignedTargets(bytes: try reopened.latestMetadata(app: app, role: .targets).bytes).body.targets
        #expect(Set(newTargets.keys) == Set(oldTargets.keys))
        #expect(newTargets["2.3/1/main.js"] == oldTargets["2.3/1/main.js"], "a patch's signed entry is unchanged by the upgrade")
        let staged = try reopened.publish(app: app, appVersion: v23, bundle: Array("c()".utf8), channel: staging, newChannel: true, actor: t.actor).patch
        #expect(staged.number == 3 && staged.targetPath == "staging/2.3/3/main.js")
    }

    @Test("a version's revoke takes one channel's patches (production by default), names it in the audit event; a number in another channel is refused")
    func revokeOneChannel() throws {
        let t = try TempRegistry()
        let app = try t.app("demo", channels: ["staging"]), v23 = try AppVersion("2.3"), staging = try ChannelName("staging")
        try t.publish(app, "2.3", "prod()")
        _ = try t.registry.publish(app: app, appVersion: v23, bundle: Array("qa()".utf8), channel: staging, actor: t.actor)
        let revoked = try t.registry.revoke(app: app, appVersion: v23, number: nil, actor: t.actor)
        #expect(revoked.map(\.number) == [1])
        #expect(try t.registry.patches(app: app, appVersion: v23, activeOnly: true).map(\.number) == [2], "staging untouched")
        #expect(try t.registry.auditEvents(app: app).last?.details["channel"] == .string("production"))
        let before = try t.snapshot()
        #expect(throws: RegistryError.self) { try t.registry.revoke(app: app, appVersion: v23, channel: .production, number: 2, actor: t.actor) }
        #expect(throws: RegistryError.self) { try t.registry.revoke(app: app, appVersion: v23, number: nil, actor: t.actor) }
        #expect(try t.snapshot() == before)
        #expect(try t.registry.revoke(app: app, appVersion: v23, channel: staging, number: nil, actor: t.actor).map(\.number) == [2])
    }

    @Test("rollBack(to:) republishes patch N's plaintext as the next patch of its channel, signed rolledBackTo and audited; a retry, another channel's patch or an unknown number changes nothing")
    func rollBackTo() throws {
        let t = try TempRegistry()
        let app = try t.app("vault", encrypted: true, channels: ["staging"]), v = try AppVersion("3.1"), staging = try ChannelName("staging")
        let good = try t.publish(app, "3.1", "good()")
        try t.publish(app, "3.1", "bad()")
        _ = try t.registry.revoke(app: app, appVersion: v, number: 1, actor: t.actor)  // an earlier, hasty revoke
        _ = try t.registry.publish(app: app, appVersion: v, bundle: Array("qa()".utf8), channel: staging, actor: t.actor)
        let back = try t.registry.rollBack(app: app, appVersion: v, channel: .production, to: 1, actor: t.actor).patch
        #expect(back.number == 4 && back.channel == .production && back.plaintext == good.plaintext)
        #expect(back.served.sha256 != good.served.sha256, "sealed again under patch 4's AAD")
        #expect(try t.registry.plaintext(of: back) == Array("good()".utf8))
        let origin = PatchTargetInfo.Origin(channel: .production, patch: 1, sha256: good.plaintext.sha256)
        #expect(back.rolledBackTo == origin)
        let signed = try #require(try t.targets(app).targets["3.1/4/main.js"])
        #expect(PatchTargetInfo(path: "3.1/4/main.js", file: signed)?.rolledBackTo == origin)
        let event = try #require(try t.registry.auditEvents(app: app).last)
        #expect(event.action == "patch.rollback" && event.details["to"] == origin.json && event.details["patch"] == .int(4))
        #expect(try t.registry.patches(app: app, appVersion: v, activeOnly: false).first { $0.number == 4 }?.rolledBackTo == origin, "read back")
        let before = try t.snapshot()
        #expect(throws: RegistryError.self) { try t.registry.rollBack(app: app, appVersion: v, channel: .production, to: 1, actor: t.actor) }
        #expect(throws: RegistryError.self) { try t.registry.rollBack(app: app, appVersion: v, channel: .production, to: 3, actor: t.actor) }
        #expect(throws: RegistryError.self) { try t.registry.rollBack(app: app, appVersion: v, channel: .production, to: 9, actor: t.actor) }
        #expect(try t.snapshot() == before)
    }

    @Test("promote keeps the source's release notes unless given others; a halted copy in the target is named as halted, with the rollout that resumes it")
    func promoteNotesAndHaltedCopy() throws {
        let t = try TempRegistry()
        let app = try t.app("demo", channels: ["staging"]), v = try AppVersion("2.3"), staging = try ChannelName("staging")
        _ = try t.registry.publish(app: app, appVersion: v, bundle: Array("qa()".utf8), channel: staging, message: "fixes login", actor: t.actor)
        let promoted = try t.registry.promote(app: app, appVersion: v, from: staging, to: .production, actor: t.actor).patch
        #expect(promoted.message == "fixes login")
        _ = try t.registry.setRollout(app: app, appVersion: v, number: promoted.number, percent: 0, actor: t.actor)
        do {
            _ = try t.registry.promote(app: app, appVersion: v, from: staging, to: .production, actor: t.actor)
            Issue.record("promoted a second copy beside a halted one")
        } catch {
            #expect(error.description.contains("halted") && error.description.contains("patchctl rollout --app demo --app-version 2.3 --patch 2 --rollout 100"), "\(error)")
        }
        _ = try t.registry.publish(app: app, appVersion: v, bundle: Array("qa2()".utf8), channel: staging, message: "one", actor: t.actor)
        #expect(try t.registry.promote(app: app, appVersion: v, from: staging, to: .production, message: "two", actor: t.actor).patch.message == "two")
    }
}
