import Foundation
import Testing
import PatchCore
import PatchSigning
@testable import PatchRegistry
import HotpatchTestSupport

/// The two-person rule (issue 24 item 3): production needs two of the release keys, the
/// registry holds neither, and devices check the threshold themselves.
@Suite("Two-person rule")
struct TwoPersonRuleTests {
    let v23 = try! AppVersion("2.3")

    /// An app whose targets need 2 of alice's and bob's keys (approved by both), the targets
    /// key the registry made at creation gone.
    func twoPerson(encrypted: Bool = false) throws -> (TempRegistry, AppName, SigningKey, SigningKey) {
        let t = try TempRegistry()
        let app = try t.app("demo", encrypted: encrypted)
        let alice = try SigningKey.generateEd25519()
        let bob = try SigningKey.generateEd25519()
        let pending = try pendingChange { () throws(RegistryError) in
            try t.registry.setTargetsKeys(app: app, keys: [alice.tufKey, bob.tufKey], threshold: 2, actor: t.actor)
        }
        #expect(pending.signatures.isEmpty && pending.missing == 2 && pending.change.kind == "targets-keys")
        let first = try t.registry.approve(app: app, id: pending.id, keys: [alice], actor: Actor("alice@test"))
        #expect(first.result == nil && first.change.missing == 1)
        let landed = try t.registry.approve(app: app, id: pending.id, keys: [bob], actor: Actor("bob@test"))
        #expect(landed.result != nil && landed.change.state == PendingChange.State.approved)
        return (t, app, alice, bob)
    }

    /// Runs a change that must wait, and returns what was stored.
    func pendingChange<T>(_ body: () throws(RegistryError) -> T) throws -> PendingChange {
        do {
            _ = try body()
        } catch .pending(let change) {
            return change
        }
        Issue.record("the change landed instead of waiting for signatures")
        throw RegistryError.internalError("not pending")
    }

    @Test("keys set: root v2 names both release keys with threshold 2, targets verify under it, the registry's targets key is removed")
    func keysSet() async throws {
        let (t, app, alice, bob) = try twoPerson()
        let root = try SignedRoot(bytes: try t.registry.latestMetadata(app: app, role: .root).bytes).body
        #expect(root.version == 2)
        #expect(root.roles[.targets] == RoleKeys(keyIDs: [alice.tufKey.keyID, bob.tufKey.keyID].sorted(), threshold: 2))
        let targets = try SignedTargets(bytes: try t.registry.latestMetadata(app: app, role: .targets).bytes)
        #expect(Set(targets.signatures.map(\.keyID)) == [alice.tufKey.keyID, bob.tufKey.keyID])
        let files = try FileManager.default.contentsOfDirectory(atPath: t.root.appendingPathComponent("keys/demo").path)
        #expect(!files.contains { $0.hasPrefix("targets.") })
        #expect(try await t.verify(app).rootVersion == 2)
        let actions = try t.registry.auditEvents(app: app).map(\.action)
        #expect(actions.suffix(4) == ["change.propose", "change.approve", "key.targets", "change.approve"])
    }

    @Test("a production publish with one key waits: nothing is stored, signed or served until the second key approves")
    func publishWaitsForSecondKey() async throws {
        let (t, app, alice, bob) = try twoPerson()
        let before = try t.snapshot()
        let pending = try pendingChange { () throws(RegistryError) in
            try Registry.signing(with: [alice]) { () throws(RegistryError) in
                try t.registry.publish(app: app, appVersion: v23, bundle: Array("a()".utf8), actor: Actor("alice@test"))
            }
        }
        #expect(pending.signatures.map(\.keyID) == [alice.tufKey.keyID] && pending.missing == 1)
        // Only the proposal's audit event is new: no patch, no metadata version, no blob.
        let after = try t.snapshot()
        #expect(after.count == before.count + 1 && Array(after.prefix(before.count - 4)) == Array(before.prefix(before.count - 4)))
        #expect(try t.registry.patches(app: app, appVersion: nil, activeOnly: false).isEmpty)
        #expect(try await t.verify(app).targets.isEmpty)
        #expect(try t.registry.pendingChanges(app: app).map(\.id) == [pending.id])
        let approval = try t.registry.approve(app: app, id: pending.id, keys: [bob], actor: Actor("bob@test"))
        #expect(approval.change.state == .approved && approval.result?["patch"]?.intValue == 1)
        let report = try await t.verify(app)
        #expect(report.ok && report.targets.map(\.path) == ["2.3/1/main.js"])
        #expect(try t.registry.pendingChanges(app: app).isEmpty)
        // The publish is recorded as the proposer's, at the proposal's time.
        let publish = try #require(try t.registry.auditEvents(app: app).last { $0.action == "patch.publish" })
        #expect(publish.actor == "alice@test")
    }

