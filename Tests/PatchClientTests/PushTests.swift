import Foundation
import PatchCore
import PatchRegistry
import Testing
@testable import PatchClient
import HotpatchTestSupport

/// Push-triggered checks, device side (docs/PROTOCOL.md, "Push"): registering the APNs token
/// with the real service, and what a push may make the client do.
@Suite("PatchClient push: registerPushToken and handlePush")
struct PushTests {
    static func push(_ app: String = "demo", version: String? = "2.3", channel: String? = "production", timestamp: Any) -> [AnyHashable: Any] {
        var hotpatch: [String: Any] = ["app": app, "timestamp": timestamp]
        if let version { hotpatch["version"] = version }
        if let channel { hotpatch["channel"] = channel }
        return ["aps": ["content-available": 1], "hotpatch": hotpatch]
    }

    @Test("registerPushToken stores the token as hex with this version, channel and environment; again, it is refreshed, not doubled")
    func registers() async throws {
        let fixture = try ClientFixture()
        try fixture.publish(fixture.demo)
        let server = try LiveServer(fixture)
        let client = PatchClient(configuration: try fixture.configuration(fixture.demo, server: server.url))
        let token = Data((0..<32).map { UInt8($0 * 7 & 0xFF) })
        try await client.registerPushToken(token, environment: .sandbox)
        try await client.registerPushToken(token, environment: .sandbox)
        let devices = try fixture.registry.pushDevices(app: fixture.demo)
        #expect(devices.map(\.token) == [token.map { String(format: "%02x", $0) }.joined()])
        #expect(devices.first?.environment == .sandbox)
        #expect(devices.first?.appVersion.rawValue == "2.3")
        #expect(devices.first?.channel == .production)
    }

    @Test("registerPushToken sends the device ID: the token is bound to this device, and another device's client cannot re-point it")
    func boundToTheDeviceID() async throws {
        let fixture = try ClientFixture()
        try fixture.publish(fixture.demo)
        let server = try LiveServer(fixture)
        let token = Data(repeating: 0x5A, count: 32)
        let mine = PatchClient(configuration: try fixture.configuration(fixture.demo, server: server.url, device: "device-mine"))
        try await mine.registerPushToken(token)
        let other = PatchClient(configuration: try fixture.configuration(fixture.demo, server: server.url, device: "device-other"))
        await #expect(throws: PatchClientError.self) { try await other.registerPushToken(token, environment: .sandbox) }
        #expect(try fixture.registry.pushDevices(app: fixture.demo).first?.environment == .production)
        try await mine.registerPushToken(token, environment: .sandbox)
        #expect(try fixture.registry.pushDevices(app: fixture.demo).first?.environment == .sandbox)
    }

    @Test("registerPushToken throws the server's refusal (a token too short to be one)")
    func refused() async throws {
        let fixture = try ClientFixture()
        let server = try LiveServer(fixture)
        let client = PatchClient(configuration: try fixture.configuration(fixture.demo, server: server.url))
        await #expect(throws: PatchClientError.self) { try await client.registerPushToken(Data([1, 2, 3])) }
        #expect(try fixture.registry.pushDevices(app: fixture.demo).isEmpty)
    }

    @Test("a push announcing a newer timestamp syncs through the hour and installs; one naming what is trusted, another app, version or channel, or no timestamp does nothing")
    func handlePush() async throws {
        let fixture = try ClientFixture()
        try fixture.registry.setThrottleRules(app: fixture.demo, ThrottleRules(minInterval: 3600, ipRatePerMinute: 0), actor: fixture.actor)
        try fixture.publish(fixture.demo)
        let server = try LiveServer(fixture)
        let client = PatchClient(configuration: try fixture.configuration(fixture.demo, server: server.url, device: "device-push"))
        try await installGood(client, number: 1, script: ClientFixture.script(fixture.demo, 1))
        let trusted = try fixture.latestTimestamp(fixture.demo).body.version
        let before = server.requestCount
        for ignored in [Self.push(timestamp: Int(trusted)), Self.push("secret", timestamp: Int(trusted) + 1),
                        Self.push(version: "2.4", timestamp: Int(trusted) + 1), Self.push(channel: "staging", timestamp: Int(trusted) + 1),
                        Self.push(timestamp: "many"), ["aps": ["content-available": 1]]] {
            #expect(await client.handlePush(ignored) == nil)
        }
        #expect(server.requestCount == before, "nothing asked of the server")
        guard case .throttled = await client.sync(force: true) else { Issue.record("expected the server's 429 inside the hour"); return }
        try fixture.publish(fixture.demo)
        server.service.reloadChanged()  // what patchd's upkeep does when another process commits
        let announced = try fixture.latestTimestamp(fixture.demo).body.version
        #expect(announced > trusted)
        let outcome = await client.handlePush(Self.push(version: nil, channel: nil, timestamp: Int(announced)))
        #expect(outcome?.updatedNumber == 2, "the push's check got through the hour: \(String(describing: outcome))")
        #expect(await client.handlePush(Self.push(timestamp: Int(announced))) == nil, "now trusted: nothing newer")
        guard case .throttled = await client.sync(force: true) else { Issue.record("one check per change, then the hour again"); return }
    }
}
