import Foundation
import FuzzSupport
import PatchCore
import PatchSigning
import PatchRegistry
import Synchronization
@testable import HTTPTransport
@testable import PatchServer

/// The HTTP API in process: Router.match over the real route table, then PatchService.respond
/// over a registry built once (three apps — plain, encrypted, JSPatch — with live patches
/// and tokens). The input is a request as text:
///
///     METHOD PATH
///     Header-Name: value
///     ?name=value          (a query argument)
///     @address             (the client address)
///
///     body
///
/// `$PUB`, `$AUD`, `$OTHER` stand for a publisher token of demo, an auditor token of every
/// app and a publisher token of another app; `$TARGET` for the path of a live demo target.
/// The path and query values are percent-decoded by the transport's own decoder first; a
/// path the transport refuses (an encoded unreserved byte or separator: 400) goes no further.
/// Invariants: no crash, never a 5xx, every error is the JSON error body, no token secret in
/// any answer, and the router hands a handler only non-empty, slash-free path parameters.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let fixture = Fixture.shared
    let request = FuzzRequest(FuzzInput(data, size).bytes, fixture: fixture)
    fixture.clock.advance()
    // The transport answers 400 before routing; nothing here would see the request.
    if request.refusedByTransport { return 0 }

    let match = fixture.router.match(method: request.method, path: request.path)
    switch match.result {
    case .success(let (_, parameters)):
        for (name, value) in parameters.values {
            invariant(!value.isEmpty && !value.contains("/"), "router captured \(name) = \(String(reflecting: value)) from \(String(reflecting: request.path))")
        }
    case .failure(let error):
        invariant([404, 405].contains(error.status), "router answered \(error.status) for \(String(reflecting: request.path))")
    }
    if request.method == "GET" {
        let head = fixture.router.match(method: "HEAD", path: request.path)
        invariant(head.metric == match.metric, "HEAD and GET of \(String(reflecting: request.path)) route differently")
    }

    let response = fixture.service.respond(to: request.httpRequest)
    let summary = "\(request.method) \(String(reflecting: request.path)) → \(response.status) \(response.body.debugDescriptionForFuzzing)"
    trace(summary)
    invariant((200..<500).contains(response.status), "server error: \(summary)")
    if response.status >= 400 {
        let code = (try? JSONParser.parse(response.body))?["error"]?["code"]?.stringValue
        invariant(code != nil, "error without a JSON error body: \(summary)")
        invariant(response.header("Cache-Control") == "no-store", "cacheable error: \(summary)")
    }
    // A token may come back only as part of what the caller sent outside Authorization
    // (an error quoting a bad path or query value); a credential itself never does.
    let body = response.bodyString
    for secret in fixture.secrets where !request.carriesOutsideCredentials(secret) {
        invariant(!body.contains(secret) && !response.headers.contains { $0.1.contains(secret) }, "token secret in the answer: \(summary)")
    }
    return 0
}

/// One request decoded from fuzz bytes; see the format above.
struct FuzzRequest {
    var method = "GET"
    var path = "/"
    var headers: [String: String] = [:]
    var query: [String: String] = [:]
    var address = "127.0.0.1"
    var body: [UInt8] = []
    /// The path percent-encodes an unreserved byte, `/` or `\\` (RequestHead.checkPathEscapes).
    var refusedByTransport = false

    init(_ bytes: [UInt8], fixture: Fixture) {
        let blank = bytes.indices.dropLast().first { bytes[$0] == 0x0A && bytes[$0 + 1] == 0x0A }
        let head = blank.map { Array(bytes[..<$0]) } ?? bytes
        body = blank.map { Array(bytes[($0 + 2)...]) } ?? []
        let lines = head.split(separator: 0x0A, omittingEmptySubsequences: false).map { fixture.substitute(String(decoding: $0, as: UTF8.self)) }
        if let first = lines.first {
            let parts = first.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: false)
            method = String(parts[0])
            path = parts.count > 1 ? FuzzRequest.unescape(String(parts[1])) : ""
            refusedByTransport = parts.count > 1 && FuzzRequest.refusedPath(String(parts[1]))
        }
        for line in lines.dropFirst() {
            if line.hasPrefix("?") {
                let pair = line.dropFirst().split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                query[FuzzRequest.unescape(String(pair[0]), plusIsSpace: true)] = pair.count > 1 ? FuzzRequest.unescape(String(pair[1]), plusIsSpace: true) : ""
            } else if line.hasPrefix("@") {
                address = String(line.dropFirst())
            } else if let colon = line.firstIndex(of: ":") {
                let value = line[line.index(after: colon)...]
                headers[String(line[..<colon])] = String(value.hasPrefix(" ") ? value.dropFirst() : value)
            }
        }
    }

    /// The path and query values as the transport hands them over: its parser refuses a
    /// target with a byte outside `!`..`~` (400, before routing), so such bytes are dropped
    /// here and the rest is still routed; then percent-decoded by the transport's own
    /// decoder, which keeps `%00` literal.
    /// Whether the transport refuses this path before routing (400), by the same check.
    static func refusedPath(_ text: String) -> Bool {
        let visible = text.utf8.filter { $0 > 0x20 && $0 < 0x7F }
        do throws(FramingError) {
            try RequestHead.checkPathEscapes(ArraySlice(visible))
            return false
        } catch {
            return true
        }
    }

    static func unescape(_ text: String, plusIsSpace: Bool = false) -> String {
        let visible = text.utf8.filter { $0 > 0x20 && $0 < 0x7F }
        let decoded = String(decoding: RequestHead.percentDecoded(ArraySlice(visible), plusIsSpace: plusIsSpace), as: UTF8.self)
        invariant(!decoded.utf8.contains(0), "unescaping \(String(reflecting: text)) gave a NUL")
        return decoded
    }

    func carriesOutsideCredentials(_ secret: String) -> Bool {
        path.contains(secret) || query.contains { $0.key.contains(secret) || $0.value.contains(secret) }
            || headers.contains { $0.key.lowercased() != "authorization" && ($0.key.contains(secret) || $0.value.contains(secret)) }
            || String(decoding: body, as: UTF8.self).contains(secret)
    }

    var httpRequest: HTTPRequest {
        HTTPRequest(method: method, path: path, headers: headers, query: query, body: body, remoteAddress: address)
    }
}

