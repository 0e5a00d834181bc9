import Foundation
import Testing
import PatchCore
import PatchRegistry
@testable import HTTPTransport
@testable import PatchServer
import HotpatchTestSupport

/// The simple check under a halt or a lowered rollout: the rule PatchClient applies
/// (`Selection.choose`) — a device that presents the ETag of a listed patch it runs keeps
/// it (304), whatever its rollout; others are offered what the rollout says; only a revoke
/// (the patch unlisted) makes the device drop it.
@Suite("The simple check under a halt")
struct HaltCheckTests {
    static let check = "/v1/apps/demo/versions/2.3/patch"

    func check(_ f: ServiceFixture, _ device: String, etag: String? = nil, os: String? = nil) -> HTTPResponse {
        var headers = ["X-Device-ID": device]
        if let etag { headers["If-None-Match"] = etag }
        if let os { headers["X-OS-Version"] = os }
        return f.get(Self.check, headers: headers)
    }

    func setRollout(_ f: ServiceFixture, _ number: Int, _ percent: Int) {
        #expect(f.post("/v1/apps/demo/versions/2.3/patches/\(number)/rollout", body: #"{"percent": \#(percent)}"#, token: f.publisherToken).status == 200)
    }

    @Test("halted (rollout 0): a device sending its patch's ETag keeps getting 304; one without it gets the previous patch, or 204 when there is none")
    func haltKeepsThePresentedPatch() throws {
        let f = try ServiceFixture(minInterval: 0)
        #expect(f.publish("fix()").status == 201)
        let etag = try #require(check(f, "runs-it").header("ETag"))
        setRollout(f, 1, 0)
        let kept = check(f, "runs-it", etag: etag)
        #expect(kept.status == 304 && kept.header("X-Patch-Number") == "1", "a halt takes nothing from a device that runs the patch")
        #expect(check(f, "new-device").status == 204, "nor offers it to one that does not")
        #expect(check(f, "new-device", etag: "\"\(String(repeating: "0", count: 64))\"").status == 204, "an ETag of no listed patch keeps nothing")

        #expect(f.publish("older-looking()", rollout: 100).status == 201)
        #expect(f.publish("third()").status == 201)
        setRollout(f, 3, 0)
        #expect(check(f, "new-device").header("X-Patch-Number") == "2")
    }

    @Test("a halted newer patch is kept over an older 100 % one (no downgrade); a revoke then moves the device to the older patch")
    func noDowngradeUntilRevoked() throws {
        let f = try ServiceFixture(minInterval: 0)
        #expect(f.publish("one()").status == 201)
        #expect(f.publish("two()").status == 201)
        let etag = try #require(check(f, "d").header("ETag"))
        setRollout(f, 2, 0)
        #expect(check(f, "d", etag: etag).status == 304)
        #expect(check(f, "d").header("X-Patch-Number") == "1", "without the ETag: what a fresh device gets")
        setRollout(f, 2, 100)
        #expect(check(f, "d", etag: etag).status == 304)
        #expect(f.post("/v1/apps/demo/versions/2.3/patches/2/revoke", token: f.publisherToken).status == 200)
        let after = check(f, "d", etag: etag)
        #expect(after.status == 200 && after.bodyString == "one()", "only a revoke takes it away")
    }

    @Test("a lowered rollout keeps the patch on devices it no longer includes that present its ETag")
    func loweredRollout() throws {
        let f = try ServiceFixture(minInterval: 0)
        #expect(f.publish("base()").status == 201)
        #expect(f.publish("canary()", rollout: 50).status == 201)
        let devices = (0..<200).map { "device-\($0)" }
        let device = try #require(devices.first {
            Rollout.includes(percent: 50, app: "demo", appVersion: "2.3", patch: 2, deviceID: $0)
                && !Rollout.includes(percent: 10, app: "demo", appVersion: "2.3", patch: 2, deviceID: $0)
        })
        let got = check(f, device)
        #expect(got.header("X-Patch-Number") == "2")
        setRollout(f, 2, 10)
        #expect(check(f, device, etag: try #require(got.header("ETag"))).status == 304)
        #expect(check(f, device).header("X-Patch-Number") == "1")
    }

    @Test("a conditional patch the device's conditions exclude is neither offered nor kept, ETag or not")
    func conditionsStillApply() throws {
        let f = try ConditionRouteTests.fixture()
        let qa = check(f, "qa-1", os: "17.0")
        #expect(qa.bodyString == "qa()")
        let etag = try #require(qa.header("ETag"))
        #expect(check(f, "qa-1", etag: etag, os: "17.0").status == 304)
        let outOfRange = check(f, "qa-1", etag: etag, os: "18.0")
        #expect(outOfRange.status == 200 && outOfRange.bodyString == "all()", "its OS left the range: the patch counts as not listed")
    }
}
