import Foundation
import PatchCore
import PatchSigning
import PatchRegistry
import Testing
@testable import PatchClient

/// Endless data under a signed length: a holder of the online timestamp (or snapshot) key
/// can sign any length for the next file, but the client's caps hold whatever is signed.
@Suite("PatchClient caps metadata downloads whatever length is signed")
struct SignedLengthTests {
    static let huge = 1_000_000_000_000

    /// A device with patch 1 installed, moved to an endless server that serves `files`
    /// (path suffix → bytes) and streams every other metadata file without end.
    static func endless(_ device: InstalledDevice, files: [String: [UInt8]], cap: Int) throws -> (EndlessServer, PatchClient) {
        let server = try EndlessServer(files: files, cap: cap)
        var configuration = device.client.configuration
        configuration.server = server.url
        return (server, PatchClient(configuration: configuration))
    }

    @Test("a timestamp (real key) pinning the snapshot at 10^12 bytes: the endless snapshot is cut at 2,000,000 bytes → .tooLarge")
    func hugeSignedSnapshotLength() async throws {
        let device = try await InstalledDevice.demo()
        let fixture = device.fixture
        var timestamp = try fixture.latestTimestamp(fixture.demo).body
        timestamp.version += 1
        timestamp.snapshot = MetaFile(version: timestamp.snapshot.version + 1, length: Self.huge)
        let signed = try SignedTimestamp(signing: timestamp, with: [try fixture.signingKey(fixture.demo, .timestamp)]).bytes
        let cap = 64 << 20
        let (server, client) = try Self.endless(device, files: ["/timestamp.json": signed], cap: cap)
        let outcome = await client.sync(force: true)
        let path = ClientFixture.metadataPath(fixture.demo, "\(timestamp.snapshot.version).snapshot.json")
        #expect(outcome == .failed(.tooLarge(what: server.url.absoluteString + path, limit: TrustedMetadata.maxSnapshotLength)))
        expectNotReadOn(server)
        expectKept(client, device.good)
    }

    @Test("a snapshot (real key) pinning targets at 10^12 bytes: the endless targets file is cut at 5,000,000 bytes → .tooLarge")
    func hugeSignedTargetsLength() async throws {
        let device = try await InstalledDevice.demo()
        let fixture = device.fixture
        var snapshot = try fixture.latestSnapshot(fixture.demo).body
        snapshot.version += 1
        let targetsVersion = snapshot.meta["targets.json"]!.version + 1
        snapshot.meta["targets.json"] = MetaFile(version: targetsVersion, length: Self.huge)
        let snapshotBytes = try SignedSnapshot(signing: snapshot, with: [try fixture.signingKey(fixture.demo, .snapshot)]).bytes
        let timestamp = try fixture.forgedTimestamp(fixture.demo, pinning: (snapshot.version, snapshotBytes))
        let cap = 64 << 20
        let (server, client) = try Self.endless(device, files: ["/timestamp.json": timestamp, "/\(snapshot.version).snapshot.json": snapshotBytes], cap: cap)
        let outcome = await client.sync(force: true)
        let path = ClientFixture.metadataPath(fixture.demo, "\(targetsVersion).targets.json")
        #expect(outcome == .failed(.tooLarge(what: server.url.absoluteString + path, limit: TrustedMetadata.maxTargetsLength)))
        expectNotReadOn(server)
        expectKept(client, device.good)
    }
}
