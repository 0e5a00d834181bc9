import Foundation
import PatchCore
import Testing
@testable import PatchClient

/// What a halt (rollout 0, as a guard sets it on forged evidence too) does on a device: the
/// patch is offered to no device that does not run it, and taken from none that does; only
/// a revoke takes it away (docs/PROTOCOL.md section 5, `Selection.choose`).
@Suite("PatchClient under a halt")
struct HaltTests {
    /// Sets patch `number`'s rollout and serves the new export.
    static func setRollout(_ device: LifecycleTests.Device, _ number: Int, _ percent: Int) throws {
        try device.fixture.registry.setRollout(app: device.fixture.demo, appVersion: device.fixture.version, number: number,
                                               percent: percent, actor: device.fixture.actor)
        device.mirror.serve(try device.fixture.exported(device.fixture.demo))
    }

    @Test("a halted patch stays installed on a device that runs it; a device that does not run it gets the previous patch; a revoke then removes it")
    func haltKeepsTheInstalledPatch() async throws {
        let device = try LifecycleTests.device()
        try device.publish()
        try device.publish()
        let running = try await installGood(device.client, number: 2, script: ClientFixture.script(device.fixture.demo, 2))
        try Self.setRollout(device, 2, 0)

        #expect(await device.client.sync(force: true) == .unchanged(running.patch), "halted, not revoked: kept")
        expectKept(device.client, running)

        let fresh = PatchClient(configuration: try device.fixture.configuration(device.fixture.demo, server: device.mirror.url, device: "device-0002"))
        #expect(await fresh.sync(force: true).updatedNumber == 1, "a device that does not run patch 2 is not offered it")

        try device.fixture.revoke(device.fixture.demo, number: 2)
        device.mirror.serve(try device.fixture.exported(device.fixture.demo))
        #expect(await device.client.sync(force: true).updatedNumber == 1, "only a revoke takes it away")
    }

    @Test("a halted patch with no older one to fall back to stays installed; a new device gets none")
    func haltOfTheOnlyPatch() async throws {
        let device = try LifecycleTests.device()
        try device.publish()
        let running = try await installGood(device.client, number: 1, script: ClientFixture.script(device.fixture.demo, 1))
        try Self.setRollout(device, 1, 0)
        #expect(await device.client.sync(force: true) == .unchanged(running.patch))
        expectKept(device.client, running)
        let fresh = PatchClient(configuration: try device.fixture.configuration(device.fixture.demo, server: device.mirror.url, device: "device-0002"))
        #expect(await fresh.sync(force: true) == .unchanged(nil))
    }

    @Test("while halted, the device's own crash protection still works: an unconfirmed halted patch rolls back to the confirmed one and stays rolled back")
    func launchRollbackWhileHalted() async throws {
        let device = try LifecycleTests.device()
        let client = device.client
        try device.publish()
        try await installGood(client, number: 1, script: ClientFixture.script(device.fixture.demo, 1))
        #expect(client.beginLaunch()?.number == 1)
        client.confirmLaunch()
        try device.publish()
        try await installGood(client, number: 2, script: ClientFixture.script(device.fixture.demo, 2))
        try Self.setRollout(device, 2, 0)
        #expect(await client.sync(force: true) == .unchanged(client.currentPatch()), "halted: patch 2 kept")

        #expect(client.beginLaunch()?.number == 2)
        #expect(client.beginLaunch()?.number == 2)
        #expect(client.beginLaunch()?.number == 1, "third unconfirmed launch: rolled back on the device")
        #expect(client.state.rolledBackThrough == 2)
        #expect(await client.sync(force: true) == .unchanged(client.currentPatch()))
        #expect(client.currentPatch()?.number == 1 && client.scriptBytes == device.script(1), "patch 2 is not reinstalled")
        try Self.setRollout(device, 2, 100)
        #expect(await client.sync(force: true) == .unchanged(client.currentPatch()), "nor when resumed: rolled back through 2")
    }
}
