import Foundation
import Testing
import PatchCore
import PatchSigning
@testable import PatchRegistry
import HotpatchTestSupport

/// A delegated role's keys over its life: rotated, several with a threshold, kept fresh,
/// and the delegation ended (issue 24, item 2).
@Suite("Delegated channel keys: rotation, thresholds, undelegation")
struct DelegationLifecycleTests {
    let v23 = try! AppVersion("2.3")
    let staging = try! ChannelName("staging")

    /// An app with production patch 1, staging delegated to `qa` with `keys` (given, not
    /// stored) and staging patch 2 published with them.
    func delegated(_ keys: [SigningKey], threshold: Int = 1) throws -> (TempRegistry, AppName) {
        let t = try TempRegistry()
        let app = try t.app("demo", channels: ["staging"])
        try t.publish(app, "2.3", "a()")
        try t.registry.delegate(app: app, channel: staging, role: "qa", keys: keys.map(\.tufKey), threshold: threshold, signingKeys: keys, actor: t.actor)
        try Registry.signing(with: keys) { () throws(RegistryError) in try t.registry.publish(app: app, appVersion: v23, bundle: Array("b()".utf8), channel: staging, actor: t.actor) }
        return (t, app)
    }

    /// What an attacker holding `signers` (and the online snapshot/timestamp keys) can make:
    /// the next qa.json, listing one more staging path, signed by `signers`, and a snapshot
    /// pinning it. Returns the forged path.
    func forgeRole(_ t: TempRegistry, _ app: AppName, signedBy signers: [SigningKey]) throws -> String {
        let current = try #require(try t.registry.latestDelegatedMetadata(app: app)["qa"])
        var body = try SignedTargets(bytes: current.bytes).body
        let staged = try #require(body.targets.sorted { $0.key < $1.key }.first?.value)
        var custom = staged.custom?.objectValue ?? [:]
        custom["patch"] = .int(9)
        let forgedPath = "staging/2.3/9/main.js"
        body.targets[forgedPath] = TargetFile(length: staged.length, hashes: staged.hashes, custom: .object(custom))
        body.common.version = current.version + 1
        let forged = try SignedTargets(signing: body, with: signers).bytes
        try t.registry.write { () throws in
            try t.registry.db.run("INSERT INTO delegated_metadata(app, role, version, bytes, expires) VALUES (?,?,?,?,?)",
                                  [.text(app.rawValue), .text("qa"), .int(body.common.version), .blob(forged), .text(TUFTime.format(body.common.expires))])
            try t.registry.resign(app: app, from: .snapshot, now: Date())
        }
        return forgedPath
    }

    /// A device's search for `path` in a fresh export: the entry, or the error it refused with.
    func deviceLooksUp(_ t: TempRegistry, _ app: AppName, _ path: String) async throws -> Result<FoundTarget?, UpdateError> {
        let updater = Updater(fetcher: DirectorySource(directory: try t.export(app)), pinnedRoot: try t.registry.initialRoot(app: app))
        var trusted = try await updater.refresh()
        do throws(UpdateError) { return .success(try await updater.targetInfo(path: path, in: &trusted)) } catch { return .failure(error) }
    }

