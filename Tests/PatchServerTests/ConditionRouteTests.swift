import Foundation
import Testing
import PatchCore
@testable import PatchRegistry
@testable import HTTPTransport
@testable import PatchServer

/// Delivery conditions over the API: publish takes them already hashed (X-Patch-Conditions),
/// and the simple check applies the same rule as PatchClient (DeliveryConditions.admits).
@Suite("Delivery conditions over the API, in process")
struct ConditionRouteTests {
    static func conditions() throws -> DeliveryConditions {
        try DeliveryConditions(devices: try .hashing(["qa-1", "qa-2"]), os: try .init(min: try OSVersion("16"), max: try OSVersion("17.4")))
    }

    /// demo 2.3: patch 1 "all()" for everyone, patch 2 "qa()" for qa-1/qa-2 on OS 16–17.4.
    static func fixture() throws -> ServiceFixture {
        let f = try ServiceFixture(minInterval: 0, channels: ["staging"])
        #expect(f.publish("all()").status == 201)
        let published = f.post("/v1/apps/demo/patches", body: "qa()", token: f.publisherToken, query: ["appVersion": "2.3"],
                               headers: ["X-Patch-Conditions": try conditions().json.canonicalString])
        #expect(published.status == 201, "\(published.bodyString)")
        let json = try f.json(published)
        #expect(json["targetPath"]?.stringValue == "2.3/2/main.conditional.js")
        #expect(json["conditions"]?["devices"]?.intValue == 2 && json["conditions"]?["os"]?["max"]?.stringValue == "17.4",
                "listings show the device count, not the hashes")
        return f
    }

    @Test("the simple check answers the conditional patch only to a listed device on an OS in range")
    func simpleCheck() throws {
        let f = try Self.fixture()
        func check(_ device: String?, _ os: String?) -> String {
            var headers: [String: String] = [:]
            if let device { headers["X-Device-ID"] = device }
            if let os { headers["X-OS-Version"] = os }
            let answer = f.get("/v1/apps/demo/versions/2.3/patch", headers: headers)
            #expect(answer.header("Vary") == "X-Device-ID, X-OS-Version")
            return answer.bodyString
        }
        #expect(check("qa-1", "17.4.1") == "qa()")
        #expect(check("qa-2", "16") == "qa()")
        #expect(check("qa-1", "17.5") == "all()")
        #expect(check("qa-1", nil) == "all()", "no OS header: outside every OS range")
        #expect(check("qa-3", "17.0") == "all()")
        #expect(check(nil, "17.0") == "all()")
        let hash = Digest.sha256Hex(Array("qa()".utf8))
        #expect(f.get("/v1/apps/demo/targets/2.3/2/\(hash).main.conditional.js").bodyString == "qa()")
        #expect(f.get("/v1/apps/demo/targets/2.3/2/\(hash).main.js").status == 404)
    }

    @Test("malformed or raw conditions are 400 and publish nothing")
    func malformed() throws {
        let f = try Self.fixture()
        for bad in [#"{"devices":["qa-1"]}"#, #"{"os":{"min":"16","arch":"arm64"}}"#, "not json", #"{}"#] {
            let answer = f.post("/v1/apps/demo/patches", body: "x()", token: f.publisherToken, query: ["appVersion": "2.3"],
                                headers: ["X-Patch-Conditions": bad])
            #expect(answer.status == 400, "\(bad)")
        }
        #expect(try f.json(f.get("/v1/apps/demo/patches", headers: ["Authorization": "Bearer \(f.auditorToken)"])).arrayValue?.count == 2)
    }

    @Test("?dryRun=true on publish, promote, revoke and rollout: 200 with dryRun, nothing changed")
    func dryRuns() throws {
        let f = try Self.fixture()
        let listing = { () throws -> String in
            try f.json(f.get("/v1/apps/demo/patches", headers: ["Authorization": "Bearer \(f.auditorToken)"])).canonicalString
        }
        let timestamp = { f.get("/v1/apps/demo/metadata/timestamp.json").bodyString }
        let before = (try listing(), timestamp())
        let publish = f.post("/v1/apps/demo/patches", body: "next()", token: f.publisherToken, query: ["appVersion": "2.3", "dryRun": "true"])
        let published = try f.json(publish)
        #expect(publish.status == 200 && published["dryRun"]?.boolValue == true && published["patch"]?.intValue == 3)
        let revoke = f.post("/v1/apps/demo/versions/2.3/patches/1/revoke", token: f.publisherToken, query: ["dryRun": "true"])
        let revoked = try f.json(revoke)
        #expect(revoke.status == 200 && revoked.arrayValue?.first?["dryRun"]?.boolValue == true)
        let rollout = f.post("/v1/apps/demo/versions/2.3/patches/1/rollout", body: #"{"percent": 10}"#, token: f.publisherToken,
                             query: ["dryRun": "true"])
        let rolled = try f.json(rollout)
        #expect(rollout.status == 200 && rolled["from"]?.intValue == 100 && rolled["rollout"]?.intValue == 10)
        let promote = f.post("/v1/apps/demo/versions/2.3/promote", token: f.publisherToken,
                             query: ["from": "production", "to": "staging", "dryRun": "true"])
        let promoted = try f.json(promote)
        #expect(promote.status == 200 && promoted["dryRun"]?.boolValue == true)
        #expect(f.post("/v1/apps/demo/patches", body: "next()", token: f.publisherToken, query: ["appVersion": "2.3", "dryRun": "yes"]).status == 400)
        #expect(f.post("/v1/apps/demo/versions/2.3/patches/9/revoke", token: f.publisherToken, query: ["dryRun": "true"]).status == 404,
                "a dry run is checked like the real thing")
        let after = try listing()
        #expect(after == before.0 && timestamp() == before.1, "a dry run changed the registry")
    }
}
