import Foundation
import PatchCore
import PatchRegistry
import Testing
@testable import PatchClient

/// What a device does over time: launch confirmation and automatic rollback, revocation,
/// never going back to a lower patch number, and surviving a kill in the middle of an install.
@Suite("PatchClient patch lifecycle")
struct LifecycleTests {
    struct Device {
        let fixture: ClientFixture
        let mirror: Mirror
        let client: PatchClient

        /// Publishes the next patch and serves the new export.
        @discardableResult
        func publish(rollout: Int = 100) throws -> PatchRecord {
            let record = try fixture.publish(fixture.demo, rollout: rollout)
            mirror.serve(try fixture.exported(fixture.demo))
            return record
        }

        func script(_ number: Int) -> [UInt8] { Array(ClientFixture.script(fixture.demo, number).utf8) }
    }

    static func device(_ id: String = "device-0001") throws -> Device {
        let fixture = try ClientFixture()
        let mirror = try Mirror()
        let client = PatchClient(configuration: try fixture.configuration(fixture.demo, server: mirror.url, device: id))
        return Device(fixture: fixture, mirror: mirror, client: client)
    }

    @Test("an unconfirmed patch is rolled back to the confirmed one at the third launch and not reinstalled; a newer one is")
    func launchConfirmationAndRollback() async throws {
        let device = try Self.device()
        let client = device.client
        try device.publish()
        try await installGood(client, number: 1, script: ClientFixture.script(device.fixture.demo, 1))
        #expect(client.beginLaunch()?.number == 1)
        client.confirmLaunch()
        #expect(client.currentPatch()?.confirmed == true)

        try device.publish()
        try await installGood(client, number: 2, script: ClientFixture.script(device.fixture.demo, 2))
        #expect(client.beginLaunch()?.number == 2, "first launch of patch 2")
        #expect(client.beginLaunch()?.number == 2, "second launch, still unconfirmed")
        let third = client.beginLaunch()
        #expect(third?.number == 1, "third launch: rolled back")
        #expect(third?.confirmed == true)
        #expect(client.currentPatch()?.number == 1)
        #expect(client.scriptBytes == device.script(1))
        #expect(client.state.rolledBackThrough == 2)
        #expect(client.pendingReports.last.map { [$0.type.rawValue, "\($0.patch ?? 0)"] } == ["rolledBack", "2"], "the rollback is reported")

        // Patch 2 is still the newest: not installed again.
        let again = await client.sync(force: true)
        #expect(again == .unchanged(client.currentPatch()))
        #expect(client.currentPatch()?.number == 1)
        #expect(client.scriptBytes == device.script(1))

        // A newer number is.
        try device.publish()
        try await installGood(client, number: 3, script: ClientFixture.script(device.fixture.demo, 3))
    }

    @Test("a patch never confirmed, with none confirmed before, is removed at the third launch")
    func rollbackWithoutConfirmedPatchRemovesScript() async throws {
        let device = try Self.device()
        try device.publish()
        try await installGood(device.client, number: 1, script: ClientFixture.script(device.fixture.demo, 1))
        device.client.beginLaunch()
        device.client.beginLaunch()
        #expect(device.client.beginLaunch() == nil)
        #expect(device.client.currentPatch() == nil)
        #expect(device.client.scriptBytes == nil)
        #expect(await device.client.sync(force: true) == .unchanged(nil), "the rolled-back patch 1 is not retried")
    }

    @Test("revoking the installed patch 2 while patch 1 is listed: the client follows the signed targets back to 1")
    func revokedNewestFallsBackToListedPatch() async throws {
        let device = try Self.device()
        let client = device.client
        try device.publish()
        try await installGood(client, number: 1, script: ClientFixture.script(device.fixture.demo, 1))
        try device.publish()
        try await installGood(client, number: 2, script: ClientFixture.script(device.fixture.demo, 2))

        try device.fixture.revoke(device.fixture.demo, number: 2)
        device.mirror.serve(try device.fixture.exported(device.fixture.demo))
        #expect(Set(try device.fixture.latestTargets(device.fixture.demo).body.targets.keys) == ["2.3/1/main.js"])
        // The publisher revoked 2: the device runs what the fresh signed targets offer, patch 1.
        #expect(await client.sync(force: true).updatedNumber == 1)
        #expect(client.currentPatch()?.number == 1)
        #expect(client.scriptBytes == Array(ClientFixture.script(device.fixture.demo, 1).utf8))
        #expect(await client.sync(force: true) == .unchanged(client.currentPatch()))

        try device.publish()
        try await installGood(client, number: 3, script: ClientFixture.script(device.fixture.demo, 3))
    }

