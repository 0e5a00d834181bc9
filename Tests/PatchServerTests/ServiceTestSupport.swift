import Foundation
import PatchCore
import PatchPush
import PatchRegistry
@testable import HTTPTransport
@testable import PatchServer
import HotpatchTestSupport

/// A registry on disk with a demo app, and a service over it: requests go through the
/// router in process, no socket.
final class ServiceFixture {
    let root: URL
    let service: PatchService
    let dataDirectory: URL
    let keysDirectory: URL
    let publisherToken: String
    let auditorToken: String
    let otherAppToken: String
    let clock: FakeClock

    init(encrypted: Bool = false, minInterval: Int = 3600, ipRate: Int = 0, trustedProxies: [IPNetwork] = [],
         maxPushDevices: Int = Registry.defaultMaxPushDevicesPerApp, reportRules: ReportRules = ReportRules(),
         reportQueueEvents: Int = 50_000, reportIntakeBytes: Int = 2 << 20, pushQueue: Int = 4_096, pushNewPerNetwork: Int = 0, expiryMargin: Double? = nil, apnsEndpoint: APNsEndpoint? = nil,
         channels: [String] = []) throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("patchserver-test-\(UUID().uuidString)", isDirectory: true)
        dataDirectory = root.appendingPathComponent("data")
        keysDirectory = root.appendingPathComponent("keys")
        let registry = try TestBackend.registry(dataDirectory: dataDirectory, keysDirectory: keysDirectory)
        let actor = Actor("fixture")
        let demo = try AppName("demo")
        try registry.createApp(demo, encrypted: encrypted, actor: actor)
        try registry.createApp(try AppName("other"), encrypted: false, actor: actor)
        try registry.setThrottleRules(app: demo, ThrottleRules(minInterval: minInterval, ipRatePerMinute: ipRate), actor: actor)
        // Channels of demo besides production, declared as `patchctl channels create` does: a
        // publish over the API to an undeclared one is refused (404).
        for channel in channels { try registry.declareChannel(app: demo, channel: try ChannelName(channel), actor: actor) }
        publisherToken = try registry.createToken(app: demo, role: .publisher, name: "ci", actor: actor).secret
        auditorToken = try registry.createToken(app: nil, role: .auditor, name: "auditor", actor: actor).secret
        otherAppToken = try registry.createToken(app: try AppName("other"), role: .publisher, name: "other-ci", actor: actor).secret
        let clock = FakeClock()
        self.clock = clock
        var configuration = ServiceConfiguration()
        configuration.trustedProxies = trustedProxies
        configuration.maxPushDevicesPerApp = maxPushDevices
        configuration.reportRules = reportRules
        configuration.reportQueueEvents = reportQueueEvents
        configuration.reportIntakeBytes = reportIntakeBytes
        configuration.pushRegistrationQueue = pushQueue
        configuration.pushNewTokensPerNetworkPerHour = pushNewPerNetwork
        configuration.expiryMargin = expiryMargin
        configuration.apnsEndpoint = apnsEndpoint
        service = try PatchService(registry: registry, configuration: configuration, devices: DeviceThrottle(clock: { clock.seconds }),
                                   ipLimiter: IPRateLimiter(clock: { Double(clock.seconds) }), pushQuota: IPRateLimiter(clock: { Double(clock.seconds) }),
                                   log: { _ in })
    }

    deinit { try? FileManager.default.removeItem(at: root) }

    func get(_ path: String, headers: [String: String] = [:], query: [String: String] = [:], from ip: String = "127.0.0.1") -> HTTPResponse {
        service.respond(to: HTTPRequest(method: "GET", path: path, headers: headers, query: query, remoteAddress: ip))
    }

    func post(_ path: String, body: String = "", token: String?, query: [String: String] = [:], headers extra: [String: String] = [:]) -> HTTPResponse {
        send("POST", path, body: body, token: token, query: query, headers: extra)
    }

    func send(_ method: String, _ path: String, body: String = "", token: String?, query: [String: String] = [:],
              headers extra: [String: String] = [:]) -> HTTPResponse {
        var headers = extra
        if let token { headers["Authorization"] = "Bearer \(token)" }
        return service.respond(to: HTTPRequest(method: method, path: path, headers: headers, query: query, body: Array(body.utf8)))
    }

    @discardableResult
    func publish(_ text: String, version: String = "2.3", rollout: Int = 100) -> HTTPResponse {
        post("/v1/apps/demo/patches", body: text, token: publisherToken, query: ["appVersion": version, "rollout": String(rollout)])
    }

    func json(_ response: HTTPResponse) throws -> JSON { try JSONParser.parse(response.body) }
}

/// A clock tests move by hand, shared by both throttles.
final class FakeClock: @unchecked Sendable {
    private let lock = NSLock()
    private var now: UInt32 = 1_000
    var seconds: UInt32 { lock.lock(); defer { lock.unlock() }; return now }
    func advance(_ by: UInt32) { lock.lock(); now += by; lock.unlock() }
}