/// A clock both throttles read, moved one second per input, so limits are hit by bursts
/// the fuzzer makes and not by the sheer number of runs.
final class FuzzClock: Sendable {
    private let ticks = Atomic<Int>(0)
    func advance() { ticks.add(1, ordering: .relaxed) }
    var seconds: UInt32 { UInt32(truncatingIfNeeded: 1_000 + ticks.load(ordering: .relaxed)) }
}

/// Built once per process: a registry in a temporary directory, removed at exit.
final class Fixture: Sendable {
    static let shared: Fixture = {
        do { return try Fixture() } catch { fatalError("cannot build the fuzz fixture: \(error)") }
    }()

    let root: URL
    let service: PatchService
    let router: Router<PatchService>
    let clock = FuzzClock()
    let publisher: String
    let auditor: String
    let other: String
    let target: String
    var secrets: [String] { [publisher, auditor, other] }

    /// Per process: libFuzzer's -fork and -jobs modes run several at once.
    static let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hotpatch-fuzz-router-\(getpid())", isDirectory: true)

    init() throws {
        root = Fixture.directory
        try? FileManager.default.removeItem(at: root)
        atexit { try? FileManager.default.removeItem(at: Fixture.directory) }
        let registry = try Registry(dataDirectory: root.appendingPathComponent("data"), keysDirectory: root.appendingPathComponent("keys"),
                                    durability: .bulkLoad, create: true)
        let actor = Actor("fuzz")
        let demo = try AppName("demo"), secret = try AppName("secret"), js = try AppName("js"), other = try AppName("other")
        try registry.createApp(demo, encrypted: false, actor: actor)
        try registry.createApp(secret, encrypted: true, actor: actor)
        try registry.createApp(js, encrypted: false, jspatchKey: try RSAPrivateKey.generate(bits: 1024), actor: actor)
        try registry.createApp(other, encrypted: false, actor: actor)
        try registry.setThrottleRules(app: demo, ThrottleRules(minInterval: 60, ipRatePerMinute: 120), actor: actor)
        for (app, version, rollout) in [(demo, "2.3", 100), (demo, "2.3", 50), (demo, "10.0.0-beta.2", 100), (secret, "1.0", 100), (js, "2.3", 100)] {
            _ = try registry.publish(app: app, appVersion: try AppVersion(version),
                                     bundle: Array("console.log('\(app) \(version) \(rollout)')\n".utf8), rollout: rollout, actor: actor)
        }
        publisher = try registry.createToken(app: demo, role: .publisher, name: "ci", actor: actor).secret
        auditor = try registry.createToken(app: nil, role: .auditor, name: "auditor", actor: actor).secret
        self.other = try registry.createToken(app: other, role: .publisher, name: "other-ci", actor: actor).secret

        var configuration = ServiceConfiguration()
        configuration.maxTrackedDevices = 10_000
        let clock = clock
        service = try PatchService(registry: registry, configuration: configuration,
                                   devices: DeviceThrottle(capacity: 10_000, clock: { clock.seconds }),
                                   ipLimiter: IPRateLimiter(maxEntries: 10_000, clock: { Double(clock.seconds) }), log: { trace("patchd: " + $0) })
        router = PatchService.routes()
        let targets = service.catalog.app(demo)?.targets.keys.sorted() ?? []
        target = "/v1/apps/demo/targets/" + (targets.first ?? "missing")
    }

    func substitute(_ text: String) -> String {
        guard text.contains("$") else { return text }
        return text.replacingOccurrences(of: "$PUB", with: publisher).replacingOccurrences(of: "$AUD", with: auditor)
            .replacingOccurrences(of: "$OTHER", with: other).replacingOccurrences(of: "$TARGET", with: target)
    }
}

runLibFuzzer(fuzz)