    @Test("refused approvals record nothing: a key not of the role, the same key twice, a signature over other bytes, a rejected change")
    func refusedApprovals() throws {
        let (t, app, alice, bob) = try twoPerson()
        let pending = try pendingChange { () throws(RegistryError) in
            try Registry.signing(with: [alice]) { () throws(RegistryError) in
                try t.registry.publish(app: app, appVersion: v23, bundle: Array("a()".utf8), actor: t.actor)
            }
        }
        let before = try t.snapshot()
        let stranger = try SigningKey.generateEd25519()
        #expect { try t.registry.approve(app: app, id: pending.id, keys: [stranger], actor: t.actor) } throws: { error in
            guard case RegistryError.invalidInput(let m) = error else { return false }
            return m.contains("not a key of the targets role")
        }
        #expect { try t.registry.approve(app: app, id: pending.id, keys: [alice], actor: t.actor) } throws: { error in
            guard case RegistryError.conflict(let m) = error else { return false }
            return m.contains("already signed")
        }
        let wrong = TUFSignature(keyID: bob.tufKey.keyID, signature: try bob.signature(for: Array("something else".utf8)))
        #expect { try t.registry.approve(app: app, id: pending.id, signatures: [wrong], actor: t.actor) } throws: { error in
            guard case RegistryError.invalidInput(let m) = error else { return false }
            return m.contains("does not verify")
        }
        #expect(try t.snapshot() == before)
        #expect(try t.registry.pendingChange(app: app, id: pending.id).signatures.count == 1)
        try t.registry.reject(app: app, id: pending.id, reason: "wrong bundle", actor: t.actor)
        #expect(throws: RegistryError.self) { try t.registry.approve(app: app, id: pending.id, keys: [bob], actor: t.actor) }
        #expect(try t.registry.patches(app: app, appVersion: nil, activeOnly: false).isEmpty)
        #expect(try t.registry.pendingChange(app: app, id: pending.id).state == .rejected)
    }

    @Test("a change proposed against targets that moved on is superseded: approving it is a conflict and changes nothing")
    func staleProposal() throws {
        let (t, app, alice, bob) = try twoPerson()
        func propose(_ text: String) throws -> PendingChange {
            try pendingChange { () throws(RegistryError) in
                try Registry.signing(with: [alice]) { () throws(RegistryError) in
                    try t.registry.publish(app: app, appVersion: v23, bundle: Array(text.utf8), actor: t.actor)
                }
            }
        }
        let first = try propose("a()")
        let second = try propose("b()")
        try t.registry.approve(app: app, id: first.id, keys: [bob], actor: t.actor)
        #expect(try t.registry.pendingChange(app: app, id: second.id).state == .superseded)
        let before = try t.snapshot()
        #expect(throws: RegistryError.self) { try t.registry.approve(app: app, id: second.id, keys: [bob], actor: t.actor) }
        #expect(try t.snapshot() == before)
        #expect(try t.registry.patches(app: app, appVersion: nil, activeOnly: false).map(\.number) == [1])
    }

    @Test("revoke and rollout wait too, and land with the second key; a dry run stores nothing")
    func revokeAndRolloutWait() async throws {
        let (t, app, alice, bob) = try twoPerson()
        func land<T>(_ body: () throws(RegistryError) -> T) throws {
            let pending = try pendingChange { () throws(RegistryError) in try Registry.signing(with: [alice], body) }
            try t.registry.approve(app: app, id: pending.id, keys: [bob], actor: t.actor)
        }
        try land { () throws(RegistryError) in try t.registry.publish(app: app, appVersion: v23, bundle: Array("a()".utf8), actor: t.actor) }
        try land { () throws(RegistryError) in try t.registry.setRollout(app: app, appVersion: v23, number: 1, percent: 30, actor: t.actor) }
        #expect(try await t.verify(app).targets.first?.rollout == 30)
        let before = try t.snapshot()
        #expect { try t.registry.revoke(app: app, appVersion: v23, number: 1, dryRun: true, actor: t.actor) } throws: { error in
            guard case RegistryError.signaturesNeeded(let request) = error else { return false }
            return request.threshold == 2 && request.signatures.isEmpty
        }
        #expect(try t.snapshot() == before && t.registry.pendingChanges(app: app).isEmpty)
        try land { () throws(RegistryError) in try t.registry.revoke(app: app, appVersion: v23, number: 1, actor: t.actor) }
        #expect(try await t.verify(app).targets.isEmpty)
        #expect(try t.registry.patches(app: app, appVersion: nil, activeOnly: false).first?.state == .revoked)
    }

    @Test("an encrypted publish serves the ciphertext its signers signed the hashes of, and decrypts")
    func encryptedPublish() async throws {
        let (t, app, alice, bob) = try twoPerson(encrypted: true)
        let pending = try pendingChange { () throws(RegistryError) in
            try Registry.signing(with: [alice]) { () throws(RegistryError) in
                try t.registry.publish(app: app, appVersion: v23, bundle: Array("secret()".utf8), actor: t.actor)
            }
        }
        let signedHash = pending.request.signed["targets"]?["2.3/1/main.js"]?["hashes"]?["sha256"]?.stringValue
        try t.registry.approve(app: app, id: pending.id, keys: [bob], actor: t.actor)
        let patch = try #require(try t.registry.patches(app: app, appVersion: nil, activeOnly: false).first)
        #expect(patch.served.sha256 == signedHash)
        let report = try await t.verify(app, contentKey: try t.registry.keys.contentKey(app: app))
        #expect(report.ok && report.targets.first?.plaintextChecked == true)
    }

    @Test("attack: targets signed by one release key, pinned by a server holding every online key, is refused by the device and by verify")
    func deviceRefusesOneSignature() async throws {
        let (t, app, alice, _) = try twoPerson()
        // The attacker: alice's key (a rogue release engineer) and the server, whose snapshot
        // and timestamp keys pin whatever it stores.
        let current = try SignedTargets(bytes: try t.registry.latestMetadata(app: app, role: .targets).bytes).body
        var body = current
        body.common.version += 1
        let bundle = Array("evil()".utf8)
        body.targets["2.3/1/main.js"] = TargetFile(length: bundle.count, hashes: ["sha256": Digest.sha256Hex(bundle), "md5": Digest.md5Hex(bundle)],
                                                   custom: PatchTargetInfo(appVersion: v23, channel: .production, patch: 1, rollout: 100,
                                                                           published: TUFTime.format(Date()), plaintext: BundleDigests(of: bundle),
                                                                           encryption: nil, message: nil, promotedFrom: nil).custom)
        let forged = try SignedTargets(signing: body, with: [alice]).bytes
        try t.registry.write { () throws in
            try t.registry.db.run("INSERT INTO blobs(sha256, bytes) VALUES (?, ?)", [.text(Digest.sha256Hex(bundle)), .blob(bundle)])
            try t.registry.storeMetadata(app: app, role: .targets, version: body.common.version, bytes: forged, expires: body.common.expires)
            try t.registry.resign(app: app, from: .snapshot, now: Date())
        }
        let out = try t.export(app)
        let updater = Updater(fetcher: DirectorySource(directory: out), pinnedRoot: try t.registry.initialRoot(app: app))
        await #expect { _ = try await updater.refresh() } throws: { error in
            guard case UpdateError.verification(.unsignedThreshold(let role, let valid, let threshold)) = error else { return false }
            return role == "targets" && valid == 1 && threshold == 2
        }
        await #expect(throws: (any Error).self) { _ = try await t.verify(app) }
    }

    @Test("a delegated channel whose key is elsewhere waits for the role's key holder, then lands signed by the role")
    func delegatedKeyElsewhere() async throws {
        let t = try TempRegistry()
        let app = try t.app("demo", channels: ["staging"])
        let staging = try ChannelName("staging")
        let qa = try SigningKey.generateEd25519()
        try t.registry.delegate(app: app, channel: staging, role: "qa", keys: [qa.tufKey], signingKeys: [qa], actor: t.actor)
        let pending = try pendingChange { () throws(RegistryError) in
            try t.registry.publish(app: app, appVersion: v23, bundle: Array("q()".utf8), channel: staging, actor: t.actor)
        }
        #expect(pending.request.role == "qa" && pending.request.threshold == 1 && pending.signatures.isEmpty)
        let signature = TUFSignature(keyID: qa.tufKey.keyID, signature: try qa.signature(for: pending.request.signed.canonicalBytes))
        let approval = try t.registry.approve(app: app, id: pending.id, signatures: [signature], actor: t.actor)
        #expect(approval.result != nil)
        let report = try await t.verify(app)
        #expect(report.ok && report.targets.first { $0.path == "staging/2.3/1/main.js" }?.role == "qa")
    }

    @Test("a guard on a two-person app proposes its halt once, waiting for the release keys; approved, the patch is halted")
    func guardHaltWaits() throws {
        let (t, app, alice, bob) = try twoPerson()
        let pending = try pendingChange { () throws(RegistryError) in
            try Registry.signing(with: [alice]) { () throws(RegistryError) in
                try t.registry.publish(app: app, appVersion: v23, bundle: Array("a()".utf8), rollout: 50, actor: t.actor)
            }
        }
        try t.registry.approve(app: app, id: pending.id, keys: [bob], actor: t.actor)
        try t.registry.setGuard(app: app, maxRollbackPPM: 20_000, minDevices: 50, action: .halt, actor: t.actor)
        let touched = try feed(t, app, devices: 0..<60, rolledBack: 10)
        let targetsBefore = try t.registry.latestMetadata(app: app, role: .targets).version
        #expect(try t.registry.enforceGuards(app: app, patches: touched).isEmpty, "nothing lands without the release keys")
        #expect(try t.registry.enforceGuards(app: app, patches: touched).isEmpty)
        let halts = try t.registry.pendingChanges(app: app)
        #expect(halts.count == 1, "the second pass finds the same change waiting")
        let halt = try #require(halts.first)
        #expect(halt.change.kind == "halt" && halt.change.summary == "halt 2.3 patch 1" && halt.proposedBy == "patchd guard" && halt.signatures.isEmpty)
        #expect(try t.registry.latestMetadata(app: app, role: .targets).version == targetsBefore)
        try t.registry.approve(app: app, id: halt.id, keys: [alice, bob], actor: t.actor)
        #expect(try t.registry.serving(app: app, appVersion: v23).delivery[1] == .halted)
        #expect(try t.registry.enforceGuards(app: app, patches: touched).isEmpty && t.registry.pendingChanges(app: app).isEmpty)
    }

    @Test("at most maxPendingChanges changes of an app wait at once: the next proposal is refused and stores nothing; the same change again is the one waiting")
    func pendingIsBounded() throws {
        let (t, app, alice, _) = try twoPerson()
        func propose(_ text: String) throws(RegistryError) {
            _ = try Registry.signing(with: [alice]) { () throws(RegistryError) in
                try t.registry.publish(app: app, appVersion: v23, bundle: Array(text.utf8), actor: t.actor)
            }
        }
        for i in 0..<Registry.maxPendingChanges {
            #expect(throws: RegistryError.self) { try propose("p\(i)()") }
        }
        #expect(try t.registry.pendingChanges(app: app).count == Registry.maxPendingChanges)
        let before = try t.snapshot()
        #expect { try propose("one-more()") } throws: { error in
            guard case RegistryError.conflict(let m) = error else { return false }
            return m.contains("approve or reject some")
        }
        #expect(try t.snapshot() == before)
        #expect { try propose("p0()") } throws: { error in
            guard case RegistryError.pending(let change) = error else { return false }
            return change.id == 2
        }
    }
}
