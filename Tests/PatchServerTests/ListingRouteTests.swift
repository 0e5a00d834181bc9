import Foundation
import PatchCore
import PatchRegistry
import Testing
@testable import HTTPTransport
@testable import PatchServer
import HotpatchTestSupport

@Suite("Listings and refusals over the API")
struct ListingRouteTests {
    func bearer(_ token: String) -> [String: String] { ["Authorization": "Bearer \(token)"] }

    @Test("GET /v1/apps lists the apps a token may read: its own app, or every app")
    func apps() throws {
        let f = try ServiceFixture()
        let scoped = try f.json(f.get("/v1/apps", headers: bearer(f.publisherToken)))
        #expect(scoped.arrayValue?.compactMap { $0["app"]?.stringValue } == ["demo"])
        let global = try f.json(f.get("/v1/apps", headers: bearer(f.auditorToken)))
        #expect(global.arrayValue?.compactMap { $0["app"]?.stringValue } == ["demo", "other"])
        #expect(global.arrayValue?.first?["encrypted"]?.boolValue == false)
        #expect(f.get("/v1/apps").status == 401)
    }

    @Test("GET /v1/tokens: a scoped token sees its app's tokens, a token for every app sees all; never a secret or a hash")
    func tokens() throws {
        let f = try ServiceFixture()
        let scoped = try f.json(f.get("/v1/tokens", headers: bearer(f.publisherToken)))
        #expect(scoped.arrayValue?.compactMap { $0["name"]?.stringValue } == ["ci"])
        #expect(scoped.arrayValue?.first?["scope"]?.stringValue == "demo")
        let global = try f.json(f.get("/v1/tokens", headers: bearer(f.auditorToken)))
        #expect(Set(global.arrayValue?.compactMap { $0["name"]?.stringValue } ?? []) == ["ci", "auditor", "other-ci"])
        let narrowed = try f.json(f.get("/v1/tokens", headers: bearer(f.auditorToken), query: ["app": "other"]))
        #expect(narrowed.arrayValue?.compactMap { $0["name"]?.stringValue } == ["other-ci"])
        // No member holds a secret or its hash, whatever it is called.
        let body = f.get("/v1/tokens", headers: bearer(f.auditorToken)).bodyString
        #expect(!body.contains("hp_") && !body.contains(Digest.sha256Hex(Array(f.auditorToken.utf8))))
        let allowed: Set<String> = ["id", "scope", "role", "name", "createdAt", "createdBy", "revokedAt"]
        let members = Set((global.arrayValue ?? []).flatMap { Array($0.objectValue?.keys ?? [:].keys) })
        #expect(members.isSubset(of: allowed))
        let other = f.get("/v1/tokens", headers: bearer(f.publisherToken), query: ["app": "other"])
        #expect(other.status == 403)
        #expect(f.get("/v1/tokens").status == 401)
    }

    @Test("a 403 says what the token is and which token the request needs")
    func forbiddenNamesTheMissingScope() throws {
        let f = try ServiceFixture()
        let registry = try TestBackend.registry(dataDirectory: f.dataDirectory, keysDirectory: f.keysDirectory)
        let demoAuditor = try registry.createToken(app: try AppName("demo"), role: .auditor, name: "qa", actor: Actor("admin")).secret
        let publish = f.post("/v1/apps/demo/patches", body: "x()", token: demoAuditor, query: ["appVersion": "2.3"])
        #expect(publish.status == 403)
        #expect(try f.json(publish)["error"]?["message"]?.stringValue
                == "this token is an auditor token for app demo; publishing needs a publisher token for demo or for every app")
        let elsewhere = f.post("/v1/apps/demo/versions/2.3/revoke", token: f.otherAppToken)
        #expect(try f.json(elsewhere)["error"]?["message"]?.stringValue
                == "this token is a publisher token for app other; revoking needs a publisher token for demo or for every app")
        let audit = f.get("/v1/audit", headers: bearer(f.otherAppToken), query: ["app": "demo"])
        #expect(audit.status == 403)
        #expect(try f.json(audit)["error"]?["message"]?.stringValue?.hasSuffix("needs a token (auditor or publisher) for demo or for every app") == true)
    }

    @Test("a rollout to the percentage a patch has answers changed: false and signs nothing")
    func unchangedRollout() throws {
        let f = try ServiceFixture()
        #expect(f.publish("one()", rollout: 25).status == 201)
        let before = try f.json(f.get("/v1/apps/demo/metadata/timestamp.json"))["signed"]?["version"]?.intValue
        let same = f.post("/v1/apps/demo/versions/2.3/patches/1/rollout", body: #"{"percent": 25}"#, token: f.publisherToken)
        let sameChanged = try f.json(same)["changed"]?.boolValue
        #expect(same.status == 200 && sameChanged == false)
        #expect(try f.json(f.get("/v1/apps/demo/metadata/timestamp.json"))["signed"]?["version"]?.intValue == before)
        let moved = f.post("/v1/apps/demo/versions/2.3/patches/1/rollout", body: #"{"percent": 50}"#, token: f.publisherToken)
        let movedChanged = try f.json(moved)["changed"]?.boolValue
        #expect(movedChanged == true)
    }

    @Test("?active=true lists the patches served now (delivery live), as `patchctl list --active` does; without it every patch")
    func activeIsServedNow() throws {
        let f = try ServiceFixture()
        #expect(f.publish("one()").status == 201)                 // 1: superseded by 2
        #expect(f.publish("two()").status == 201)                 // 2: live
        #expect(f.publish("three()", rollout: 0).status == 201)   // 3: halted
        #expect(f.publish("four()", rollout: 30).status == 201)   // 4: live
        #expect(f.publish("five()", rollout: 30).status == 201)   // 5: revoked
        #expect(f.post("/v1/apps/demo/versions/2.3/patches/5/revoke", token: f.publisherToken).status == 200)
        let auditor = ["Authorization": "Bearer \(f.auditorToken)"]
        let active = try f.json(f.get("/v1/apps/demo/patches", headers: auditor, query: ["active": "true"]))
        #expect(active.arrayValue?.compactMap { $0["patch"]?.intValue } == [2, 4])
        let all = try f.json(f.get("/v1/apps/demo/patches", headers: auditor, query: ["active": "false"]))
        #expect(all.arrayValue?.compactMap { $0["patch"]?.intValue } == [1, 2, 3, 4, 5])
        #expect(f.get("/v1/apps/demo/patches", headers: auditor, query: ["active": "yes"]).status == 400)
    }
}
