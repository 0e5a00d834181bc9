import Foundation
import Testing
import PatchCore
import PatchSigning
import PatchRegistry
@testable import HTTPTransport
@testable import PatchServer
import HotpatchTestSupport

/// The /jspatch routes through PatchService in process, and once over loopback.
@Suite("JSPatch routes")
final class JSPatchServiceTests {
    let f: JSPatchRegistryFixture
    let app: AppName
    let key: RSAPrivateKey
    let clock = TestClock()
    let logged = LogLines()
    private(set) var service: PatchService!

    init() throws {
        f = try JSPatchRegistryFixture()
        (app, key) = try f.jspatchApp("demo")
        try f.registry.createApp(try AppName("plain"), encrypted: false, actor: f.actor)
        try f.registry.setThrottleRules(app: app, ThrottleRules(minInterval: 3600, ipRatePerMinute: 0), actor: f.actor)
        service = try makeService()
    }

    func makeService() throws -> PatchService {
        let registry = try TestBackend.registry(dataDirectory: f.dataDirectory, keysDirectory: f.keysDirectory)
        let clock = clock, logged = logged
        return try PatchService(registry: registry, devices: DeviceThrottle(clock: { clock.seconds }),
                                ipLimiter: IPRateLimiter(clock: { Double(clock.seconds) }), log: { logged.append($0) })
    }

    func get(_ path: String, device: String? = nil, method: String = "GET") -> HTTPResponse {
        service.respond(to: HTTPRequest(method: method, path: path, headers: device.map { ["X-Device-ID": $0] } ?? [:], remoteAddress: "127.0.0.1"))
    }

    func publish(_ text: String, version: String = "2.3", rollout: Int = 100) throws {
        try f.publish(app, version, text, rollout: rollout)
        service.reloadChanged()
    }

    @Test("v{N}.zip is the package the registry builds: application/zip, verifiable with the app's public key")
    func package() throws {
        try publish("console.log('one')")
        let response = get("/jspatch/demo/2.3/v1.zip")
        #expect(response.status == 200)
        #expect(response.header("Content-Type") == "application/zip")
        #expect(response.header("Cache-Control") == "no-cache")
        #expect(response.header("ETag") == "\"\(Digest.sha256Hex(response.body))\"")
        #expect(response.body == (try f.registry.jspatchPackages(app: app))?.first?.bytes)
        let dir = try TempDirectory()
        let unpacked = try UnpackedPackage(response.body, publicKeyPEM: try key.publicKeyPEM(), in: dir)
        #expect(unpacked.entries == ["script.zip", "key"])
        #expect(unpacked.mainJS == Array("console.log('one')".utf8))
        #expect(unpacked.recovered == Digest.md5Hex(unpacked.scriptZip))
        let head = get("/jspatch/demo/2.3/v1.zip", method: "HEAD")
        #expect(head.status == 200)
        #expect(head.header("Content-Type") == "application/zip")
    }

    @Test("404: unknown app, app without a JSPatch key, unpublished or revoked patch; 400: a malformed name or version")
    func notServed() throws {
        try publish("console.log('one')")
        #expect(get("/jspatch/nope/2.3/v1.zip").status == 404)
        #expect(get("/jspatch/plain/2.3/v1.zip").status == 404)
        #expect(get("/jspatch/plain/2.3/latest").status == 404)
        #expect(get("/jspatch/demo/2.3/v2.zip").status == 404)
        #expect(get("/jspatch/demo/9.9/v1.zip").status == 404)
        for bad in ["/jspatch/demo/2.3/v01.zip", "/jspatch/demo/2.3/x1.zip", "/jspatch/demo/2.3/v0.zip", "/jspatch/demo/2.3/v.zip",
                    "/jspatch/demo/2.03/v1.zip", "/jspatch/Demo/2.3/latest"] {
            #expect(get(bad).status == 400, "\(bad)")
        }
        #expect(service.respond(to: HTTPRequest(method: "POST", path: "/jspatch/demo/2.3/v1.zip")).status == 405)
        try f.registry.revoke(app: app, appVersion: try AppVersion("2.3"), number: 1, actor: f.actor)
        service.reloadChanged()
        #expect(get("/jspatch/demo/2.3/v1.zip").status == 404)
        #expect(get("/jspatch/demo/2.3/latest").status == 204)
    }

    @Test("latest names the patch the simple check would answer, rollout applied to X-Device-ID; 204 when none")
    func latest() throws {
        #expect(get("/jspatch/demo/2.3/latest").status == 204)
        try publish("console.log('one')")
        try publish("console.log('two')", rollout: 30)
        let version = try AppVersion("2.3")
        let devices = (0..<200).map { "device-\($0)" }
        let inside = try #require(devices.first { Rollout.includes(percent: 30, app: "demo", appVersion: version.rawValue, patch: 2, deviceID: $0) })
        let outside = try #require(devices.first { !Rollout.includes(percent: 30, app: "demo", appVersion: version.rawValue, patch: 2, deviceID: $0) })
        for (device, expected) in [(inside, 2), (outside, 1)] {
            let response = get("/jspatch/demo/2.3/latest", device: device)
            #expect(response.status == 200)
            #expect(response.header("Content-Type") == "application/json")
            #expect(response.header("Vary") == "X-Device-ID, X-OS-Version")
            #expect(response.bodyString == "{\"patch\":\(expected)}\n")
            #expect(service.catalog.app(app)?.patch(for: "2.3", deviceID: device)?.number == expected, "the simple check's choice")
        }
        // Without a device ID only full rollouts count.
        #expect(get("/jspatch/demo/2.3/latest").bodyString == "{\"patch\":1}\n")
        #expect(get("/jspatch/demo/2.4/latest").status == 204)
        // What latest names is served.
        #expect(get("/jspatch/demo/2.3/v2.zip").status == 200)
    }

