import Foundation
import PatchCore
import PatchRegistry
import Testing
@testable import PatchClient

/// An error page longer than the file it stands for (a proxy's or CDN's 404 page) is the status
/// it carries, not "endless data": the cap protects what would be read as the file.
@Suite("PatchClient reads a long error page as its status")
struct ErrorPageTests {
    static let page = CannedResponse(status: 404, headers: [("Content-Type", "text/html")], body: Array(repeating: UInt8(ascii: "x"), count: 600_000))

    @Test("a missing next root answered with a 600 kB 404 page ends the root walk: the patch installs")
    func longRootPage() async throws {
        let fixture = try ClientFixture()
        try fixture.publish(fixture.demo)
        let mirror = try Mirror()
        mirror.serve(try fixture.exported(fixture.demo))
        let next = try #require(mirror.requests.isEmpty ? "/v1/apps/demo/metadata/2.root.json" : nil)
        mirror[next] = Self.page
        let client = PatchClient(configuration: try fixture.configuration(fixture.demo, server: mirror.url))
        try await installGood(client, number: 1, script: ClientFixture.script(fixture.demo, 1))
        #expect(mirror.requests.contains(next))
    }

    @Test("a target answered with a 404 page longer than the target fails as a 404, not as endless data")
    func longTargetPage() async throws {
        let fixture = try ClientFixture()
        try fixture.publish(fixture.demo)
        let mirror = try Mirror()
        let files = try fixture.exported(fixture.demo)
        mirror.serve(files)
        // Every name the export gives the target (one per hash algorithm).
        let targets = files.keys.filter { $0.hasSuffix(".main.js") }
        #expect(!targets.isEmpty)
        for target in targets { mirror[target] = Self.page }
        let client = PatchClient(configuration: try fixture.configuration(fixture.demo, server: mirror.url))
        let outcome = await client.sync(force: true)
        guard case .failed(let error) = outcome else { Issue.record("\(outcome)"); return }
        #expect(String(describing: error).contains("404"), "\(error)")
        #expect(!String(describing: error).contains("endless"), "\(error)")
    }
}
