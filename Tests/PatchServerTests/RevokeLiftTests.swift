import Foundation
import Testing
import PatchCore
import PatchRegistry
@testable import HTTPTransport
@testable import PatchServer
import HotpatchTestSupport

/// A revoke that lands in seconds: a change that takes code away from an app version and
/// channel (revoke, rollback) lifts the per-device interval for the devices that checked
/// before it, once each; nothing else does — not a halt or a lowered rollout, which take
/// nothing from the devices that run the patch (`Selection.choose`).
@Suite("Revoke lifts the per-device interval")
struct RevokeLiftTests {
    static let check = "/v1/apps/demo/versions/2.3/patch"

    static func fixture() throws -> ServiceFixture {
        let f = try ServiceFixture(minInterval: 3600)
        #expect(f.publish("one()").status == 201)
        #expect(f.publish("two()").status == 201)
        #expect(f.publish("one()", version: "2.4").status == 201)
        return f
    }

    func status(_ f: ServiceFixture, _ path: String = check, device: String = "d1", headers: [String: String] = [:]) -> Int {
        f.get(path, headers: ["X-Device-ID": device].merging(headers) { a, _ in a }).status
    }

    @Test("after a revoke, a device that checked before it is answered once, then throttled again")
    func revokeLifts() throws {
        let f = try Self.fixture()
        #expect(status(f) == 200)
        f.clock.advance(5)
        #expect(status(f) == 429, "inside the hour")
        #expect(f.post("/v1/apps/demo/versions/2.3/patches/2/revoke", token: f.publisherToken).status == 200)
        let answer = f.get(Self.check, headers: ["X-Device-ID": "d1"])
        #expect(answer.status == 200 && answer.header("X-Patch-Number") == "1", "the revoked patch is gone at once")
        f.clock.advance(1)
        #expect(status(f) == 429, "one check per device per change")
        #expect(status(f, device: "d-new") == 200, "an unseen device as ever")
    }

    @Test("the lift is per app version and channel: 2.4's devices and staging's keep their interval")
    func scoped() throws {
        let f = try Self.fixture()
        #expect(status(f, "/v1/apps/demo/versions/2.4/patch", device: "v24") == 200)
        #expect(f.service.respond(to: HTTPRequest(method: "GET", path: Self.check, headers: ["X-Device-ID": "stg"],
                                                  query: ["channel": "staging"], remoteAddress: "127.0.0.1")).status == 204)
        f.clock.advance(5)
        #expect(f.post("/v1/apps/demo/versions/2.3/patches/2/revoke", token: f.publisherToken).status == 200)
        #expect(status(f, "/v1/apps/demo/versions/2.4/patch", device: "v24") == 429)
        #expect(f.service.respond(to: HTTPRequest(method: "GET", path: Self.check, headers: ["X-Device-ID": "stg"],
                                                  query: ["channel": "staging"], remoteAddress: "127.0.0.1")).status == 429)
    }

    @Test("timestamp.json: not lifted by a halt; lifted by a revoke for a client that names version 2.3 (PatchClient) or no version (python-tuf), not for 2.4")
    func timestamp() throws {
        let f = try Self.fixture()
        let path = "/v1/apps/demo/metadata/timestamp.json"
        for (device, version) in [("named", "2.3"), ("unnamed", nil), ("other", "2.4")] as [(String, String?)] {
            #expect(status(f, path, device: device, headers: version.map { ["X-App-Version": $0] } ?? [:]) == 200)
        }
        f.clock.advance(5)
        #expect(f.post("/v1/apps/demo/versions/2.3/patches/2/rollout", body: #"{"percent": 0}"#, token: f.publisherToken).status == 200,
                "a halt")
        #expect(status(f, path, device: "named", headers: ["X-App-Version": "2.3", "X-Channel": "production"]) == 429,
                "a halt takes nothing from the devices that run the patch: nothing to land early")
        #expect(f.post("/v1/apps/demo/versions/2.3/patches/2/revoke", token: f.publisherToken).status == 200)
        #expect(status(f, path, device: "named", headers: ["X-App-Version": "2.3", "X-Channel": "production"]) == 200)
        #expect(status(f, path, device: "unnamed") == 200)
        #expect(status(f, path, device: "other", headers: ["X-App-Version": "2.4"]) == 429)
        #expect(status(f, path, device: "bad", headers: ["X-App-Version": "2.03"]) == 400)
    }

    @Test("publishing, or raising a rollout, adds code and lifts nothing")
    func addingLiftsNothing() throws {
        let f = try Self.fixture()
        #expect(f.publish("three()", rollout: 10).status == 201)
        #expect(status(f) == 200)
        f.clock.advance(5)
        #expect(f.publish("four()").status == 201)
        #expect(status(f) == 429)
        #expect(f.post("/v1/apps/demo/versions/2.3/patches/3/rollout", body: #"{"percent": 50}"#, token: f.publisherToken).status == 200)
        #expect(status(f) == 429)
    }

    @Test("a revoke made by patchctl on the same registry (picked up by reloadChanged) lifts too")
    func outsideChange() throws {
        let f = try Self.fixture()
        #expect(status(f) == 200)
        f.clock.advance(5)
        let registry = try TestBackend.registry(dataDirectory: f.dataDirectory, keysDirectory: f.keysDirectory)
        _ = try registry.revoke(app: try AppName("demo"), appVersion: try AppVersion("2.3"), number: nil, actor: .init("outside"))
        #expect(status(f) == 429, "not yet seen")
        f.service.reloadChanged()
        #expect(status(f) == 204, "every 2.3 patch revoked: none, answered at once")
    }
}
