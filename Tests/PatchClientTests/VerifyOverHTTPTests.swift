import Foundation
import HTTPClientKit
import PatchCore
import PatchRegistry
import Testing
@testable import PatchClient

/// `patchctl verify --server` is `RepositoryVerifier` over `HTTPRepository`: the device's
/// updater and fetcher, so a hostile server meets the device's caps and no redirect.
@Suite("RepositoryVerifier over HTTP reads a server as a device does")
struct VerifyOverHTTPTests {
    @Test("an honest server verifies; an endless timestamp.json is refused at 16,384 bytes and not read on")
    func endlessTimestamp() async throws {
        let device = try await InstalledDevice.demo()
        let fixture = device.fixture
        let root = try fixture.initialRoot(fixture.demo)
        let honest = try await RepositoryVerifier.verify(fetcher: HTTPRepository(server: device.mirror.url, app: fixture.demo), trustedRoot: root)
        #expect(honest.ok && honest.targets.map(\.path) == ["2.3/1/main.js"])

        let cap = 64 << 20
        let endless = try EndlessServer(files: [:], cap: cap)
        let repository = HTTPRepository(server: endless.url, app: fixture.demo)
        let location = repository.location(of: .metadata("timestamp.json"))
        await #expect(throws: VerificationError.rejected("\(location) exceeds 16384 bytes (endless data?)")) {
            try await RepositoryVerifier.verify(fetcher: repository, trustedRoot: root)
        }
        expectNotReadOn(endless)
    }

    @Test("a 302 for timestamp.json is not followed: could not run, and the other host gets no request")
    func redirectIsNotFollowed() async throws {
        let device = try await InstalledDevice.demo()
        let fixture = device.fixture
        let elsewhere = try Mirror(host: "127.0.0.2")
        let timestamp = ClientFixture.metadataPath(fixture.demo, "timestamp.json")
        elsewhere[timestamp] = device.mirror[timestamp]
        device.mirror[timestamp] = CannedResponse(status: 302, headers: [("Location", "http://127.0.0.2:\(elsewhere.port)\(timestamp)")], body: [])
        let repository = HTTPRepository(server: device.mirror.url, app: fixture.demo)
        let location = repository.location(of: .metadata("timestamp.json"))
        await #expect(throws: VerificationError.couldNotRun("\(location) answered HTTP 302")) {
            try await RepositoryVerifier.verify(fetcher: repository, trustedRoot: try fixture.initialRoot(fixture.demo))
        }
        #expect(elsewhere.requests.isEmpty, "nothing followed")
    }
}
