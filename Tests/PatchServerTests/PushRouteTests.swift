import Foundation
import PatchCore
import PatchPush
import PatchRegistry
import Testing
@testable import HTTPTransport
@testable import PatchServer
import HotpatchTestSupport

extension ServiceFixture {
    /// `POST /v1/apps/{app}/devices` as PatchClient.registerPushToken sends it.
    func registerDevice(_ body: String, app: String = "demo", from ip: String = "127.0.0.1", device: String? = "device-1") -> HTTPResponse {
        var fields = [("Content-Type", "application/json")]
        if let device { fields.append(("X-Device-ID", device)) }
        return service.respond(to: HTTPRequest(method: "POST", path: "/v1/apps/\(app)/devices", fields: fields, body: Array(body.utf8), remoteAddress: ip))
    }

    func deviceBody(_ token: String, version: String = "2.3", channel: String? = nil, environment: String? = nil) -> String {
        var fields = ["\"token\": \"\(token)\"", "\"appVersion\": \"\(version)\""]
        if let channel { fields.append("\"channel\": \"\(channel)\"") }
        if let environment { fields.append("\"environment\": \"\(environment)\"") }
        return "{" + fields.joined(separator: ", ") + "}"
    }

    func pushDevices(version: String? = nil, app: String = "demo") throws -> [PushDevice] {
        let version = try version.map(AppVersion.init)
        let app = try AppName(app)
        return try service.registry.withLock { registry throws(RegistryError) in try registry.pushDevices(app: app, appVersion: version) }
    }

    /// A patch for each version and channel the tests register devices for: a token must
    /// name one (demo 2.3 and 2.4 on production, 2.4 on staging; other 2.3).
    func publishForDevices() {
        #expect(publish("one()").status == 201)
        #expect(publish("two()", version: "2.4").status == 201)
        #expect(post("/v1/apps/demo/patches", body: "s()", token: publisherToken, query: ["appVersion": "2.4", "channel": "staging"]).status == 201)
        #expect(post("/v1/apps/other/patches", body: "o()", token: otherAppToken, query: ["appVersion": "2.3"]).status == 201)
    }

    static func token(_ n: Int) -> String { String(repeating: "ab", count: 28) + String(format: "%08x", n) }
}

@Suite("POST /v1/apps/{app}/devices: device tokens for push-triggered checks")
struct PushRouteTests {
    static func fixture(maxPushDevices: Int = Registry.defaultMaxPushDevicesPerApp, pushNewPerNetwork: Int = 0, ipRate: Int = 0,
                        pushQueue: Int = 4_096) throws -> ServiceFixture {
        let f = try ServiceFixture(ipRate: ipRate, maxPushDevices: maxPushDevices, pushQueue: pushQueue, pushNewPerNetwork: pushNewPerNetwork, channels: ["staging"])
        f.publishForDevices()
        return f
    }

