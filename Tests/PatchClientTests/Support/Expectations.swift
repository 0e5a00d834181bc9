import Foundation
import PatchCore
import Testing
@testable import PatchClient

/// A patch a device installed, with the bytes main.js held: what an attack must not change.
struct GoodPatch {
    let patch: InstalledPatch
    let bytes: [UInt8]
}

extension PatchClient {
    /// main.js as it is on disk (nil when absent).
    var scriptBytes: [UInt8]? { CacheFiles.read(configuration.scriptURL) }
    var state: ClientState { CacheFiles.loadState(configuration.stateURL) }
}

extension SyncOutcome {
    var failure: PatchClientError? {
        if case .failed(let error) = self { return error }
        return nil
    }

    var verificationError: TUFError? {
        if case .failed(.verification(let error)) = self { return error }
        return nil
    }

    /// The patch number of an `.updated` outcome.
    var updatedNumber: Int? {
        if case .updated(let patch) = self { return patch.number }
        return nil
    }
}

/// Syncs (forced) and expects `script` installed as patch `number`; returns it for later checks.
@discardableResult
func installGood(_ client: PatchClient, number: Int, script: String,
                 sourceLocation: SourceLocation = #_sourceLocation) async throws -> GoodPatch {
    let outcome = await client.sync(force: true)
    let patch = try #require(outcome.updatedNumber == number ? client.currentPatch() : nil,
                             "expected patch \(number) installed, got \(outcome)", sourceLocation: sourceLocation)
    #expect(outcome == .updated(patch), sourceLocation: sourceLocation)
    #expect(client.scriptBytes == Array(script.utf8), sourceLocation: sourceLocation)
    #expect(patch.sha256 == Digest.sha256Hex(Array(script.utf8)), sourceLocation: sourceLocation)
    return GoodPatch(patch: patch, bytes: Array(script.utf8))
}

/// The device still runs `good`: same number and sha256 from `currentPatch()`, and main.js
/// byte for byte as before.
func expectKept(_ client: PatchClient, _ good: GoodPatch, sourceLocation: SourceLocation = #_sourceLocation) {
    let current = client.currentPatch()
    #expect(current?.number == good.patch.number, "the previous patch must stay installed", sourceLocation: sourceLocation)
    #expect(current?.sha256 == good.patch.sha256, sourceLocation: sourceLocation)
    #expect(client.scriptBytes == good.bytes, "main.js must be unchanged", sourceLocation: sourceLocation)
}

/// Whether `error` is a hash mismatch about `what` (the algorithm reported depends on
/// dictionary order, so either one is accepted).
func isHashMismatch(_ error: TUFError?, what: String) -> Bool {
    if case .hashMismatch(what: what, algorithm: let algorithm)? = error { return ["sha256", "md5"].contains(algorithm) }
    return false
}

/// A demo device that installed patch 1 from a mirror serving the exported repository:
/// the starting point of the attack tests.
struct InstalledDevice {
    let fixture: ClientFixture
    let mirror: Mirror
    let client: PatchClient
    let good: GoodPatch

    static func demo() async throws -> InstalledDevice {
        let fixture = try ClientFixture()
        try fixture.publish(fixture.demo)
        let mirror = try Mirror()
        mirror.serve(try fixture.exported(fixture.demo))
        let client = PatchClient(configuration: try fixture.configuration(fixture.demo, server: mirror.url))
        let good = try await installGood(client, number: 1, script: ClientFixture.script(fixture.demo, 1))
        return InstalledDevice(fixture: fixture, mirror: mirror, client: client, good: good)
    }
}
