import Foundation
import Testing
import PatchCore
import PatchRegistry
@testable import HTTPTransport
@testable import PatchServer
import HotpatchTestSupport

extension ServiceFixture {
    func registry<T: Sendable>(_ body: @Sendable (Registry) throws -> T) throws -> T {
        try service.registry.withLock { registry in try body(registry) }
    }

    func events(_ action: String) throws -> [AuditEvent] {
        try registry { try $0.auditEvents(app: nil) }.filter { $0.action == action }
    }

    /// A publisher token for every app, issued locally (the fixture has none).
    func globalPublisher() throws -> IssuedToken {
        try registry { try $0.createToken(app: nil, role: .publisher, name: "release", actor: Actor("fixture")) }
    }
}

@Suite("GET and PUT /v1/apps/{app}/throttle (apps throttle --server)")
struct ThrottleRouteTests {
    @Test("GET answers the rules as `apps throttle --json` prints them; PUT changes what is given, answers the rules and changed, and patchd applies them at once")
    func getAndSet() throws {
        let f = try ServiceFixture(minInterval: 0)
        let got = f.get("/v1/apps/demo/throttle", headers: ["Authorization": "Bearer \(f.auditorToken)"])
        #expect(got.status == 200)
        #expect(try f.json(got) == ["minInterval": 0, "ipRatePerMinute": 0])
        #expect(f.publish("fix()").status == 201)
        let device = ["X-Device-ID": "d1"]
        #expect(f.get("/v1/apps/demo/versions/2.3/patch", headers: device).status == 200)
        #expect(f.get("/v1/apps/demo/versions/2.3/patch", headers: device).status == 200, "no interval yet")

        let set = f.send("PUT", "/v1/apps/demo/throttle", body: #"{"minInterval": 600}"#, token: f.publisherToken)
        #expect(set.status == 200)
        #expect(try f.json(set) == ["minInterval": 600, "ipRatePerMinute": 0, "changed": true])
        #expect(f.get("/v1/apps/demo/versions/2.3/patch", headers: device).status == 200)
        #expect(f.get("/v1/apps/demo/versions/2.3/patch", headers: device).status == 429, "the new interval applies at once")
        let events = try f.events("app.throttle")
        #expect(events.last?.details["to"] == ["minInterval": 600, "ipRatePerMinute": 0])
        #expect(events.last?.actor.hasPrefix("ci (token ") == true)

        let again = f.send("PUT", "/v1/apps/demo/throttle", body: #"{"minInterval": 600, "ipRatePerMinute": 0}"#, token: f.publisherToken)
        #expect(try f.json(again) == ["minInterval": 600, "ipRatePerMinute": 0, "changed": false])
        #expect(try f.events("app.throttle").count == events.count, "unchanged: no event")
    }

    @Test("400 for a body that is not an object, an unknown member, a non-integer or out-of-range value; nothing changes")
    func badBodies() throws {
        let f = try ServiceFixture(minInterval: 0)
        let before = try f.events("app.throttle").count
        for body in ["", "[]", "600", #"{"minInterval": "600"}"#, #"{"minInterval": -1}"#, #"{"minInterval": 2592001}"#,
                     #"{"ipRatePerMinute": 10000001}"#, #"{"ipRatePerMinute": null}"#, #"{"minInterval": 60, "burst": 5}"#, #"{"minInterval": true}"#] {
            #expect(f.send("PUT", "/v1/apps/demo/throttle", body: body, token: f.publisherToken).status == 400, "\(body)")
        }
        #expect(try f.registry { try $0.throttleRules(app: AppName("demo")) } == ThrottleRules(minInterval: 0, ipRatePerMinute: 0))
        #expect(try f.events("app.throttle").count == before)
        #expect(f.send("PUT", "/v1/apps/demo/throttle", body: String(repeating: " ", count: 2000) + "{}", token: f.publisherToken).status == 413)
    }

    @Test("an auditor token may read but not change (403); a token of another app may do neither; nothing changes")
    func scopes() throws {
        let f = try ServiceFixture(minInterval: 0)
        #expect(f.send("PUT", "/v1/apps/demo/throttle", body: #"{"minInterval": 60}"#, token: f.auditorToken).status == 403)
        #expect(f.send("PUT", "/v1/apps/demo/throttle", body: #"{"minInterval": 60}"#, token: f.otherAppToken).status == 403)
        #expect(f.get("/v1/apps/demo/throttle", headers: ["Authorization": "Bearer \(f.otherAppToken)"]).status == 403)
        #expect(f.get("/v1/apps/demo/throttle").status == 401)
        #expect(try f.registry { try $0.throttleRules(app: AppName("demo")) }.minInterval == 0)
    }
}

@Suite("POST /v1/tokens (tokens create --server)")
struct TokenRouteTests {
    func create(_ f: ServiceFixture, _ body: String, token: String) -> HTTPResponse { f.post("/v1/tokens", body: body, token: token) }

    @Test("201 with the listing entry, its parent and, once, the secret, which works at once; the token.create event names the parent")
    func creates() throws {
        let f = try ServiceFixture()
        let response = create(f, #"{"app": "demo", "role": "auditor", "name": "dashboard"}"#, token: f.publisherToken)
        #expect(response.status == 201)
        #expect(response.headers.contains { $0.0 == "Cache-Control" && $0.1 == "no-store" })
        let json = try f.json(response)
        let presented = f.publisherToken
        let caller = try #require(try f.registry { try $0.token(presented: presented) })
        #expect(json["scope"] == "demo" && json["role"] == "auditor" && json["name"] == "dashboard")
        #expect(json["parent"] == .string(caller.id) && json["createdBy"] == .string(caller.actor.name))
        let secret = try #require(json["token"]?.stringValue)
        let listed = try #require(try f.registry { try $0.tokens(scope: nil) }.first { $0.record.id == json["id"]?.stringValue })
        var entry = try #require(json.objectValue)
        entry["token"] = nil
        #expect(listed.json == JSON.object(entry), "the answer is the listing entry plus token")
        #expect(f.get("/v1/apps/demo/patches", headers: ["Authorization": "Bearer \(secret)"]).status == 200)
        let event = try #require(try f.events("token.create").last)
        #expect(event.details["parent"] == .string(caller.id) && event.app == "demo")

        let defaults = try f.json(create(f, #"{"app": "demo"}"#, token: f.publisherToken))
        #expect(defaults["role"] == "publisher" && defaults["name"] == .string(caller.actor.name))
    }

    @Test("no broader than the caller: an auditor is 403, a token for one app may issue only for that app, only a publisher for every app issues for every app")
    func narrowing() throws {
        let f = try ServiceFixture()
        let before = try f.registry { try $0.tokens(scope: nil) }.count
        #expect(create(f, #"{"app": "demo", "role": "auditor", "name": "x"}"#, token: f.auditorToken).status == 403, "an auditor token for every app")
        #expect(create(f, #"{"role": "auditor", "name": "x"}"#, token: f.publisherToken).status == 403, "demo's token, for every app")
        #expect(create(f, #"{"app": "other", "name": "x"}"#, token: f.publisherToken).status == 403, "demo's token, for another app")
        #expect(create(f, #"{"app": "nope", "name": "x"}"#, token: f.publisherToken).status == 403, "scope before existence")
        #expect(try f.registry { try $0.tokens(scope: nil) }.count == before)
        let global = try f.globalPublisher()
        let wide = try f.json(create(f, #"{"name": "ci-all"}"#, token: global.secret))
        #expect(wide["scope"] == "*" && wide["parent"] == .string(global.record.id))
        #expect(create(f, #"{"app": "other", "role": "auditor", "name": "x"}"#, token: global.secret).status == 201)
        #expect(create(f, #"{"app": "nope", "name": "x"}"#, token: global.secret).status == 404)
    }

    @Test("400 for a body that is not an object, an unknown member, a bad app name, role or name; nothing issued")
    func badBodies() throws {
        let f = try ServiceFixture()
        let before = try f.registry { try $0.tokens(scope: nil) }.count
        for body in ["", "[]", #"{"app": "demo", "scope": "demo"}"#, #"{"app": "Demo!"}"#, #"{"app": 7}"#, #"{"app": "demo", "role": "admin"}"#,
                     #"{"app": "demo", "name": ""}"#, #"{"app": "demo", "name": 5}"#, #"{"app": "demo", "name": "a\u202Eb"}"#] {
            #expect(create(f, body, token: f.publisherToken).status == 400, "\(body)")
        }
        #expect(try f.registry { try $0.tokens(scope: nil) }.count == before)
    }

    @Test("revoking a token revokes what it issued, and what those issued: 401 for all of them, the tokens beside them untouched")
    func revokeCascades() throws {
        let f = try ServiceFixture()
        let global = try f.globalPublisher()
        let childJSON = try f.json(create(f, #"{"app": "demo", "name": "child"}"#, token: global.secret))
        let child = try #require(childJSON["token"]?.stringValue)
        let grandchild = try #require(try f.json(create(f, #"{"app": "demo", "role": "auditor", "name": "grandchild"}"#, token: child))["token"]?.stringValue)
        let auth = { (token: String) in ["Authorization": "Bearer \(token)"] }
        #expect(f.get("/v1/apps/demo/patches", headers: auth(grandchild)).status == 200)
        _ = try f.registry { try $0.revokeToken(id: global.record.id, actor: Actor("admin")) }
        for token in [global.secret, child, grandchild] {
            #expect(f.get("/v1/apps/demo/patches", headers: auth(token)).status == 401)
        }
        #expect(f.get("/v1/apps/demo/patches", headers: auth(f.publisherToken)).status == 200)
        let revokes = try f.events("token.revoke")
        #expect(revokes.count == 3)
        #expect(revokes.dropFirst().allSatisfy { $0.details["revokedWith"] == .string(global.record.id) && $0.app == "demo" })
        #expect(create(f, #"{"app": "demo", "name": "late"}"#, token: child).status == 401)
    }

    @Test("DELETE /v1/tokens/{id}: a token no broader than the caller, with what it issued; 403 broader, 404 unknown, 409 again, 400 malformed; an auditor is 403")
    func revokeRoute() throws {
        let f = try ServiceFixture()
        let global = try f.globalPublisher()
        let other = try f.json(create(f, #"{"app": "other", "name": "o"}"#, token: global.secret))
        let demo = try f.json(create(f, #"{"app": "demo", "name": "d"}"#, token: global.secret))
        let demoID = try #require(demo["id"]?.stringValue), otherID = try #require(other["id"]?.stringValue)
        let delete = { (id: String, token: String) in f.send("DELETE", "/v1/tokens/\(id)", body: "", token: token) }
        #expect(delete(otherID, f.publisherToken).status == 403, "demo's publisher, other's token")
        #expect(delete(demoID, f.auditorToken).status == 403, "an auditor revokes nothing")
        #expect(try f.registry { try $0.tokens(scope: nil) }.allSatisfy { $0.revokedAt == nil }, "nothing revoked by a refusal")
        let revoked = delete(demoID, f.publisherToken)
        #expect(revoked.status == 200)
        #expect(try f.json(revoked) == ["id": .string(demoID), "scope": "demo", "role": "publisher", "name": "d", "revoked": true])
        #expect(f.get("/v1/apps/demo/patches", headers: ["Authorization": "Bearer \(demo["token"]?.stringValue ?? "")"]).status == 401)
        #expect(delete(demoID, f.publisherToken).status == 409)
        #expect(delete("0123456789ab", global.secret).status == 404)
        #expect(delete("NOT-AN-ID", global.secret).status == 400)
        #expect(delete(otherID, global.secret).status == 200, "a token for every app revokes any")
        #expect(try f.events("token.revoke").count == 2)
    }
}
