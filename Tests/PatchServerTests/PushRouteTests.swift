import Foundation
import PatchCore
import PatchRegistry
import Testing
@testable import PatchServer
import HotpatchTestSupport

extension ServiceFixture {
    /// `POST /v1/apps/{app}/devices` as PatchClient.registerPushToken sends it.
    func registerDevice(_ body: String, app: String = "demo", from ip: String = "127.0.0.1") -> HTTPResponse {
        service.respond(to: HTTPRequest(method: "POST", path: "/v1/apps/\(app)/devices", fields: [("Content-Type", "application/json")],
                                        body: Array(body.utf8), remoteAddress: ip))
    }

    func deviceBody(_ token: String, version: String = "2.3", channel: String? = nil, environment: String? = nil) -> String {
        var fields = ["\"token\": \"\(token)\"", "\"appVersion\": \"\(version)\""]
        if let channel { fields.append("\"channel\": \"\(channel)\"") }
        if let environment { fields.append("\"environment\": \"\(environment)\"") }
        return "{" + fields.joined(separator: ", ") + "}"
    }

    func pushDevices(version: String? = nil) throws -> [PushDevice] {
        let version = try version.map(AppVersion.init)
        let app = try AppName("demo")
        return try service.registry.withLock { registry throws(RegistryError) in try registry.pushDevices(app: app, appVersion: version) }
    }

    static func token(_ n: Int) -> String { String(repeating: "ab", count: 28) + String(format: "%08x", n) }
}

@Suite("POST /v1/apps/{app}/devices: device tokens for push-triggered checks")
struct PushRouteTests {
    @Test("201 stores a token; the same token again (any case) is 200 and refreshes version, channel and environment: one row")
    func storesAndRefreshes() throws {
        let f = try ServiceFixture()
        let token = ServiceFixture.token(1)
        let first = f.registerDevice(f.deviceBody(token))
        #expect(first.status == 201)
        #expect(try f.json(first) == ["registered": "stored"])
        let again = f.registerDevice(f.deviceBody(token.uppercased(), version: "2.4", channel: "staging", environment: "sandbox"))
        #expect(again.status == 200)
        #expect(try f.json(again) == ["registered": "refreshed"])
        let devices = try f.pushDevices()
        #expect(devices.count == 1)
        #expect(devices.first?.token == token)
        #expect(devices.first?.appVersion.rawValue == "2.4")
        #expect(devices.first?.channel.rawValue == "staging")
        #expect(devices.first?.environment == .sandbox)
    }

    @Test("400 for a token that is not hex or has the wrong length, a bad version, channel or environment, a body that is not JSON; 404 for an unknown app; nothing stored")
    func refusals() throws {
        let f = try ServiceFixture()
        #expect(f.registerDevice(f.deviceBody("zz" + String(repeating: "0", count: 62))).status == 400)
        #expect(f.registerDevice(f.deviceBody(String(repeating: "0", count: 62))).status == 400)
        #expect(f.registerDevice(f.deviceBody(String(repeating: "0", count: 202))).status == 400)
        #expect(f.registerDevice(f.deviceBody(ServiceFixture.token(1), version: "../x")).status == 400)
        #expect(f.registerDevice(f.deviceBody(ServiceFixture.token(1), channel: "Bad Channel")).status == 400)
        #expect(f.registerDevice(f.deviceBody(ServiceFixture.token(1), environment: "development")).status == 400)
        #expect(f.registerDevice("{\"token\": 7, \"appVersion\": \"2.3\"}").status == 400)
        #expect(f.registerDevice("not json").status == 400)
        #expect(f.registerDevice(f.deviceBody(ServiceFixture.token(1)), app: "nope").status == 404)
        #expect(try f.pushDevices().isEmpty)
    }

    @Test("a body over 1 KiB is 413 from its head, never read")
    func bodyCap() throws {
        let f = try ServiceFixture()
        let body = f.deviceBody(ServiceFixture.token(1)) + String(repeating: " ", count: PatchService.devicesBodyLimit)
        #expect(f.registerDevice(body).status == 413)
        #expect(try f.pushDevices().isEmpty)
    }

    @Test("past the per-app cap a new token is 503 full; a stored one is still refreshed; another app is not affected")
    func perAppCap() throws {
        let f = try ServiceFixture(maxPushDevices: 3)
        for n in 1...3 { #expect(f.registerDevice(f.deviceBody(ServiceFixture.token(n))).status == 201) }
        let full = f.registerDevice(f.deviceBody(ServiceFixture.token(4)))
        #expect(full.status == 503)
        #expect(try f.json(full)["error"]?["code"] == "full")
        #expect(f.registerDevice(f.deviceBody(ServiceFixture.token(2), version: "2.4")).status == 200)
        #expect(try f.pushDevices().count == 3)
        #expect(f.registerDevice(f.deviceBody(ServiceFixture.token(4)), app: "other").status == 201)
    }

    @Test("the app's per-IP bucket applies: past its rate an address gets 429, another address still registers")
    func perIPBucket() throws {
        let f = try ServiceFixture(ipRate: 5)
        for n in 1...5 { #expect(f.registerDevice(f.deviceBody(ServiceFixture.token(n)), from: "192.0.2.1").status == 201) }
        #expect(f.registerDevice(f.deviceBody(ServiceFixture.token(6)), from: "192.0.2.1").status == 429)
        #expect(f.registerDevice(f.deviceBody(ServiceFixture.token(7)), from: "192.0.2.2").status == 201)
        #expect(try f.pushDevices().count == 6)
    }
}
