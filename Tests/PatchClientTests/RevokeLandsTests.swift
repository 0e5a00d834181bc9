import Foundation
import PatchCore
import PatchRegistry
import Testing
@testable import PatchClient

/// The kill switch lands in seconds: after a revoke, a device inside its hour that syncs with
/// `force` reaches the server (it goes through a Retry-After that was its own interval) and
/// the server answers it (the revoke lifted the interval), so the patch is gone at once.
@Suite("A revoke reaches a device inside its interval")
struct RevokeLandsTests {
    @Test("installed, throttled by the hour, revoked: the next forced sync drops the patch")
    func revokeLands() async throws {
        let fixture = try ClientFixture()
        try fixture.registry.setThrottleRules(app: fixture.demo, ThrottleRules(minInterval: 3600, ipRatePerMinute: 0), actor: fixture.actor)
        try fixture.publish(fixture.demo)
        try fixture.publish(fixture.demo)
        let server = try LiveServer(fixture)
        let client = PatchClient(configuration: try fixture.configuration(fixture.demo, server: server.url, device: "device-kill"))
        try await installGood(client, number: 2, script: ClientFixture.script(fixture.demo, 2))
        guard case .throttled = await client.sync(force: true) else { Issue.record("expected the server's 429 inside the hour"); return }
        try fixture.revoke(fixture.demo, number: 2)
        server.service.reloadChanged()  // what patchd's upkeep does when another process commits
        let outcome = await client.sync(force: true)
        #expect(outcome.updatedNumber == 1, "the revoke landed: back to patch 1, got \(outcome)")
        guard case .throttled = await client.sync(force: true) else { Issue.record("one lifted check per change, then the hour again"); return }
    }

    @Test("a 429 without X-Throttle-Scope: device (overload, the per-IP bucket) holds even a forced sync back")
    func backpressureHolds() async throws {
        let fixture = try ClientFixture()
        try fixture.publish(fixture.demo)
        let mirror = try Mirror()
        mirror.serve(try fixture.exported(fixture.demo))
        let client = PatchClient(configuration: try fixture.configuration(fixture.demo, server: mirror.url))
        try await installGood(client, number: 1, script: ClientFixture.script(fixture.demo, 1))
        let timestamp = ClientFixture.metadataPath(fixture.demo, "timestamp.json")
        mirror[timestamp] = CannedResponse(status: 429, headers: [("Retry-After", "600")], body: [])
        guard case .throttled = await client.sync(force: true) else { Issue.record("expected the 429"); return }
        let count = mirror.requests.count
        guard case .throttled = await client.sync(force: true) else { Issue.record("expected the remembered 429"); return }
        #expect(mirror.requests.count == count, "backpressure: no request until Retry-After")
        mirror[timestamp] = CannedResponse(status: 429, headers: [("Retry-After", "600"), ("X-Throttle-Scope", "device")], body: [])
        let scoped = PatchClient(configuration: try fixture.configuration(fixture.demo, server: mirror.url, device: "device-2"))
        guard case .throttled = await scoped.sync(force: true) else { Issue.record("expected the 429"); return }
        let before = mirror.requests.count
        _ = await scoped.sync(force: true)
        #expect(mirror.requests.count > before, "the device's own interval: a forced sync asks again")
    }
}
