import Foundation
import PatchCore
import PatchRegistry
import Testing
@testable import PatchClient

/// The ordinary life of a device: first install over real HTTP, the local interval, the
/// server's 429, staged rollouts.
@Suite("PatchClient sync")
struct SyncTests {
    @Test("a plain app's patch is installed: .updated, main.js is the published script, state.json written")
    func installsPlainPatch() async throws {
        let fixture = try ClientFixture()
        try fixture.publish(fixture.demo)
        let mirror = try Mirror()
        mirror.serve(try fixture.exported(fixture.demo))
        let client = PatchClient(configuration: try fixture.configuration(fixture.demo, server: mirror.url))
        #expect(client.currentPatch() == nil)

        let script = ClientFixture.script(fixture.demo, 1)
        let good = try await installGood(client, number: 1, script: script)
        #expect(good.patch == InstalledPatch(number: 1, path: client.configuration.scriptURL, sha256: Digest.sha256Hex(Array(script.utf8)), confirmed: false))
        #expect(FileManager.default.fileExists(atPath: client.configuration.stateURL.path))
        #expect(client.state.installed?.number == 1)
        // The TUF workflow as PROTOCOL.md section 2 lists it, bundle under its sha256 name.
        let patch = try #require(try fixture.registry.patches(app: fixture.demo, appVersion: fixture.version, activeOnly: true).first)
        #expect(mirror.requests == ["/v1/apps/demo/metadata/2.root.json", "/v1/apps/demo/metadata/timestamp.json",
                                    "/v1/apps/demo/metadata/2.snapshot.json", "/v1/apps/demo/metadata/2.targets.json",
                                    "/v1/apps/demo/targets/2.3/1/\(patch.served.sha256).main.js",
                                    // …then the device's one reports request (docs/PROTOCOL.md, "Device reports").
                                    "/v1/apps/demo/reports"])
    }

    @Test("an encrypted app's patch is decrypted with the content key and installed as the plaintext")
    func installsEncryptedPatch() async throws {
        let fixture = try ClientFixture()
        let record = try fixture.publish(fixture.secret)
        #expect(record.encrypted)
        let mirror = try Mirror()
        mirror.serve(try fixture.exported(fixture.secret))
        let served = mirror.bytes(ClientFixture.targetPaths(record)[0])
        let script = ClientFixture.script(fixture.secret, 1)
        #expect(served.count == script.utf8.count + 28, "what is served is nonce + ciphertext + tag")

        let client = PatchClient(configuration: try fixture.configuration(fixture.secret, server: mirror.url))
        try await installGood(client, number: 1, script: script)
        #expect(FileManager.default.fileExists(atPath: client.configuration.stateURL.path))
    }

    @Test("a no-change sync rewrites nothing durable (state.json, main.js, the metadata cache keep inode and mtime; only last-check moves), a change still does")
    func noChangeSyncWritesNothingDurable() async throws {
        let fixture = try ClientFixture()
        try fixture.publish(fixture.demo)
        let mirror = try Mirror()
        mirror.serve(try fixture.exported(fixture.demo))
        let configuration = try fixture.configuration(fixture.demo, server: mirror.url)
        let now = Date(timeIntervalSince1970: TimeInterval(Int(Date().timeIntervalSince1970)))
        #expect(await PatchClient(configuration: configuration).sync(force: true, now: now).updatedNumber == 1)

        // Every file under the cache but last-check, by inode, mtime and size.
        func files() -> [String: [Int]] {
            var out: [String: [Int]] = [:]
            let root = configuration.cacheDirectory.path
            for case let name as String in FileManager.default.enumerator(atPath: root) ?? FileManager.DirectoryEnumerator() {
                var info = stat()
                guard lstat(root + "/" + name, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, !name.hasSuffix("last-check") else { continue }
                out[name] = [Int(info.st_ino), Int(info.st_mtim.tv_sec), Int(info.st_mtim.tv_nsec), Int(info.st_size)]
            }
            return out
        }
        let before = files()
        #expect(before.keys.contains { $0.hasSuffix("state.json") } && before.keys.contains { $0.hasSuffix("metadata/timestamp.json") })

        // A fresh client on the warm cache (as an app relaunched), nothing new on the server.
        let restarted = PatchClient(configuration: configuration)
        let later = now.addingTimeInterval(60)
        #expect(await restarted.sync(force: true, now: later) == .unchanged(restarted.currentPatch()))
        #expect(files() == before, "a no-change sync replaced a cache file")
        #expect(PatchClient(configuration: configuration).lastCheck == later, "the check's time survives a restart (last-check)")

        // A new patch: state.json is replaced (durably, DurableFile) and holds the check's time.
        try fixture.publish(fixture.demo)
        mirror.serve(try fixture.exported(fixture.demo))
        let latest = later.addingTimeInterval(60)
        #expect(await restarted.sync(force: true, now: latest).updatedNumber == 2)
        let after = files()
        let state = try #require(before.keys.first { $0.hasSuffix("state.json") })
        #expect(after[state] != before[state])
        #expect(!FileManager.default.fileExists(atPath: CacheFiles.checkPath(beside: configuration.stateURL)))
        #expect(PatchClient(configuration: configuration).lastCheck == latest)
    }

    @Test("a sync's requests share one connection, and on libcurl a new PatchClient reuses the one an earlier one left: three clients' syncs (a cold one, two no-change) over one accepted TCP connection (three over URLSession, a session per client)")
    func clientsShareOneConnection() async throws {
        let fixture = try ClientFixture()
        try fixture.publish(fixture.demo)
        let mirror = try Mirror()
        defer { mirror.stop() }
        mirror.serve(try fixture.exported(fixture.demo))
        // The proxy counts what reaches the server; its port is new, so no connection to it
        // is cached from another test.
        let proxy = try CountingProxy(to: mirror.port)
        let configuration = try fixture.configuration(fixture.demo, server: proxy.url)
        #expect(await PatchClient(configuration: configuration).sync(force: true).updatedNumber == 1)
        for _ in 0..<2 {
            let client = PatchClient(configuration: configuration)
            #expect(await client.sync(force: true) == .unchanged(client.currentPatch()))
        }
        #expect(mirror.requests.count >= 6, "every sync asked the server (\(mirror.requests))")
        #expect(proxy.acceptedConnections == (Transport.current.sharesConnectionsAcrossClients ? 1 : 3))
    }

    @Test("a second sync within the minimum interval is .throttled and makes no request; force: true does request")
    func localIntervalSkipsTheNetwork() async throws {
        let fixture = try ClientFixture()
        try fixture.publish(fixture.demo)
        let mirror = try Mirror()
        mirror.serve(try fixture.exported(fixture.demo))
        let client = PatchClient(configuration: try fixture.configuration(fixture.demo, server: mirror.url, minimumInterval: 3600))

        let now = Date()
        #expect(await client.sync(now: now).updatedNumber == 1)
        let afterFirst = mirror.requests.count
        let lastCheck = try #require(client.state.lastCheck)

        let second = await client.sync(now: now.addingTimeInterval(60))
        #expect(second == .throttled(until: Date(timeIntervalSince1970: lastCheck + 3600)))
        #expect(mirror.requests.count == afterFirst, "a throttled sync must not touch the network")

        let forced = await client.sync(force: true, now: now.addingTimeInterval(120))
        #expect(forced == .unchanged(client.currentPatch()))
        #expect(mirror.requests.count > afterFirst)
        // The reports are sent again: the mirror answered 404, so none were taken.
        #expect(Array(mirror.requests[afterFirst...]).filter { !$0.hasSuffix(".root.json") } == ["/v1/apps/demo/metadata/timestamp.json", "/v1/apps/demo/reports"],
                "nothing changed: no snapshot, targets or bundle fetched again")

        // Once the interval has passed, an unforced sync checks again.
        let count = mirror.requests.count
        #expect(await client.sync(now: now.addingTimeInterval(120 + 3601)) == .unchanged(client.currentPatch()))
        #expect(mirror.requests.count > count)
    }

    @Test("a 429 from patchd is honoured: .throttled(until: now + Retry-After), remembered; only force asks again (it is the device's own interval)")
    func serverRetryAfterIsRemembered() async throws {
        let fixture = try ClientFixture()
        try fixture.registry.setThrottleRules(app: fixture.demo, ThrottleRules(minInterval: 3600, ipRatePerMinute: 0), actor: fixture.actor)
        try fixture.publish(fixture.demo)
        let server = try LiveServer(fixture)
        let client = PatchClient(configuration: try fixture.configuration(fixture.demo, server: server.url, device: "device-429"))

        try await installGood(client, number: 1, script: ClientFixture.script(fixture.demo, 1))
        let now = Date()
        let second = await client.sync(force: true, now: now)
        guard case .throttled(let until) = second else {
            Issue.record("expected .throttled from the server's 429, got \(second)")
            return
        }
        #expect(abs(until.timeIntervalSince(now) - 3600) < 10, "until ≈ now + Retry-After (≈ 3600 s), got \(until.timeIntervalSince(now)) s")
        #expect(client.state.retryAfter == until.timeIntervalSince1970)
        expectKept(client, GoodPatch(patch: try #require(client.currentPatch()), bytes: Array(ClientFixture.script(fixture.demo, 1).utf8)))

        let count = server.requestCount
        let third = await client.sync(now: now.addingTimeInterval(5))
        guard case .throttled(let again) = third else {
            Issue.record("expected .throttled again, got \(third)")
            return
        }
        #expect(abs(again.timeIntervalSince(until)) < 0.001, "the same deadline (kept in state.json as seconds since 1970)")
        #expect(server.requestCount == count, "the remembered Retry-After holds a sync back")
        // The 429 said X-Throttle-Scope: device, so a forced sync asks (a revoke would have
        // lifted the interval); nothing changed, so it is 429 again.
        guard case .throttled = await client.sync(force: true, now: now.addingTimeInterval(6)) else {
            Issue.record("expected .throttled from the server")
            return
        }
        #expect(server.requestCount > count, "the forced sync reached the server")
    }

    @Test("40 devices against a 30% rollout on top of a 100% patch each get exactly what Rollout.includes says")
    func rolloutSplitsDevices() async throws {
        let fixture = try ClientFixture()
        try fixture.publish(fixture.demo)
        try fixture.publish(fixture.demo, rollout: 30)
        let server = try LiveServer(fixture)
        let devices = (0..<40).map { String(format: "device-%04d", $0) }
        let configurations = try devices.map { try fixture.configuration(fixture.demo, server: server.url, device: $0) }

        let results = await withTaskGroup(of: (String, SyncOutcome, InstalledPatch?).self) { group in
            for configuration in configurations {
                group.addTask {
                    let client = PatchClient(configuration: configuration)
                    return (configuration.deviceID, await client.sync(), client.currentPatch())
                }
            }
            var all: [(String, SyncOutcome, InstalledPatch?)] = []
            for await result in group { all.append(result) }
            return all
        }
        #expect(results.count == 40)
        var counts = [1: 0, 2: 0]
        for (device, outcome, current) in results {
            let expected = Rollout.includes(percent: 30, app: "demo", appVersion: "2.3", patch: 2, deviceID: device) ? 2 : 1
            #expect(outcome.updatedNumber == expected, "\(device): \(outcome)")
            #expect(current?.number == expected, "\(device)")
            counts[expected, default: 0] += 1
        }
        #expect(counts[1]! > 0 && counts[2]! > 0, "the sample of 40 devices holds both groups: \(counts)")
    }
}
