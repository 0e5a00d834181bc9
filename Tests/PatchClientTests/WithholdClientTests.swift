import Foundation
import PatchCore
import PatchSigning
import Testing
@testable import PatchClient
@testable import PatchRegistry

/// What devices do with the withhold role (issue 44, part 1): read in the same update as the
/// rest of the metadata, a halt keeps the patch where it runs and offers it to no one, a
/// roll-back drops it for the newest patch not withheld and says why.
@Suite("PatchClient under a withhold")
struct WithholdClientTests {
    /// A device of the demo app, whose registry has a withhold role with a key it holds.
    static func device(_ id: String = "device-0001") throws -> LifecycleTests.Device {
        let device = try LifecycleTests.device(id)
        let key = try SigningKey.generateEd25519()
        try device.fixture.registry.keys.storeDelegated(key, app: device.fixture.demo, role: Withholds.roleName)
        try device.fixture.registry.setWithholdRole(app: device.fixture.demo, keys: [key.tufKey], actor: device.fixture.actor)
        return device
    }

    /// Withholds patch `number` through the role and serves the new export.
    static func withhold(_ device: LifecycleTests.Device, _ number: Int, rollBack: Bool, reason: String = "crash in checkout") throws {
        let f = device.fixture
        let registry = f.registry
        try registry.write { () throws in
            let role = try #require(try registry.withholdRole(app: f.demo))
            let patch = try #require(try registry.patches(app: f.demo, appVersion: f.version, activeOnly: true).first { $0.number == number })
            _ = try registry.withholdRows([patch], role: role, rollBack: rollBack, reason: reason, app: f.demo, actor: f.actor, now: Date())
        }
        device.mirror.serve(try f.exported(f.demo))
    }

    @Test("halt: the device that runs patch 2 keeps it; a new device gets patch 1, the fallback targets keep listing")
    func halt() async throws {
        let device = try Self.device()
        try device.publish()
        try device.publish()
        let running = try await installGood(device.client, number: 2, script: ClientFixture.script(device.fixture.demo, 2))
        try Self.withhold(device, 2, rollBack: false)
        #expect(await device.client.sync(force: true) == .unchanged(running.patch))
        let fresh = PatchClient(configuration: try device.fixture.configuration(device.fixture.demo, server: device.mirror.url, device: "device-0002"))
        #expect(await fresh.sync(force: true).updatedNumber == 1, "patch 2 is offered to no device")
    }

    @Test("roll-back: the device drops patch 2 for patch 1 and reports rolledBack with the withhold's reason; it is not installed again")
    func rollBack() async throws {
        let device = try Self.device()
        try device.publish()
        try device.publish()
        _ = try await installGood(device.client, number: 2, script: ClientFixture.script(device.fixture.demo, 2))
        try Self.withhold(device, 2, rollBack: true, reason: "crash in checkout")
        #expect(await device.client.sync(force: true).updatedNumber == 1)
        #expect(device.client.scriptBytes == device.script(1))
        let event = try #require(device.client.pendingReports.last { $0.type == .rolledBack })
        #expect(event.patch == 2 && event.reason == "withheld: crash in checkout")
        #expect(await device.client.sync(force: true) == .unchanged(device.client.currentPatch()))
    }

    @Test("a withhold file signed by a key the role does not list is refused like any metadata: the sync fails and nothing changes")
    func forgedFile() async throws {
        let device = try Self.device()
        try device.publish()
        let running = try await installGood(device.client, number: 1, script: ClientFixture.script(device.fixture.demo, 1))
        // Someone with the snapshot and timestamp keys (patchd's) but not the withhold key; the
        // file outlives the export's refresh, which would re-sign the role with its own key.
        let f = device.fixture
        let stranger = try SigningKey.generateEd25519()
        let registry = f.registry
        try registry.write { () throws in
            let patch = try #require(try registry.patches(app: f.demo, appVersion: f.version, activeOnly: true).first)
            let sha = try #require(try registry.listedTargets(app: f.demo, fallback: true) { _ in true }[patch.targetPath]?.hashes["sha256"])
            let body = Withholds(entries: [patch.targetPath: .init(sha256: sha, rollBack: true, reason: "forged")]).body(version: 9, expires: Date().addingTimeInterval(300 * 86_400))
            let bytes = try SignedTargets(signing: body, with: [stranger]).bytes
            try registry.db.run("INSERT INTO delegated_metadata(app, role, version, bytes, expires) VALUES (?,?,?,?,?)",
                                [.text(f.demo.rawValue), .text(Withholds.roleName), .int(9), .blob(bytes), .text(TUFTime.format(body.common.expires))])
            try registry.resign(app: f.demo, from: .snapshot, now: Date())
        }
        device.mirror.serve(try f.exported(f.demo))
        let outcome = await device.client.sync(force: true)
        guard case .failed = outcome else { Issue.record("a forged withhold was accepted: \(outcome)"); return }
        #expect(device.client.currentPatch() == running.patch)
    }
}
