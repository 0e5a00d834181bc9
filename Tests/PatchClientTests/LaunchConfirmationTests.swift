import Foundation
import PatchCore
import Testing
@testable import PatchClient

/// Launch confirmation names the patch it confirms, and a launch has a foreground time limit
/// (docs/PROTOCOL.md, "Launch confirmation").
@Suite("PatchClient launch confirmation")
struct LaunchConfirmationTests {
    static func device(_ change: (inout ClientConfiguration) -> Void = { _ in }) throws -> LifecycleTests.Device {
        let fixture = try ClientFixture()
        let mirror = try Mirror()
        var configuration = try fixture.configuration(fixture.demo, server: mirror.url)
        change(&configuration)
        return LifecycleTests.Device(fixture: fixture, mirror: mirror, client: PatchClient(configuration: configuration))
    }

    @Test("a confirm is never credited to a patch installed after the launch (capacitor-updater #907): old and new calls refuse it")
    func confirmNamesTheLaunchedPatch() async throws {
        let device = try Self.device()
        let client = device.client
        // The app launches with no patch; a sync installs patch 1 while it runs unpatched.
        #expect(client.beginLaunch() == nil)
        try device.publish()
        let installed = try await installGood(client, number: 1, script: ClientFixture.script(device.fixture.demo, 1))
        client.confirmLaunch()
        #expect(client.currentPatch()?.confirmed == false, "patch 1 never ran: the old call must not confirm it")
        #expect(!client.confirmLaunch(installed.patch), "nor the new one: this launch did not run patch 1")
        #expect(client.state.good == nil)

        // Patch 1 runs and is confirmed; then patch 2 arrives while patch 1 is running.
        let launched = try #require(client.beginLaunch())
        try device.publish()
        try await installGood(client, number: 2, script: ClientFixture.script(device.fixture.demo, 2))
        #expect(!client.confirmLaunch(launched), "patch 1 is no longer installed")
        client.confirmLaunch()
        #expect(client.currentPatch()?.number == 2)
        #expect(client.currentPatch()?.confirmed == false, "patch 2 has not run")
        #expect(client.state.good == nil)

        // The next launch runs patch 2; confirming it is taken and recorded.
        let second = try #require(client.beginLaunch())
        #expect(second.number == 2)
        #expect(client.confirmLaunch(second))
        #expect(client.state.good?.number == 2)
        #expect(client.pendingReports.filter { $0.type == .confirmed }.map(\.patch) == [2])
        #expect(client.pendingReports.filter { $0.type == .launched }.map(\.patch) == [1, 2])
    }

    @Test("a launch not confirmed within confirmationTimeout seconds in the foreground is refused, rolled back at the next launch, and reported rolledBack")
    func foregroundTimeout() async throws {
        let device = try Self.device { $0.confirmationTimeout = 30 }
        let client = device.client
        try device.publish()
        try await installGood(client, number: 1, script: ClientFixture.script(device.fixture.demo, 1))
        let t = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(client.confirmLaunch(try #require(client.beginLaunch(now: t)), now: t.addingTimeInterval(5)))
        try device.publish()
        try await installGood(client, number: 2, script: ClientFixture.script(device.fixture.demo, 2))

        let launch = try #require(client.beginLaunch(now: t.addingTimeInterval(100)))
        #expect(launch.number == 2)
        #expect(!client.confirmLaunch(launch, now: t.addingTimeInterval(131)), "31 s in the foreground: too late")
        #expect(client.currentPatch()?.confirmed == false)
        // One launch of the two allowed, but it ran out its time: rolled back now.
        let next = client.beginLaunch(now: t.addingTimeInterval(140))
        #expect(next?.number == 1)
        #expect(client.scriptBytes == device.script(1))
        #expect(client.state.rolledBackThrough == 2)
        let rolledBack = try #require(client.pendingReports.last)
        #expect(rolledBack.type == .rolledBack)
        #expect(rolledBack.patch == 2)
    }

    @Test("time in the background does not count: didEnterBackground stops the clock, willEnterForeground restarts it")
    func backgroundTimeDoesNotCount() async throws {
        let device = try Self.device { $0.confirmationTimeout = 30 }
        let client = device.client
        try device.publish()
        try await installGood(client, number: 1, script: ClientFixture.script(device.fixture.demo, 1))
        let t = Date(timeIntervalSince1970: 1_800_000_000)
        let launch = try #require(client.beginLaunch(now: t))
        client.didEnterBackground(now: t.addingTimeInterval(20))
        client.willEnterForeground(now: t.addingTimeInterval(3600))
        #expect(client.confirmLaunch(launch, now: t.addingTimeInterval(3605)), "25 s in the foreground over an hour")
        #expect(client.currentPatch()?.confirmed == true)
    }

    @Test("a process killed in the foreground: its time counts up to the next launch, which rolls the patch back")
    func killedInForeground() async throws {
        let device = try Self.device { $0.confirmationTimeout = 30; $0.maxUnconfirmedLaunches = 5 }
        let client = device.client
        try device.publish()
        try await installGood(client, number: 1, script: ClientFixture.script(device.fixture.demo, 1))
        let t = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(client.beginLaunch(now: t)?.number == 1)
        // Relaunched 10 s later (crashed before 30 s): still within the launch count and the time.
        #expect(client.beginLaunch(now: t.addingTimeInterval(10))?.number == 1)
        // Relaunched after a minute in the foreground without a confirm: rolled back, with launches to spare.
        #expect(client.beginLaunch(now: t.addingTimeInterval(70)) == nil)
        #expect(client.state.rolledBackThrough == 1)
    }
}
