import Foundation
import Testing
import PatchCore
import PatchSigning
@testable import PatchRegistry
import HotpatchTestSupport

/// `keys delegate`: a channel's targets signed by a role of their own (issue 24).
@Suite("Delegated channel keys")
struct DelegatedChannelTests {
    let v23 = try! AppVersion("2.3")
    let staging = try! ChannelName("staging")

    /// An app with production patch 1, and staging delegated to `qa` (its key given, not stored).
    func delegated() throws -> (TempRegistry, AppName, SigningKey) {
        let t = try TempRegistry()
        let app = try t.app("demo", channels: ["staging"])
        try t.publish(app, "2.3", "a()")
        let qa = try SigningKey.generateEd25519()
        try t.registry.delegate(app: app, channel: staging, role: "qa", keys: [qa.tufKey], signingKeys: [qa], actor: t.actor)
        return (t, app, qa)
    }

    func removeTargetsKey(_ t: TempRegistry) throws {
        let keyDir = t.root.appendingPathComponent("keys/demo")
        for file in try FileManager.default.contentsOfDirectory(atPath: keyDir.path) where file.hasPrefix("targets.") {
            try FileManager.default.removeItem(at: keyDir.appendingPathComponent(file))
        }
    }

    @Test("top-level targets delegates exactly the channel's paths to the role; snapshot lists qa.json")
    func delegationIsSigned() throws {
        let (t, app, qa) = try delegated()
        let targets = try t.targets(app)
        let role = try #require(targets.delegations?.roles.first)
        #expect(role.name == "qa" && role.keyIDs == [qa.tufKey.keyID] && role.threshold == 1)
        #expect(role.scope == .paths(["staging/*/*/main.js", "staging/*/*/main.conditional.js"]))
        #expect(role.isDelegated("staging/2.3/4/main.js") && !role.isDelegated("2.3/4/main.js") && !role.isDelegated("beta/2.3/4/main.js"))
        #expect(!role.isDelegated("staging/2.3/4/x/main.js"), "* does not cross /")
        let snapshot = try SignedSnapshot(bytes: try t.registry.latestMetadata(app: app, role: .snapshot).bytes).body
        #expect(snapshot.meta["qa.json"]?.version == 1)
        #expect(throws: RegistryError.self) {
            try t.registry.delegate(app: app, channel: staging, role: "qa2", keys: [qa.tufKey], signingKeys: [qa], actor: t.actor)
        }
    }

    @Test("a staging publish is signed by the role's key alone and verifies through the client, listed under qa")
    func stagingPublishVerifies() async throws {
        let (t, app, qa) = try delegated()
        try removeTargetsKey(t)
        let targetsBefore = try t.registry.latestMetadata(app: app, role: .targets).version
        let published = try Registry.signing(with: [qa]) { () throws(RegistryError) in
            try t.registry.publish(app: app, appVersion: v23, bundle: Array("b()".utf8), channel: staging, actor: t.actor)
        }
        #expect(published.targetsVersion == targetsBefore, "top-level targets is not re-signed")
        let report = try await t.verify(app)
        #expect(report.ok)
        #expect(report.delegatedVersions == ["qa": 2])
        let staged = try #require(report.targets.first { $0.path == "staging/2.3/2/main.js" })
        #expect(staged.role == "qa" && staged.plaintextChecked)
        #expect(report.targets.first { $0.path == "2.3/1/main.js" }?.role == "targets")
        // Without the top-level key, production cannot be published; without the role's key, staging cannot.
        #expect(throws: RegistryError.self) { try t.publish(app, "2.3", "c()") }
        #expect(throws: RegistryError.self) {
            try t.registry.publish(app: app, appVersion: v23, bundle: Array("d()".utf8), channel: staging, actor: t.actor)
        }
    }

    @Test("a key the registry holds for the role signs a staging publish with no key given")
    func heldKeySigns() async throws {
        let (t, app, qa) = try delegated()
        try t.registry.keys.storeDelegated(qa, app: app, role: "qa")
        try removeTargetsKey(t)
        try t.registry.publish(app: app, appVersion: v23, bundle: Array("b()".utf8), channel: staging, actor: t.actor)
        #expect(try await t.verify(app).targets.contains { $0.path == "staging/2.3/2/main.js" && $0.role == "qa" })
        // Revoke and rollout in the channel are signed by the role too: qa.json drops the patch.
        try t.registry.setRollout(app: app, appVersion: v23, number: 2, percent: 40, actor: t.actor)
        #expect(try await t.verify(app).targets.first { $0.path == "staging/2.3/2/main.js" }?.rollout == 40)
        try t.registry.revoke(app: app, appVersion: v23, channel: staging, number: 2, actor: t.actor)
        let report = try await t.verify(app)
        #expect(report.ok && report.targets.map(\.path) == ["2.3/1/main.js"] && report.delegatedVersions == ["qa": 4])
    }

    @Test("attack: a production target signed by the staging role is refused by the device and by verify")
    func stagingKeyCannotSignProduction() async throws {
        let (t, app, qa) = try delegated()
        try Registry.signing(with: [qa]) { () throws(RegistryError) in
            _ = try t.registry.publish(app: app, appVersion: v23, bundle: Array("b()".utf8), channel: staging, actor: t.actor)
        }
        // The attacker holds the staging key (and the online snapshot/timestamp keys): the qa
        // role now also lists a production path, pointing at the staging bundle.
        let current = try #require(try t.registry.latestDelegatedMetadata(app: app)["qa"])
        var body = try SignedTargets(bytes: current.bytes).body
        let staged = try #require(body.targets["staging/2.3/2/main.js"])
        let forgedPath = "2.3/9/main.js"
        var custom = staged.custom?.objectValue ?? [:]
        custom["patch"] = .int(9)
        body.targets[forgedPath] = TargetFile(length: staged.length, hashes: staged.hashes, custom: .object(custom))
        body.common.version = current.version + 1
        let forged = try SignedTargets(signing: body, with: [qa]).bytes
        try t.registry.write { () throws in
            try t.registry.db.run("INSERT INTO delegated_metadata(app, role, version, bytes, expires) VALUES (?,?,?,?,?)",
                                  [.text(app.rawValue), .text("qa"), .int(body.common.version), .blob(forged), .text(TUFTime.format(body.common.expires))])
            try t.registry.resign(app: app, from: .snapshot, now: Date())
        }
        let out = try t.export(app)
        // The device: the search for the production path never consults qa, so nothing is found.
        let updater = Updater(fetcher: DirectorySource(directory: out), pinnedRoot: try t.registry.initialRoot(app: app))
        var trusted = try await updater.refresh()
        #expect(try await updater.targetInfo(path: forgedPath, in: &trusted) == nil)
        let listing = try await updater.listTargets(in: &trusted)
        #expect(!listing.found.contains { $0.path == forgedPath })
        #expect(listing.unreachable.map(\.path) == [forgedPath])
        // verify (CI's check): the repository does not verify.
        let report = try await t.verify(app)
        #expect(!report.ok)
        #expect(report.targets.first { $0.path == forgedPath }?.problem?.contains("qa") == true)
    }
}