    @Test("201 stores a token; the same token again (any case) is 200 and refreshes version, channel and environment: one row")
    func storesAndRefreshes() throws {
        let f = try Self.fixture()
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

    @Test("400 for a token that is not hex or has the wrong length, a bad version, channel or environment, a body that is not JSON, no X-Device-ID; 404 for an unknown app; nothing stored")
    func refusals() throws {
        let f = try Self.fixture()
        #expect(f.registerDevice(f.deviceBody("zz" + String(repeating: "0", count: 62))).status == 400)
        #expect(f.registerDevice(f.deviceBody(String(repeating: "0", count: 62))).status == 400)
        #expect(f.registerDevice(f.deviceBody(String(repeating: "0", count: 202))).status == 400)
        #expect(f.registerDevice(f.deviceBody(ServiceFixture.token(1), version: "../x")).status == 400)
        #expect(f.registerDevice(f.deviceBody(ServiceFixture.token(1), channel: "Bad Channel")).status == 400)
        #expect(f.registerDevice(f.deviceBody(ServiceFixture.token(1), environment: "development")).status == 400)
        #expect(f.registerDevice("{\"token\": 7, \"appVersion\": \"2.3\"}").status == 400)
        #expect(f.registerDevice("not json").status == 400)
        let anonymous = f.registerDevice(f.deviceBody(ServiceFixture.token(1)), device: nil)
        #expect(anonymous.status == 400)
        #expect(anonymous.bodyString.contains("X-Device-ID"))
        #expect(f.registerDevice(f.deviceBody(ServiceFixture.token(1)), device: String(repeating: "d", count: 257)).status == 400)
        #expect(f.registerDevice(f.deviceBody(ServiceFixture.token(1)), app: "nope").status == 404)
        #expect(try f.pushDevices().isEmpty)
    }

    @Test("404 for a version or channel the app has no patch for, new or re-pointed: nothing stored or changed")
    func versionAndChannelMustHaveAPatch() throws {
        let f = try Self.fixture()
        let version = f.registerDevice(f.deviceBody(ServiceFixture.token(1), version: "9.9"))
        #expect(version.status == 404)
        #expect(version.bodyString.contains("no patch for 9.9 on channel production"))
        #expect(f.registerDevice(f.deviceBody(ServiceFixture.token(1), channel: "staging")).status == 404, "2.3 has no staging patch")
        #expect(try f.pushDevices().isEmpty)
        #expect(f.registerDevice(f.deviceBody(ServiceFixture.token(2))).status == 201)
        #expect(f.registerDevice(f.deviceBody(ServiceFixture.token(2), version: "9.9")).status == 404)
        #expect(try f.pushDevices().first?.appVersion.rawValue == "2.3")
    }

    @Test("another device ID cannot re-point a stored token (409, nothing changed); the device that registered it can")
    func boundToTheDevice() throws {
        let f = try Self.fixture()
        #expect(f.registerDevice(f.deviceBody(ServiceFixture.token(1)), device: "phone-a").status == 201)
        let hijack = f.registerDevice(f.deviceBody(ServiceFixture.token(1), version: "2.4", channel: "staging", environment: "sandbox"), device: "phone-b")
        #expect(hijack.status == 409)
        #expect(hijack.bodyString.contains("another device"))
        let kept = try #require(try f.pushDevices().first)
        #expect(kept.appVersion.rawValue == "2.3" && kept.channel == .production && kept.environment == .production)
        #expect(f.registerDevice(f.deviceBody(ServiceFixture.token(1), version: "2.4"), device: "phone-a").status == 200)
        #expect(try f.pushDevices().first?.appVersion.rawValue == "2.4")
    }

    @Test("a member it does not know is 400 and stores nothing; the longest body the schema allows fits the 1 KiB limit (read and decided, not 413)")
    func extraMembers() throws {
        let f = try Self.fixture()
        let body = "{\"token\": \"\(ServiceFixture.token(1))\", \"appVersion\": \"2.3\", \"extra\": {\"a\": {\"b\": [1, {}]}}}"
        let refused = f.registerDevice(body)
        #expect(refused.status == 400 && refused.bodyString.contains("unknown member") && refused.bodyString.contains("extra"))
        #expect(try f.pushDevices().isEmpty)
        // Every member at its longest (docs/openapi.yaml, DeviceRegistration): a 200-digit token,
        // a 64-byte version and channel. Version and channel need a patch of the app to be stored.
        let version = "2.3-" + String(repeating: "a", count: 60), channel = String(repeating: "c", count: 64)
        let longest = "{\"token\": \"\(String(repeating: "ab", count: 100))\", \"appVersion\": \"\(version)\", \"channel\": \"\(channel)\", \"environment\": \"production\"}"
        #expect(longest.utf8.count < PatchService.devicesBodyLimit / 2)
        let answer = f.registerDevice(longest)
        #expect(answer.status == 404, "admitted and read (not 413): no patch for that version yet")
    }

    @Test("a body over 1 KiB is 413 from its head, never read")
    func bodyCap() throws {
        let f = try Self.fixture()
        let body = f.deviceBody(ServiceFixture.token(1)) + String(repeating: " ", count: PatchService.devicesBodyLimit)
        #expect(f.registerDevice(body).status == 413)
        #expect(try f.pushDevices().isEmpty)
    }

    @Test("past the per-app cap a new token is still stored (201, never 503 full) in place of one; the count stays at the cap; another app is not affected")
    func perAppCapEvicts() throws {
        let f = try Self.fixture(maxPushDevices: 3)
        for n in 1...3 { #expect(f.registerDevice(f.deviceBody(ServiceFixture.token(n))).status == 201) }
        let fourth = f.registerDevice(f.deviceBody(ServiceFixture.token(4)))
        #expect(fourth.status == 201)
        #expect(try f.pushDevices().count == 3)
        #expect(try f.pushDevices().contains { $0.token == ServiceFixture.token(4) })
        #expect(f.registerDevice(f.deviceBody(ServiceFixture.token(5)), app: "other").status == 201)
        #expect(try f.pushDevices().count == 3)
    }

    @Test("new tokens per /24 or /48 per hour: past the quota 429 with Retry-After, nothing stored, counted in /metrics; refreshes, other networks and the next hour still register")
    func perNetworkQuota() throws {
        let f = try Self.fixture(pushNewPerNetwork: 3)
        for (n, ip) in ["192.0.2.1", "192.0.2.2", "192.0.2.3"].enumerated() {
            #expect(f.registerDevice(f.deviceBody(ServiceFixture.token(n + 1)), from: ip, device: "d\(n)").status == 201)
        }
        let refused = f.registerDevice(f.deviceBody(ServiceFixture.token(9)), from: "192.0.2.200", device: "d9")
        #expect(refused.status == 429)
        #expect(try f.json(refused)["error"]?["code"] == "throttled")
        let retryAfter = try #require(refused.headers.first { $0.0 == "Retry-After" }.flatMap { Int($0.1) })
        #expect((1...1200).contains(retryAfter), "one new token every 20 minutes at 3 an hour: \(retryAfter)")
        #expect(try f.pushDevices().count == 3)
        #expect(f.registerDevice(f.deviceBody(ServiceFixture.token(1), version: "2.4"), from: "192.0.2.9", device: "d0").status == 200, "a refresh is not a new token")
        #expect(f.registerDevice(f.deviceBody(ServiceFixture.token(10)), from: "198.51.100.7", device: "d10").status == 201, "another /24")
        #expect(f.registerDevice(f.deviceBody(ServiceFixture.token(11)), app: "other", from: "192.0.2.4", device: "d11").status == 201, "another app")
        let metrics = f.get("/metrics", headers: ["Authorization": "Bearer \(f.auditorToken)"]).bodyString
        #expect(metrics.contains("hotpatch_push_quota_refusals_total 1\n"), "\(metrics)")
        f.clock.advance(UInt32(retryAfter))
        #expect(f.registerDevice(f.deviceBody(ServiceFixture.token(9)), from: "192.0.2.200", device: "d9").status == 201)
        // IPv6: one /48 is one network, however many /64s it holds.
        for n in 0..<3 { #expect(f.registerDevice(f.deviceBody(ServiceFixture.token(20 + n)), from: "2001:db8:1:\(n)::1", device: "v\(n)").status == 201) }
        #expect(f.registerDevice(f.deviceBody(ServiceFixture.token(30)), from: "2001:db8:1:ffff::1", device: "v9").status == 429)
        #expect(f.registerDevice(f.deviceBody(ServiceFixture.token(31)), from: "2001:db8:2::1", device: "v10").status == 201)
    }

    @Test("patchd's upkeep prunes the tokens not registered again for 60 days, and only those")
    func upkeepPrunesExpired() throws {
        let f = try Self.fixture()
        #expect(f.registerDevice(f.deviceBody(ServiceFixture.token(1))).status == 201)
        f.service.pushUpkeep(now: Date().addingTimeInterval(59 * 86_400))
        #expect(try f.pushDevices().count == 1)
        f.service.pushUpkeep(now: Date().addingTimeInterval(61 * 86_400))
        #expect(try f.pushDevices().isEmpty)
        #expect(f.registerDevice(f.deviceBody(ServiceFixture.token(1)), device: "a-new-owner").status == 201, "its binding went with it")
    }

    @Test("the app's per-IP bucket applies: past its rate an address gets 429, another address still registers")
    func perIPBucket() throws {
        let f = try Self.fixture(ipRate: 5)
        for n in 1...5 { #expect(f.registerDevice(f.deviceBody(ServiceFixture.token(n)), from: "192.0.2.1").status == 201) }
        #expect(f.registerDevice(f.deviceBody(ServiceFixture.token(6)), from: "192.0.2.1").status == 429)
        #expect(f.registerDevice(f.deviceBody(ServiceFixture.token(7)), from: "192.0.2.2").status == 201)
        #expect(try f.pushDevices().count == 6)
    }
}

/// A push-triggered check (`X-Push-Timestamp: N`, PatchClient.handlePush) passes the device's
/// interval once when its last check predates the timestamp N; nothing else about it is trusted.
@Suite("X-Push-Timestamp lets a push-triggered check through the interval")
struct PushThrottleTests {
    static let timestamp = "/v1/apps/demo/metadata/timestamp.json"

    func status(_ f: ServiceFixture, push: String? = nil, device: String = "d1") -> Int {
        var headers = ["X-Device-ID": device, "X-App-Version": "2.3"]
        if let push { headers["X-Push-Timestamp"] = push }
        return f.get(Self.timestamp, headers: headers).status
    }

    func servedVersion(_ f: ServiceFixture) throws -> Int64 {
        try #require(try SignedTimestamp(bytes: f.get(Self.timestamp).body).body.version)
    }

    @Test("after a publish, a device that checked before it is let through once with the new version; again, it is throttled")
    func publishThenPush() throws {
        let f = try ServiceFixture(minInterval: 3600)
        #expect(f.publish("one()").status == 201)
        // Second-grained, like a revoke's lift: a check in the change's own second may have
        // seen the state before it, so it counts as before.
        f.clock.advance(1)
        #expect(status(f) == 200)
        f.clock.advance(5)
        #expect(status(f) == 429, "inside the hour")
        let before = try servedVersion(f)
        #expect(status(f, push: String(before)) == 429, "a push naming what the device already saw: nothing new")
        f.clock.advance(5)
        #expect(f.publish("two()").status == 201)
        let announced = try servedVersion(f)
        #expect(announced > before)
        #expect(status(f, push: String(announced + 1)) == 429, "a version this server does not serve: a forgery or ahead of it")
        #expect(status(f, push: String(announced)) == 200)
        f.clock.advance(1)
        #expect(status(f, push: String(announced)) == 429, "one check per device per change")
        #expect(status(f) == 429, "without a push, the interval as ever")
    }

    @Test("a push that reaches the device before this instance reloaded the change (patchctl pushes on commit): it catches up and serves the new timestamp, once")
    func pushAheadOfTheReload() throws {
        let f = try ServiceFixture(minInterval: 3600)
        #expect(f.publish("one()").status == 201)
        f.clock.advance(1)
        #expect(status(f) == 200)
        f.clock.advance(5)
        // The change is committed by another process (patchctl publish --notify): this
        // service has not reloaded it when the pushed device asks.
        let other = try TestBackend.registry(dataDirectory: f.dataDirectory, keysDirectory: f.keysDirectory)
        _ = try other.publish(app: try AppName("demo"), appVersion: try AppVersion("2.3"), bundle: Array("two()".utf8), actor: Actor("cli"))
        let announced = try SignedTimestamp(bytes: try other.latestMetadata(app: try AppName("demo"), role: .timestamp).bytes).body.version
        let answer = f.get(Self.timestamp, headers: ["X-Device-ID": "d1", "X-App-Version": "2.3", "X-Push-Timestamp": String(announced)])
        #expect(answer.status == 200, "\(answer.status) \(answer.bodyString)")
        #expect(try SignedTimestamp(bytes: answer.body).body.version == announced)
        f.clock.advance(1)
        #expect(status(f, push: String(announced)) == 429, "one check per device per change")
    }

    @Test("a device that checked after the change is not let through by a push announcing it")
    func checkedAfter() throws {
        let f = try ServiceFixture(minInterval: 3600)
        #expect(f.publish("one()").status == 201)
        let announced = try servedVersion(f)
        f.clock.advance(5)
        #expect(status(f) == 200)
        f.clock.advance(5)
        #expect(status(f, push: String(announced)) == 429)
    }

    @Test("X-Push-Timestamp that is not a positive decimal is 400", arguments: ["0", "-1", "01", "x", "9999999999999999999999"])
    func malformed(_ raw: String) throws {
        let f = try ServiceFixture(minInterval: 3600)
        #expect(f.publish("one()").status == 201)
        #expect(status(f, push: raw) == 400)
    }
}