    @Test("revoking every patch of the version: .removed and main.js deleted")
    func revokeAllRemoves() async throws {
        let device = try Self.device()
        try device.publish()
        try await installGood(device.client, number: 1, script: ClientFixture.script(device.fixture.demo, 1))
        try device.fixture.registry.revoke(app: device.fixture.demo, appVersion: device.fixture.version, number: nil, actor: device.fixture.actor)
        device.mirror.serve(try device.fixture.exported(device.fixture.demo))
        #expect(await device.client.sync(force: true) == .removed)
        #expect(device.client.currentPatch() == nil)
        #expect(device.client.scriptBytes == nil)
    }

    @Test("a device taken out of a reduced rollout keeps the patch it has: no downgrade while it is listed (PROTOCOL.md section 5)")
    func reducedRolloutKeepsInstalledPatch() async throws {
        // A device inside a 50% rollout of patch 2 but outside 10%.
        let id = try #require((0..<1000).map { "device-\($0)" }.first { id in
            let bucket = Rollout.bucket(app: "demo", appVersion: "2.3", patch: 2, deviceID: id)
            return bucket >= 10 && bucket < 50
        })
        let device = try Self.device(id)
        try device.publish()
        try await installGood(device.client, number: 1, script: ClientFixture.script(device.fixture.demo, 1))
        try device.publish(rollout: 50)
        try await installGood(device.client, number: 2, script: ClientFixture.script(device.fixture.demo, 2))

        try device.fixture.registry.setRollout(app: device.fixture.demo, appVersion: device.fixture.version, number: 2, percent: 10, actor: device.fixture.actor)
        device.mirror.serve(try device.fixture.exported(device.fixture.demo))
        #expect(Set(try device.fixture.latestTargets(device.fixture.demo).body.targets.keys) == ["2.3/1/main.js", "2.3/2/main.js"])
        let outcome = await device.client.sync(force: true)
        #expect(outcome == .unchanged(device.client.currentPatch()), "got \(outcome)")
        #expect(device.client.currentPatch()?.number == 2)
    }

    // MARK: Crash safety

    /// Patch 1 installed by a sync; patch 2's plaintext and state entry, as `install` would write them.
    static func interruptedInstall() async throws -> (Device, ClientState.Patch) {
        let device = try Self.device()
        try device.publish()
        try await installGood(device.client, number: 1, script: ClientFixture.script(device.fixture.demo, 1))
        let patch2 = ClientState.Patch(number: 2, sha256: Digest.sha256Hex(device.script(2)), confirmed: false, launches: 0)
        return (device, patch2)
    }

    @Test("killed after main.js was replaced but before state.json was saved: currentPatch() finishes the install")
    func crashAfterScriptReplaced() async throws {
        let (device, patch2) = try await Self.interruptedInstall()
        let configuration = device.client.configuration
        var state = CacheFiles.loadState(configuration.stateURL)
        state.installing = patch2
        try CacheFiles.saveState(state, to: configuration.stateURL)
        try CacheFiles.write(device.script(2), to: configuration.scriptURL)

        // The app restarts: a new client over the same cache.
        let restarted = PatchClient(configuration: configuration)
        let current = try #require(restarted.currentPatch())
        #expect(current.number == 2)
        #expect(current.sha256 == patch2.sha256)
        #expect(restarted.scriptBytes == device.script(2))
        let after = CacheFiles.loadState(configuration.stateURL)
        #expect(after.installing == nil)
        #expect(after.installed == patch2)
    }

    @Test("killed after the state named the install but before main.js was replaced: the previous patch is kept")
    func crashBeforeScriptReplaced() async throws {
        let (device, patch2) = try await Self.interruptedInstall()
        let configuration = device.client.configuration
        var state = CacheFiles.loadState(configuration.stateURL)
        let patch1 = try #require(state.installed)
        state.installing = patch2
        try CacheFiles.saveState(state, to: configuration.stateURL)

        let restarted = PatchClient(configuration: configuration)
        let current = try #require(restarted.currentPatch())
        #expect(current.number == 1)
        #expect(current.sha256 == patch1.sha256)
        #expect(restarted.scriptBytes == device.script(1))
        let after = CacheFiles.loadState(configuration.stateURL)
        #expect(after.installing == nil)
        #expect(after.installed == patch1)
    }

    @Test("main.js changed on disk is not run: currentPatch() is nil, and the next sync restores it")
    func tamperedScriptOnDisk() async throws {
        let device = try Self.device()
        try device.publish()
        let good = try await installGood(device.client, number: 1, script: ClientFixture.script(device.fixture.demo, 1))
        try CacheFiles.write(Array("evil();".utf8), to: device.client.configuration.scriptURL)
        #expect(device.client.currentPatch() == nil)
        #expect(device.client.beginLaunch() == nil)
        #expect(await device.client.sync(force: true) == .updated(good.patch))
        expectKept(device.client, good)
    }
}
