import Foundation
import Testing
import PatchCore
@testable import PatchRegistry
@testable import HTTPTransport
@testable import PatchServer

@Suite("Channels and promotion over the API, in process")
struct ChannelRouteTests {
    /// Production patch 1 "prod()", staging patch 2 "stage()" (with release notes).
    static func fixture() throws -> ServiceFixture {
        let f = try ServiceFixture(minInterval: 0, channels: ["staging"])
        #expect(f.publish("prod()").status == 201)
        let staged = f.post("/v1/apps/demo/patches", body: "stage()", token: f.publisherToken,
                            query: ["appVersion": "2.3", "channel": "staging", "message": "QA build 7"])
        #expect(staged.status == 201)
        let json = try f.json(staged)
        #expect(json["channel"]?.stringValue == "staging" && json["targetPath"]?.stringValue == "staging/2.3/2/main.js")
        #expect(json["message"]?.stringValue == "QA build 7")
        return f
    }

    @Test("the simple check answers the production channel unless ?channel= names another; a bad name is 400")
    func simpleCheckChannel() throws {
        let f = try Self.fixture()
        let device = ["X-Device-ID": "d1"]
        let production = f.get("/v1/apps/demo/versions/2.3/patch", headers: device)
        #expect(production.status == 200 && production.bodyString == "prod()" && production.header("X-Patch-Number") == "1")
        let staging = f.get("/v1/apps/demo/versions/2.3/patch", headers: device, query: ["channel": "staging"])
        #expect(staging.status == 200 && staging.bodyString == "stage()" && staging.header("X-Patch-Number") == "2")
        #expect(f.get("/v1/apps/demo/versions/2.3/patch", headers: device, query: ["channel": "production"]).bodyString == "prod()")
        #expect(f.get("/v1/apps/demo/versions/2.3/patch", headers: device, query: ["channel": "qa"]).status == 204)
        let bad = f.get("/v1/apps/demo/versions/2.3/patch", headers: device, query: ["channel": "Bad/Name"])
        #expect(bad.status == 400 && bad.bodyString.contains("invalid channel name"))
    }

    @Test("a staging bundle is served under targets/staging/…, never under the production path")
    func stagingTargetRoute() throws {
        let f = try Self.fixture()
        let hash = Digest.sha256Hex(Array("stage()".utf8))
        let served = f.get("/v1/apps/demo/targets/staging/2.3/2/\(hash).main.js")
        #expect(served.status == 200 && served.bodyString == "stage()")
        #expect(f.get("/v1/apps/demo/targets/2.3/2/\(hash).main.js").status == 404)
        #expect(f.get("/v1/apps/demo/targets/qa/2.3/2/\(hash).main.js").status == 404)
        #expect(f.get("/v1/apps/demo/targets/production/2.3/1/\(Digest.sha256Hex(Array("prod()".utf8))).main.js").status == 404,
                "a production patch has one name")
    }

    @Test("promote over the API: publisher token only; 201 with promotedFrom, then production devices get the staging bytes")
    func promoteRoute() throws {
        let f = try Self.fixture()
        let path = "/v1/apps/demo/versions/2.3/promote"
        let query = ["from": "staging", "to": "production", "message": "ship QA build 7"]
        #expect(f.post(path, token: nil, query: query).status == 401)
        #expect(f.post(path, token: f.auditorToken, query: query).status == 403)
        #expect(f.post(path, token: f.otherAppToken, query: query).status == 403)
        #expect(f.post(path, token: f.publisherToken, query: ["from": "staging"]).status == 400)
        #expect(f.post(path, token: f.publisherToken, query: ["from": "staging", "to": "staging"]).status == 409)
        #expect(f.post(path, token: f.publisherToken, query: ["from": "staging", "to": "production", "message": "a\u{85}b"]).status == 400)
        #expect(f.post(path, token: f.publisherToken, query: ["from": "staging", "to": "production", "rollout": "101"]).status == 400)
        let promoted = f.post(path, token: f.publisherToken, query: query)
        #expect(promoted.status == 201)
        let json = try f.json(promoted)
        #expect(json["patch"]?.intValue == 3 && json["channel"]?.stringValue == "production")
        #expect(json["promotedFrom"]?["channel"]?.stringValue == "staging" && json["promotedFrom"]?["patch"]?.intValue == 2)
        #expect(json["sha256"]?.stringValue == Digest.sha256Hex(Array("stage()".utf8)) && json["message"]?.stringValue == "ship QA build 7")
        let check = f.get("/v1/apps/demo/versions/2.3/patch", headers: ["X-Device-ID": "d1"])
        #expect(check.bodyString == "stage()" && check.header("X-Patch-Number") == "3")
        #expect(f.post(path, token: f.publisherToken, query: query).status == 409, "already live in production")
        #expect(f.post("/v1/apps/demo/versions/2.3/promote", token: f.publisherToken, query: ["from": "qa", "to": "production"]).status == 404)
    }
}