    @Test("--replace: the delegator lists only the new key, the role is re-signed by it, and the device refuses what the old key signs")
    func rotationRefusesTheOldKey() async throws {
        let old = try SigningKey.generateEd25519(), new = try SigningKey.generateEd25519()
        let (t, app) = try delegated([old])
        try t.registry.keys.storeDelegated(old, app: app, role: "qa")
        let targetsBefore = try t.registry.latestMetadata(app: app, role: .targets).version
        let change = try t.registry.delegate(app: app, channel: staging, role: "qa", keys: [new.tufKey], signingKeys: [new], replace: true, actor: t.actor)
        #expect(change.replaced && change.replacedKeyIDs == [old.tufKey.keyID])
        #expect(try t.registry.latestMetadata(app: app, role: .targets).version == targetsBefore + 1)
        let role = try #require(try t.targets(app).delegations?.roles.first)
        #expect(role.keyIDs == [new.tufKey.keyID])
        #expect(!FileManager.default.fileExists(atPath: t.registry.keys.delegatedKeyURL(app: app, role: "qa", keyID: old.tufKey.keyID).path),
                "the registry's copy of the replaced key is gone")
        let report = try await t.verify(app)
        #expect(report.ok && report.delegatedVersions == ["qa": 3])
        #expect(report.targets.first { $0.path == "staging/2.3/2/main.js" }?.role == "qa")
        // The old key signs nothing the registry takes, and a publish goes on with the new one.
        #expect(throws: RegistryError.self) {
            try Registry.signing(with: [old]) { () throws(RegistryError) in try t.registry.publish(app: app, appVersion: v23, bundle: Array("c()".utf8), channel: staging, actor: t.actor) }
        }
        try Registry.signing(with: [new]) { () throws(RegistryError) in try t.registry.publish(app: app, appVersion: v23, bundle: Array("c()".utf8), channel: staging, actor: t.actor) }
        #expect(try await t.verify(app).ok)
        // Attack: whoever kept the old staging key signs the role's next version.
        let forged = try forgeRole(t, app, signedBy: [old])
        guard case .failure(.verification) = try await deviceLooksUp(t, app, forged) else {
            Issue.record("the device took qa.json signed by the replaced key"); return
        }
        #expect(((try? await t.verify(app))?.ok ?? false) == false)
    }

    @Test("threshold 2: the role's metadata needs two of its keys; one signature is refused by the device")
    func thresholdTwo() async throws {
        let a = try SigningKey.generateEd25519(), b = try SigningKey.generateEd25519(), c = try SigningKey.generateEd25519()
        let (t, app) = try delegated([a, b, c], threshold: 2)
        let role = try #require(try t.targets(app).delegations?.roles.first)
        #expect(role.threshold == 2 && role.keyIDs.count == 3)
        let signatures = try SignedTargets(bytes: try #require(try t.registry.latestDelegatedMetadata(app: app)["qa"]).bytes).signatures
        #expect(signatures.count == 2)
        #expect(try await t.verify(app).ok)
        #expect(try await deviceLooksUp(t, app, "staging/2.3/2/main.js").get()?.role == "qa")
        // One key holder alone cannot publish, here or by forging the file.
        #expect(throws: RegistryError.self) {
            try Registry.signing(with: [a]) { () throws(RegistryError) in try t.registry.publish(app: app, appVersion: v23, bundle: Array("c()".utf8), channel: staging, actor: t.actor) }
        }
        let forged = try forgeRole(t, app, signedBy: [a])
        guard case .failure(.verification) = try await deviceLooksUp(t, app, forged) else {
            Issue.record("the device took qa.json with one signature of a threshold-2 role"); return
        }
        // Two signatures: accepted.
        let two = try forgeRole(t, app, signedBy: [a, c])
        #expect(try await deviceLooksUp(t, app, two).get()?.role == "qa")
    }

    @Test("bad delegations are refused and change nothing: threshold above the keys, --replace of an undelegated channel, a second role, the same keys again")
    func refusals() throws {
        let a = try SigningKey.generateEd25519(), b = try SigningKey.generateEd25519()
        let (t, app) = try delegated([a])
        let beta = try ChannelName("beta")
        // Declared, so each refusal below is the one it names, not an unknown channel.
        try t.registry.declareChannel(app: app, channel: beta, actor: t.actor)
        let before = try t.snapshot()
        #expect(throws: RegistryError.self) { try t.registry.delegate(app: app, channel: beta, role: "b", keys: [b.tufKey], threshold: 2, signingKeys: [b], actor: t.actor) }
        #expect(throws: RegistryError.self) { try t.registry.delegate(app: app, channel: beta, role: "b", keys: [b.tufKey], signingKeys: [b], replace: true, actor: t.actor) }
        #expect(throws: RegistryError.self) { try t.registry.delegate(app: app, channel: staging, role: "qa", keys: [b.tufKey], signingKeys: [b], actor: t.actor) }
        #expect(throws: RegistryError.self) { try t.registry.delegate(app: app, channel: staging, role: "qa2", keys: [b.tufKey], signingKeys: [b], replace: true, actor: t.actor) }
        #expect(throws: RegistryError.self) { try t.registry.delegate(app: app, channel: staging, role: "qa", keys: [a.tufKey], signingKeys: [a], replace: true, actor: t.actor) }
        #expect(throws: RegistryError.self) { try t.registry.undelegate(app: app, channel: beta, actor: t.actor) }
        #expect(try t.snapshot() == before)
        // A rotation to a key that is not here waits for its holder's signature: nothing served changes.
        #expect { try t.registry.delegate(app: app, channel: staging, role: "qa", keys: [b.tufKey], replace: true, actor: t.actor) } throws: { error in
            guard case RegistryError.pending(let change) = error else { return false }
            return change.request.role == "qa" && change.request.keys.keys.sorted() == [b.tufKey.keyID]
        }
        #expect(try t.snapshot().count == before.count + 1, "only the proposal's audit event")
        #expect(try t.registry.delegations(app: app).map { $0.keys.keys.sorted() } == [[a.tufKey.keyID]])
    }

    @Test("undelegate: staging's targets return to top-level targets, qa.json stays in snapshot, and a device that trusted the role follows")
    func undelegateDevicesFollow() async throws {
        let qa = try SigningKey.generateEd25519()
        let (t, app) = try delegated([qa])
        try t.registry.keys.storeDelegated(qa, app: app, role: "qa")
        // A device syncs the delegated repository and keeps its metadata.
        let served = t.root.appendingPathComponent("served", isDirectory: true)
        let cache = MetadataCache(directory: t.root.appendingPathComponent("device-cache", isDirectory: true))
        try FileManager.default.createDirectory(at: t.root.appendingPathComponent("device-cache"), withIntermediateDirectories: true)
        let root = try t.registry.initialRoot(app: app)
        func sync() async throws -> FoundTarget? {
            let appRoot = try t.registry.export(app: app, to: served).appRoot
            let updater = Updater(fetcher: DirectorySource(directory: appRoot), pinnedRoot: root, cache: cache)
            var trusted = try await updater.refresh()
            return try await updater.targetInfo(path: "staging/2.3/2/main.js", in: &trusted)
        }
        #expect(try await sync()?.role == "qa")
        let record = try t.registry.undelegate(app: app, channel: staging, actor: t.actor)
        #expect(record.name == "qa")
        #expect(try t.targets(app).delegations == nil)
        #expect(try t.targets(app).targets["staging/2.3/2/main.js"] != nil)
        let snapshot = try SignedSnapshot(bytes: try t.registry.latestMetadata(app: app, role: .snapshot).bytes).body
        #expect(snapshot.meta["qa.json"]?.version == 2, "the role's last version stays pinned")
        #expect(!FileManager.default.fileExists(atPath: t.registry.keys.delegatedKeyURL(app: app, role: "qa", keyID: qa.tufKey.keyID).path))
        #expect(try await sync()?.role == "targets", "the device that trusted qa follows the top-level targets")
        // The top-level key signs staging again; a publish there needs no role key.
        try t.registry.publish(app: app, appVersion: v23, bundle: Array("c()".utf8), channel: staging, actor: t.actor)
        let report = try await t.verify(app)
        #expect(report.ok && report.targets.filter { $0.path.hasPrefix("staging/") }.allSatisfy { $0.role == "targets" })
        #expect(try t.registry.auditEvents(app: app).last(where: { $0.action.hasPrefix("keys.") })?.action == "keys.undelegate")
        // Delegating staging again takes the name up; its versions go on.
        #expect(throws: RegistryError.self) { try t.registry.delegate(app: app, channel: staging, role: "qa2", keys: [qa.tufKey], signingKeys: [qa], actor: t.actor) }
        try t.registry.delegate(app: app, channel: staging, role: "qa", keys: [qa.tufKey], signingKeys: [qa], actor: t.actor)
        #expect(try t.registry.latestDelegatedMetadata(app: app)["qa"]?.version == 3)
        #expect(try await sync()?.role == nil, "patch 3 at 100 % supersedes patch 2 in the role's listing")
        #expect(try await t.verify(app).ok)
    }

    @Test("refreshExpiring and export re-sign a delegated role near expiry with the key the registry holds; without it the rest stays fresh")
    func refreshResignsTheRole() async throws {
        let qa = try SigningKey.generateEd25519()
        let (t, app) = try delegated([qa])
        try t.registry.keys.storeDelegated(qa, app: app, role: "qa")
        let later = Date().addingTimeInterval(t.registry.expiry.targets * 0.75)
        let refresh = try t.registry.refreshExpiring(app: app, now: later)
        #expect(refresh.delegated == ["qa"] && refresh.failure == nil)
        let latest = try #require(try t.registry.latestDelegatedMetadata(app: app)["qa"])
        #expect(latest.version == 3)
        #expect(try SignedTargets(bytes: latest.bytes).body.expires > later.addingTimeInterval(t.registry.expiry.targets / 2))
        let snapshot = try SignedSnapshot(bytes: try t.registry.latestMetadata(app: app, role: .snapshot).bytes).body
        #expect(snapshot.meta["qa.json"]?.version == 3)
        // Nothing due: nothing re-signed.
        #expect(try t.registry.refreshExpiring(app: app, now: later).delegated.isEmpty)
        // An export for 60 days re-signs the role to last that long too.
        let out = t.root.appendingPathComponent("long")
        try t.registry.export(app: app, to: out, timestampLifetime: 60 * 86_400, now: later)
        let extended = try #require(try t.registry.latestDelegatedMetadata(app: app)["qa"])
        #expect(try SignedTargets(bytes: extended.bytes).body.expires >= later.addingTimeInterval(60 * 86_400))
        // The role's key is not here: the failure is reported, and timestamp still refreshed.
        try FileManager.default.removeItem(at: t.registry.keys.delegatedKeyURL(app: app, role: "qa", keyID: qa.tufKey.keyID))
        let muchLater = later.addingTimeInterval(80 * 86_400)
        let failed = try t.registry.refreshExpiring(app: app, now: muchLater)
        #expect(failed.delegated.isEmpty)
        guard case .signaturesNeeded(let request)? = failed.failure, request.role == "qa" else {
            Issue.record("no failure for want of qa's key: \(String(describing: failed.failure))"); return
        }
        #expect(failed.roles.contains(.timestamp))
    }
}