    @Test("latest keeps the patch an app says it runs (X-JSPatch-Version) while it is halted; without the header it answers as for a fresh device")
    func keepsTheRunningPatch() throws {
        try publish("console.log('one')")
        try publish("console.log('two')")
        let version = try AppVersion("2.3")
        try f.registry.setRollout(app: app, appVersion: version, number: 2, percent: 0, actor: f.actor)
        service.reloadChanged()
        func latest(_ device: String, running: String?) -> HTTPResponse {
            var headers = ["X-Device-ID": device]
            if let running { headers["X-JSPatch-Version"] = running }
            return service.respond(to: HTTPRequest(method: "GET", path: "/jspatch/demo/2.3/latest", headers: headers, remoteAddress: "127.0.0.1"))
        }
        #expect(latest("a", running: "2").bodyString == "{\"patch\":2}\n", "halted, not revoked: kept")
        #expect(latest("b", running: nil).bodyString == "{\"patch\":1}\n", "a fresh device is not offered the halted patch")
        #expect(latest("c", running: "1").bodyString == "{\"patch\":1}\n")
        #expect(latest("d", running: "02").status == 400)
        _ = try f.registry.revoke(app: app, appVersion: version, number: 2, actor: f.actor)
        service.reloadChanged()
        #expect(latest("e", running: "2").bodyString == "{\"patch\":1}\n", "revoked: the previous patch")
    }

    @Test("latest is throttled per device like the simple check, sharing its budget; packages are not")
    func throttled() throws {
        try publish("console.log('one')")
        #expect(get("/jspatch/demo/2.3/latest", device: "phone").status == 200)
        let again = get("/jspatch/demo/2.3/latest", device: "phone")
        #expect(again.status == 429)
        #expect(again.header("Retry-After") == "3600")
        #expect(get("/v1/apps/demo/versions/2.3/patch", device: "phone").status == 429, "one budget per device")
        #expect(get("/jspatch/demo/2.3/v1.zip", device: "phone").status == 200)
        #expect(get("/jspatch/demo/2.3/latest", device: "").status == 400)
        clock.advance(3600)
        #expect(get("/jspatch/demo/2.3/latest", device: "phone").status == 200)
    }

    @Test("enabling JSPatch on a served app with patchctl is picked up by the next reload")
    func enableWhileServing() throws {
        let plain = try AppName("plain")
        try f.publish(plain, "1.0", "console.log('plain')")
        service.reloadChanged()
        #expect(get("/jspatch/plain/1.0/v1.zip").status == 404)
        // Another process (patchctl) changes the registry file.
        let other = try TestBackend.registry(dataDirectory: f.dataDirectory, keysDirectory: f.keysDirectory)
        try other.enableJSPatch(app: plain, key: try RSAPrivateKey.generate(bits: 1024), actor: f.actor)
        service.reloadChanged()
        #expect(get("/jspatch/plain/1.0/v1.zip").status == 200)
        #expect(get("/jspatch/plain/1.0/latest").bodyString == "{\"patch\":1}\n")
    }

    @Test("without its JSPatch key file only the /jspatch routes of the app stop; its TUF repository is served, and the reason is logged")
    func missingKeyFile() throws {
        try publish("console.log('one')")
        try FileManager.default.removeItem(at: f.registry.keys.jspatchKeyURL(app: app))
        service = try makeService()
        #expect(get("/jspatch/demo/2.3/v1.zip").status == 404)
        #expect(logged.lines.contains { $0.contains("without its JSPatch packages") && $0.contains("JSPatch RSA key of demo is missing") })
        #expect(get("/v1/apps/demo/metadata/timestamp.json").status == 200, "the app's TUF repository is still served")
        #expect(get("/v1/apps/plain/versions/1.0/patch").status == 204, "other apps are served")
    }

    @Test("over loopback: curl downloads the same package")
    func loopback() throws {
        try publish("console.log('over the wire')")
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        let service = self.service!
        let server = try HTTPServer(configuration: configuration) { service.respond(to: $0) }
        let dir = try TempDirectory()
        let base = "http://127.0.0.1:\(server.port)/jspatch/demo/2.3"
        let status = try Tool.check(["curl", "-s", "-o", dir.path("v1.zip"), "-w", "%{http_code} %{content_type}", base + "/v1.zip"])
        #expect(String(decoding: status, as: UTF8.self) == "200 application/zip")
        #expect(try dir.read("v1.zip") == get("/jspatch/demo/2.3/v1.zip").body)
        let unpacked = try UnpackedPackage(try dir.read("v1.zip"), publicKeyPEM: try key.publicKeyPEM(), in: dir)
        #expect(unpacked.mainJS == Array("console.log('over the wire')".utf8))
        #expect(String(decoding: try Tool.check(["curl", "-s", "-H", "X-Device-ID: d1", base + "/latest"]), as: UTF8.self) == "{\"patch\":1}\n")
    }
}

/// A clock the tests move by hand, for both throttles.
final class TestClock: @unchecked Sendable {
    private let lock = NSLock()
    private var now: UInt32 = 1_000
    var seconds: UInt32 { lock.lock(); defer { lock.unlock() }; return now }
    func advance(_ by: UInt32) { lock.lock(); now += by; lock.unlock() }
}

/// What the service logged.
final class LogLines: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [String] = []
    var lines: [String] { lock.lock(); defer { lock.unlock() }; return stored }
    func append(_ line: String) { lock.lock(); stored.append(line); lock.unlock() }
}
