import Foundation
import PatchCore
import PatchRegistry
import Testing
@testable import PatchClient
import HotpatchTestSupport

/// What an app reads and does besides syncing: one sync at a time, cancellation, the last
/// check and error, the server's message, clearing the cache, the content key file.
@Suite("PatchClient as an app uses it")
struct ClientStatusTests {
    static func scene() throws -> (ClientFixture, Mirror, PatchClient) {
        let fixture = try ClientFixture()
        try fixture.publish(fixture.demo)
        let mirror = try Mirror()
        mirror.serve(try fixture.exported(fixture.demo))
        return (fixture, mirror, PatchClient(configuration: try fixture.configuration(fixture.demo, server: mirror.url)))
    }

    @Test("two overlapping syncs against a slow server make one set of requests and return the same outcome")
    func overlappingSyncsJoin() async throws {
        let (_, mirror, client) = try Self.scene()
        mirror.delay = 0.4
        async let first = client.sync(force: true)
        // Well inside the first sync (five answers of 0.4 s each).
        try await Task.sleep(nanoseconds: 300_000_000)
        let second = await client.sync(force: true)
        let outcome = await first
        #expect(outcome.updatedNumber == 1)
        #expect(second == outcome)
        #expect(mirror.requests.filter { $0.hasSuffix("/timestamp.json") }.count == 1, "\(mirror.requests)")
        #expect(mirror.requests.filter { $0.hasSuffix(".main.js") }.count == 1)
        // Once it is over, the next sync is a new one.
        mirror.delay = 0
        #expect(await client.sync(force: true) == .unchanged(client.currentPatch()))
        #expect(mirror.requests.filter { $0.hasSuffix("/timestamp.json") }.count == 2)
    }

    @Test("cancelling the calling task is .cancelled, not .timeout, and changes nothing")
    func cancellationIsCancellation() async throws {
        let (_, mirror, client) = try Self.scene()
        mirror.delay = 5
        let task = Task { await client.sync(force: true) }
        try await Task.sleep(nanoseconds: 300_000_000)
        task.cancel()
        #expect(await task.value == .failed(.cancelled))
        #expect(client.currentPatch() == nil)
        #expect(client.lastError == nil, "a cancel is not a failure")
        #expect(client.pendingReports.isEmpty, "nor is it reported")
    }

    @Test("lastCheck and lastError are kept across restarts; a successful sync clears lastError")
    func lastCheckAndError() async throws {
        let (fixture, mirror, client) = try Self.scene()
        #expect(client.lastCheck == nil)
        let now = Date(timeIntervalSince1970: TimeInterval(Int(Date().timeIntervalSince1970)))
        #expect(await client.sync(force: true, now: now).updatedNumber == 1)
        #expect(client.lastCheck == now)
        #expect(client.lastError == nil)

        let timestamp = ClientFixture.metadataPath(fixture.demo, "timestamp.json")
        let real = mirror[timestamp]
        mirror[timestamp] = CannedResponse(status: 503, headers: [], body: [])
        let later = now.addingTimeInterval(60)
        #expect(await client.sync(force: true, now: later) == .failed(.server(status: 503, url: "timestamp.json")))
        let restarted = PatchClient(configuration: client.configuration)
        let error = try #require(restarted.lastError)
        #expect(error.at == later)
        #expect(error.code == "server")
        #expect(error.message == PatchClientError.server(status: 503, url: "timestamp.json").description)

        mirror[timestamp] = real
        #expect(await restarted.sync(force: true, now: later.addingTimeInterval(60)) == .unchanged(restarted.currentPatch()))
        #expect(restarted.lastError == nil)
        #expect(restarted.lastCheck == later.addingTimeInterval(60))
    }

