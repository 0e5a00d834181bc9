import Foundation
import PatchCore
import PatchSigning
import PatchRegistry
import Testing
@testable import PatchClient

/// A client follows one channel, and the channel is part of the signed target path: no
/// mirror (nor a server holding only the online snapshot/timestamp keys) can make a
/// production device install a staging patch.
@Suite("PatchClient follows one channel")
struct ChannelClientTests {
    static let stagingScript = "console.log('staging build');\n"

    /// Production patch 1, staging patch 2 of demo 2.3, exported to a mirror.
    static func scene() throws -> (ClientFixture, Mirror, PatchRecord) {
        let fixture = try ClientFixture()
        try fixture.publish(fixture.demo)
        let staging = try fixture.registry.publish(app: fixture.demo, appVersion: fixture.version, bundle: Array(stagingScript.utf8),
                                                   channel: try ChannelName("staging"), newChannel: true, actor: fixture.actor).patch
        let mirror = try Mirror()
        mirror.serve(try fixture.exported(fixture.demo))
        return (fixture, mirror, staging)
    }

    func client(_ fixture: ClientFixture, _ mirror: Mirror, channel: String, cache: URL? = nil) throws -> PatchClient {
        var configuration = try fixture.configuration(fixture.demo, server: mirror.url, cache: cache)
        configuration.channel = try ChannelName(channel)
        return PatchClient(configuration: configuration)
    }

    @Test("a production client installs the production patch, a staging client the staging one, from one signed targets")
    func eachChannelItsPatch() async throws {
        let (fixture, mirror, _) = try Self.scene()
        let production = try client(fixture, mirror, channel: "production")
        try await installGood(production, number: 1, script: ClientFixture.script(fixture.demo, 1))
        #expect(await production.sync(force: true) == .unchanged(production.currentPatch()), "patch 2 is staging's: never picked")
        let staging = try client(fixture, mirror, channel: "staging")
        try await installGood(staging, number: 2, script: Self.stagingScript)
        var configuration = try fixture.configuration(fixture.demo, server: mirror.url)
        #expect(configuration.channel == .production, "the default channel")
        configuration.channel = try ChannelName("qa")
        #expect(await PatchClient(configuration: configuration).sync(force: true) == .unchanged(nil), "a channel with no patch gets none")
    }

    @Test("a device moved from staging to production drops the staging patch for production's")
    func switchingChannels() async throws {
        let (fixture, mirror, _) = try Self.scene()
        let cache = fixture.newCacheDirectory()
        try await installGood(try client(fixture, mirror, channel: "staging", cache: cache), number: 2, script: Self.stagingScript)
        let moved = try client(fixture, mirror, channel: "production", cache: cache)
        try await installGood(moved, number: 1, script: ClientFixture.script(fixture.demo, 1))
    }

    @Test("a mirror that relabels the staging target as production's (no targets key) → refused, patch 1 stays")
    func relabelledTargetRefused() async throws {
        let (fixture, mirror, staging) = try Self.scene()
        let production = try client(fixture, mirror, channel: "production")
        let good = try await installGood(production, number: 1, script: ClientFixture.script(fixture.demo, 1))
        let relabel = { (targets: inout TargetsBody) in
            targets.targets["2.3/2/main.js"] = targets.targets.removeValue(forKey: "staging/2.3/2/main.js")
        }
        let stagingBytes = try fixture.registry.servedBytes(sha256: staging.served.sha256)
        let productionURLs = [staging.served.sha256, staging.served.md5].map { "/v1/apps/demo/targets/2.3/2/\($0).main.js" }
        // Signed with the snapshot key, as a server holding only the online keys could.
        let forged = try fixture.forgedChain(fixture.demo, targets: relabel, targetsKey: try fixture.signingKey(fixture.demo, .snapshot))
        mirror.serve(forged)
        for url in productionURLs { mirror.serve([url: stagingBytes]) }
        let outcome = await production.sync(force: true)
        #expect(outcome.verificationError != nil, "\(outcome)")
        expectKept(production, good)
        #expect(!mirror.requests.contains { productionURLs.contains($0) }, "the relabelled bundle is never downloaded")
    }

    @Test("staging bytes served at a production patch's URLs → .verification(hash mismatch), patch 1 stays")
    func stagingBytesAtProductionURL() async throws {
        let (fixture, mirror, staging) = try Self.scene()
        let production = try client(fixture, mirror, channel: "production")
        let good = try await installGood(production, number: 1, script: ClientFixture.script(fixture.demo, 1))
        let patch3 = try fixture.registry.publish(app: fixture.demo, appVersion: fixture.version, bundle: Array("console.log('release build');\n".utf8),
                                                  actor: fixture.actor).patch
        mirror.serve(try fixture.exported(fixture.demo))
        let stagingBytes = try fixture.registry.servedBytes(sha256: staging.served.sha256)
        #expect(stagingBytes.count == patch3.served.length, "same length: only the hashes can tell them apart")
        for path in ClientFixture.targetPaths(patch3) { mirror.serve([path: stagingBytes]) }
        let outcome = await production.sync(force: true)
        #expect(isHashMismatch(outcome.verificationError, what: "target 2.3/3/main.js"), "\(outcome)")
        expectKept(production, good)
    }
}
