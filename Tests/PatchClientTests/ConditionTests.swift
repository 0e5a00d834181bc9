import Foundation
import PatchCore
import PatchSigning
import PatchRegistry
import Testing
@testable import PatchClient

/// Signed delivery conditions as a device sees them: only listed test devices and devices in
/// the OS range install a conditional patch; everyone else keeps what the split gives them,
/// and no mirror can widen a condition without the targets key.
@Suite("PatchClient honours signed delivery conditions")
struct ConditionClientTests {
    static let qaScript = "console.log('QA build for listed phones');\n"

    /// demo 2.3: patch 1 for everyone, patch 2 (100 %) only for qa-phone-1 and qa-phone-2 on OS ≥ 16.
    static func scene() throws -> (ClientFixture, Mirror, PatchRecord) {
        let fixture = try ClientFixture()
        try fixture.publish(fixture.demo)
        let conditions = try DeliveryConditions(devices: try .hashing(["qa-phone-1", "qa-phone-2"]),
                                                os: try .init(min: try OSVersion("16"), max: nil))
        let qa = try fixture.registry.publish(app: fixture.demo, appVersion: fixture.version, bundle: Array(qaScript.utf8),
                                              conditions: conditions, actor: fixture.actor).patch
        let mirror = try Mirror()
        mirror.serve(try fixture.exported(fixture.demo))
        return (fixture, mirror, qa)
    }

    func client(_ fixture: ClientFixture, _ mirror: Mirror, device: String, os: String?, cache: URL? = nil) throws -> PatchClient {
        var configuration = try fixture.configuration(fixture.demo, server: mirror.url, device: device, cache: cache)
        configuration.osVersion = os
        return PatchClient(configuration: configuration)
    }

    @Test("a listed device on a matching OS gets the conditional patch; others keep patch 1")
    func onlyListedDevices() async throws {
        let (fixture, mirror, qa) = try Self.scene()
        #expect(qa.targetPath == "2.3/2/main.conditional.js")
        let targets = try fixture.latestTargets(fixture.demo).body.targets
        #expect(Set(targets.keys) == ["2.3/1/main.js", "2.3/2/main.conditional.js"], "a conditional 100 % patch does not end the listing")
        try await installGood(try client(fixture, mirror, device: "qa-phone-1", os: "17.2"), number: 2, script: Self.qaScript)
        let script1 = ClientFixture.script(fixture.demo, 1)
        try await installGood(try client(fixture, mirror, device: "customer-1", os: "17.2"), number: 1, script: script1)
        try await installGood(try client(fixture, mirror, device: "qa-phone-2", os: "15.7"), number: 1, script: script1)
        try await installGood(try client(fixture, mirror, device: "qa-phone-2", os: nil), number: 1, script: script1)
        #expect(!String(decoding: try fixture.latestTargets(fixture.demo).bytes, as: UTF8.self).contains("qa-phone"),
                "targets metadata never holds a raw device ID")
    }

    @Test("a device updated out of the OS range drops the conditional patch at its next sync")
    func osUpdateOutOfRange() async throws {
        let fixture = try ClientFixture()
        try fixture.publish(fixture.demo)
        let conditions = try DeliveryConditions(devices: nil, os: try .init(min: nil, max: try OSVersion("17.4")))
        _ = try fixture.registry.publish(app: fixture.demo, appVersion: fixture.version, bundle: Array(Self.qaScript.utf8),
                                         conditions: conditions, actor: fixture.actor)
        let mirror = try Mirror()
        mirror.serve(try fixture.exported(fixture.demo))
        let cache = fixture.newCacheDirectory()
        try await installGood(try client(fixture, mirror, device: "d-1", os: "17.4.1", cache: cache), number: 2, script: Self.qaScript)
        let updated = try client(fixture, mirror, device: "d-1", os: "17.5", cache: cache)
        #expect(await updated.sync(force: true).updatedNumber == 1, "17.5 is past the range: back to patch 1")
    }

    @Test("a mirror that strips the conditions (no targets key) is refused, and the device keeps patch 1")
    func strippedConditionsRefused() async throws {
        let (fixture, mirror, _) = try Self.scene()
        let customer = try client(fixture, mirror, device: "customer-1", os: "17.2")
        let good = try await installGood(customer, number: 1, script: ClientFixture.script(fixture.demo, 1))
        let strip = { (targets: inout TargetsBody) in
            guard var entry = targets.targets.removeValue(forKey: "2.3/2/main.conditional.js"), var custom = entry.custom?.objectValue else { return }
            custom["conditions"] = nil
            entry.custom = .object(custom)
            targets.targets["2.3/2/main.js"] = entry
        }
        mirror.serve(try fixture.forgedChain(fixture.demo, targets: strip, targetsKey: try fixture.signingKey(fixture.demo, .snapshot)))
        let outcome = await customer.sync(force: true)
        #expect(outcome.verificationError != nil, "\(outcome)")
        expectKept(customer, good)
    }

    @Test("conditions under the plain main.js name (as a client before conditions would read them) are not a patch")
    func conditionsUnderPlainName() async throws {
        let (fixture, mirror, _) = try Self.scene()
        let qa = try client(fixture, mirror, device: "qa-phone-1", os: "17.2")
        // Signed with the real targets key: even then the entry is malformed, so it is skipped.
        let rename = { (targets: inout TargetsBody) in
            targets.targets["2.3/2/main.js"] = targets.targets.removeValue(forKey: "2.3/2/main.conditional.js")
        }
        mirror.serve(try fixture.forgedChain(fixture.demo, targets: rename))
        #expect(await qa.sync(force: true).updatedNumber == 1, "the renamed entry is not a hotpatch patch")
    }
}