    @Test("a .server error carries patchd's JSON message, bounded and without control characters")
    func serverMessage() async throws {
        let (fixture, mirror, client) = try Self.scene()
        let timestamp = ClientFixture.metadataPath(fixture.demo, "timestamp.json")
        mirror[timestamp] = CannedResponse(status: 503, headers: [("Content-Type", "application/json")],
                                           body: Array(#"{"error":"unavailable","message":"the registry is being migrated"}"#.utf8))
        #expect(await client.sync(force: true) == .failed(.server(status: 503, url: "timestamp.json", message: "the registry is being migrated")))

        let long = String(repeating: "x\\u001b[2J", count: 300)
        mirror[timestamp] = CannedResponse(status: 500, headers: [], body: Array(#"{"error":"internal","message":"\#(long)"}"#.utf8))
        guard case .failed(.server(500, _, let message?)) = await client.sync(force: true) else {
            Issue.record("expected .server(500) with a message")
            return
        }
        #expect(message.count == PatchClientError.maxServerMessage)
        #expect(message.unicodeScalars.allSatisfy { $0.value >= 0x20 })
    }

    @Test("clearCache() removes the script, the state and the trusted metadata; the next sync starts from the pinned root")
    func clearCache() async throws {
        let (_, mirror, client) = try Self.scene()
        #expect(await client.sync(force: true).updatedNumber == 1)
        let metadata = client.configuration.metadataDirectory.path
        #expect(FileManager.default.fileExists(atPath: metadata))
        try await client.clearCache()
        #expect(client.currentPatch() == nil)
        #expect(client.scriptBytes == nil)
        #expect(client.lastCheck == nil)
        #expect(!FileManager.default.fileExists(atPath: metadata))
        #expect(!FileManager.default.fileExists(atPath: client.configuration.versionDirectory.path))
        let before = mirror.requests.count
        #expect(await client.sync(force: true).updatedNumber == 1)
        #expect(mirror.requests[before...].contains { $0.hasSuffix("/2.snapshot.json") }, "snapshot fetched again: nothing cached was kept")
    }

    @Test("the content key is read from the content.key file `patchctl apps create --encrypt` writes, and decrypts its app's patch")
    func contentKeyFromPatchctlFile() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("patchclient-key-\(UUID().uuidString)", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let data = directory.appendingPathComponent("data"), keys = directory.appendingPathComponent("keys")
        let process = Process()
        process.executableURL = patchctlBinary
        process.arguments = ["apps", "create", "vault", "--encrypt", "--keys", keys.path] + (try TestBackend.arguments(dataDirectory: data.path))
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)

        let file = keys.appendingPathComponent("vault/content.key")
        let key = try ClientConfiguration.contentKey(hexFile: file)
        #expect(key.count == 32)

        let registry = try TestBackend.registry(dataDirectory: data, keysDirectory: keys)
        let app = try AppName("vault"), version = try AppVersion("2.3")
        let script = Array("vault();\n".utf8)
        _ = try registry.publish(app: app, appVersion: version, bundle: script, actor: Actor("client-tests"))
        let export = directory.appendingPathComponent("export")
        try registry.export(app: app, to: export)
        let mirror = try Mirror()
        var files: [String: [UInt8]] = [:]
        for case let relative as String in FileManager.default.enumerator(atPath: export.path)! {
            if let bytes = FileManager.default.contents(atPath: export.path + "/" + relative), !bytes.isEmpty { files["/" + relative] = Array(bytes) }
        }
        mirror.serve(files)
        var configuration = ClientConfiguration(server: mirror.url, app: app, appVersion: version, deviceID: "device-0001",
                                                trustedRoot: Data(try registry.initialRoot(app: app)), contentKey: key,
                                                cacheDirectory: directory.appendingPathComponent("cache"))
        configuration.minimumInterval = 0
        let client = PatchClient(configuration: configuration)
        #expect(await client.sync(force: true).updatedNumber == 1)
        #expect(client.scriptBytes == script)

        // Anything but 64 hex characters is refused, typed.
        let bad = directory.appendingPathComponent("bad.key")
        try Data("not a key\n".utf8).write(to: bad)
        #expect(throws: PatchClientError.self) { try ClientConfiguration.contentKey(hexFile: bad) }
        #expect(throws: PatchClientError.self) { try ClientConfiguration.contentKey(hexFile: directory.appendingPathComponent("missing.key")) }
    }

    /// The built `patchctl` (`PATCHCTL` overrides), as the CLI tests find it.
    var patchctlBinary: URL {
        if let path = ProcessInfo.processInfo.environment["PATCHCTL"] { return URL(fileURLWithPath: path) }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return root.appendingPathComponent(".build/debug/patchctl")
    }
}
