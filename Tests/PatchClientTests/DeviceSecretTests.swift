import Foundation
import HTTPTransport
import Locking
import PatchCore
import PatchRegistry
import PatchServer
import Testing
@testable import PatchClient

/// The client's side of issue 43, item 4: an installation makes one random secret, keeps it in
/// its cache directory and sends it with its timestamp request, so patchd meters its checks in
/// a slot nobody who merely knows its device ID can spend.
@Suite("PatchClient sends and keeps its X-Device-Secret")
struct DeviceSecretClientTests {
    static func secrets(_ mirror: Mirror, from start: Int = 0) -> [String?] {
        mirror.received.dropFirst(start).filter { $0.path.hasSuffix("/timestamp.json") }.map { $0.header(DeviceSecret.header) }
    }

    @Test("one secret per installation: sent with timestamp.json only, the same across syncs, restarts and app versions, kept 0600 in {cache}/{app}/device-secret")
    func sentAndKept() async throws {
        let fixture = try ClientFixture()
        try fixture.publish(fixture.demo)
        let mirror = try Mirror()
        mirror.serve(try fixture.exported(fixture.demo))
        let cache = fixture.newCacheDirectory()
        let first = PatchClient(configuration: try fixture.configuration(fixture.demo, server: mirror.url, cache: cache))
        #expect(await first.sync(force: true).updatedNumber == 1)
        _ = await first.sync(force: true)
        let file = cache.appendingPathComponent("demo/device-secret")
        let kept = String(decoding: try #require(FileManager.default.contents(atPath: file.path)), as: UTF8.self)
        let secret = try DeviceSecret(String(kept.dropLast()))
        #expect(kept.hasSuffix("\n") && secret.rawValue.utf8.count == 64)
        #expect(try #require(try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int) == 0o600)
        #expect(Self.secrets(mirror) == [secret.rawValue, secret.rawValue])
        let others = mirror.received.filter { !$0.path.hasSuffix("/timestamp.json") }
        #expect(!others.isEmpty && others.allSatisfy { $0.header(DeviceSecret.header) == nil },
                "only the metered request carries it: nothing else is keyed by it")

        // A restart (a new client on the same cache) and an app update (another version directory).
        let seen = mirror.received.count
        _ = await PatchClient(configuration: try fixture.configuration(fixture.demo, server: mirror.url, cache: cache)).sync(force: true)
        var updated = try fixture.configuration(fixture.demo, server: mirror.url, cache: cache)
        updated.appVersion = try AppVersion("2.4")
        _ = await PatchClient(configuration: updated).sync(force: true)
        #expect(Self.secrets(mirror, from: seen) == [secret.rawValue, secret.rawValue])

        // Another installation of the same device ID (a reinstall, or someone who knows it): another secret.
        let seenAgain = mirror.received.count
        _ = await PatchClient(configuration: try fixture.configuration(fixture.demo, server: mirror.url)).sync(force: true)
        let other = try #require(Self.secrets(mirror, from: seenAgain).first ?? nil)
        #expect(other != secret.rawValue)
    }

    @Test("clients of one installation that make the secret at the same moment agree on one; a file that holds no secret is replaced")
    func madeOnce() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("secret-\(UUID().uuidString)/demo", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: directory.deletingLastPathComponent()) }
        let path = directory.appendingPathComponent("device-secret").path
        let made = Locked<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 16) { _ in
            if let secret = try? CacheFiles.deviceSecret(atPath: path) { made.withLock { $0.append(secret.rawValue) } }
        }
        #expect(made.withLock { $0.count } == 16)
        #expect(Set(made.withLock { $0 }).count == 1)
        try Data("not a secret\n".utf8).write(to: URL(fileURLWithPath: path))
        let replaced = try CacheFiles.deviceSecret(atPath: path)
        #expect(!made.withLock { $0 }.contains(replaced.rawValue))
        #expect(try CacheFiles.deviceSecret(atPath: path) == replaced)
    }

    @Test("against patchd: another client hammering this device's ID (no secret, or its own) spends neither its interval nor its check after a revoke")
    func victimIsServed() async throws {
        let fixture = try ClientFixture()
        try fixture.registry.setThrottleRules(app: fixture.demo, ThrottleRules(minInterval: 3600, ipRatePerMinute: 0), actor: fixture.actor)
        try fixture.publish(fixture.demo)
        try fixture.publish(fixture.demo)
        let server = try LiveServer(fixture)
        let client = PatchClient(configuration: try fixture.configuration(fixture.demo, server: server.url, device: "phone-7"))
        try await installGood(client, number: 2, script: ClientFixture.script(fixture.demo, 2))
        func hammer() {
            for secret in [nil, DeviceSecret.generate().rawValue] {
                var headers = ["X-Device-ID": "phone-7", "X-App-Version": "2.3"]
                headers[DeviceSecret.header] = secret
                for _ in 0..<5 {
                    _ = server.service.respond(to: HTTPRequest(method: "GET", path: "/v1/apps/demo/metadata/timestamp.json", headers: headers))
                }
            }
        }
        hammer()
        guard case .throttled = await client.sync(force: true) else { Issue.record("its own hour still holds it"); return }
        try fixture.revoke(fixture.demo, number: 2)
        server.service.reloadChanged()
        hammer()
        let outcome = await client.sync(force: true)
        #expect(outcome.updatedNumber == 1, "the revoke's check was still this device's: got \(outcome)")
    }
}
