import Foundation
import Testing
import PatchCore
import PatchSigning
@testable import PatchRegistry
@testable import HTTPTransport
@testable import PatchServer
import HotpatchTestSupport

/// `POST /v1/apps/{app}/delegations` and `DELETE …/{channel}` (`keys delegate --server`).
@Suite("Delegation routes")
struct DelegationRouteTests {
    func delegations(_ f: ServiceFixture, _ body: String, token: String? = nil) -> HTTPResponse {
        f.post("/v1/apps/demo/delegations", body: body, token: token ?? f.publisherToken)
    }

    func stagingPublish(_ f: ServiceFixture, _ text: String) -> HTTPResponse {
        f.post("/v1/apps/demo/patches", body: text, token: f.publisherToken, query: ["appVersion": "2.3", "channel": "staging"])
    }

    @Test("the server makes and keeps the role's key, signs staging with it, rotates it, and ends the delegation; bad input is 4xx and changes nothing")
    func lifecycle() throws {
        let f = try ServiceFixture(minInterval: 0, channels: ["staging"])
        #expect(f.publish("a()").status == 201)
        // Refused: production, an unknown member, a bad name, an auditor, a key the server cannot sign with.
        #expect(delegations(f, #"{"channel": "production", "name": "qa"}"#).status == 400)
        #expect(delegations(f, #"{"channel": "staging", "name": "qa", "extra": 1}"#).status == 400)
        #expect(delegations(f, #"{"channel": "staging", "name": "QA!"}"#).status == 400)
        #expect(delegations(f, #"{"channel": "staging", "name": "qa", "threshold": 2}"#).status == 400)
        #expect(delegations(f, #"{"channel": "staging", "name": "qa"}"#, token: f.auditorToken).status == 403)
        let foreign = try JSON.object(["channel": "staging", "name": "qa", "keys": .array([try SigningKey.generateEd25519().tufKey.json])]).canonicalString
        let unsignable = delegations(f, foreign)
        // A key the server does not hold: the delegation waits for its holder's signature (202).
        #expect(unsignable.status == 202, "\(String(decoding: unsignable.body, as: UTF8.self))")
        #expect(try f.json(unsignable)["pending"]?["role"]?.stringValue == "qa")
        #expect(try FileManager.default.contentsOfDirectory(atPath: f.keysDirectory.appendingPathComponent("demo").path).allSatisfy { !$0.hasPrefix("delegated.") },
                "no key file is left by a refused delegation")
        #expect(f.get("/v1/apps/demo/metadata/1.qa.json").status == 404)

        let made = delegations(f, #"{"channel": "staging", "name": "qa"}"#)
        #expect(made.status == 201)
        let first = try f.json(made)
        #expect(first["serverKey"]?.boolValue == true && first["name"]?.stringValue == "qa" && first["app"]?.stringValue == "demo")
        #expect(first["keyids"]?.arrayValue?.count == 1)
        #expect(delegations(f, #"{"channel": "staging", "name": "qa"}"#).status == 409, "already delegated: --replace")
        #expect(stagingPublish(f, "b()").status == 201)
        #expect(f.get("/v1/apps/demo/metadata/2.qa.json").status == 200)

        let rotated = delegations(f, #"{"channel": "staging", "name": "qa", "replace": true}"#)
        #expect(rotated.status == 200)
        let second = try f.json(rotated)
        #expect(second["replacedKeyIDs"]?.arrayValue == first["keyids"]?.arrayValue)
        #expect(second["keyids"] != first["keyids"])
        // Patch 3 at 100 % unlists patch 2 in qa.json; a client that read an older qa.json
        // still gets patch 2's bundle, and the older role versions stay servable.
        let older = try SignedTargets(bytes: f.get("/v1/apps/demo/metadata/3.qa.json").body).body
        let sha = try #require(older.targets["staging/2.3/2/main.js"]?.hashes["sha256"])
        #expect(stagingPublish(f, "c()").status == 201)
        let newest = try SignedTargets(bytes: f.get("/v1/apps/demo/metadata/4.qa.json").body).body
        #expect(newest.targets["staging/2.3/2/main.js"] == nil)
        #expect(f.get("/v1/apps/demo/targets/staging/2.3/2/\(sha).main.js").status == 200)
        #expect(f.get("/v1/apps/demo/metadata/2.qa.json").status == 200)

        #expect(f.send("DELETE", "/v1/apps/demo/delegations/staging", token: f.auditorToken).status == 403)
        let ended = f.send("DELETE", "/v1/apps/demo/delegations/staging", token: f.publisherToken)
        #expect(ended.status == 200)
        #expect(try f.json(ended)["name"]?.stringValue == "qa")
        #expect(f.send("DELETE", "/v1/apps/demo/delegations/staging", token: f.publisherToken).status == 404)
        // A client mid-sync still finds the role's last version; staging is top-level's again.
        #expect(f.get("/v1/apps/demo/metadata/4.qa.json").status == 200)
        #expect(stagingPublish(f, "d()").status == 201)
        #expect(f.get("/v1/apps/demo/metadata/5.qa.json").status == 404)
    }

    @Test("a public key over the server: the dry run answers the role's next metadata unsigned, signed here it is taken; a wrong or stale signature is refused")
    func presignedRole() throws {
        let f = try ServiceFixture(minInterval: 0, channels: ["staging"])
        #expect(f.publish("a()").status == 201)
        #expect(stagingPublish(f, "s()").status == 201)  // staging patch 2, top-level's for now
        let qa = try SigningKey.generateEd25519(), stranger = try SigningKey.generateEd25519()
        let request: [String: JSON] = ["channel": "staging", "name": "qa", "keys": .array([qa.tufKey.json])]
        let prepared = f.post("/v1/apps/demo/delegations", body: JSON.object(request).canonicalString, token: f.publisherToken, query: ["dryRun": "true"])
        #expect(prepared.status == 200)
        let unsigned = try #require(try f.json(prepared)["unsigned"])
        let body = try TargetsBody(signed: unsigned)
        #expect(body.common.version == 1 && body.targets.keys.sorted() == ["staging/2.3/2/main.js"])
        func send(_ signers: [SigningKey], _ body: TargetsBody) throws -> HTTPResponse {
            var full = request
            full["role"] = try JSONParser.parse(try SignedTargets(signing: body, with: signers).bytes)
            return delegations(f, JSON.object(full).canonicalString)
        }
        #expect(try send([stranger], body).status == 400, "not signed by the role's key")
        var stale = body
        stale.common.version = 7
        #expect(try send([qa], stale).status == 409, "not the role's next version")
        let taken = try send([qa], body)
        #expect(taken.status == 201, "\(String(decoding: taken.body, as: UTF8.self))")
        #expect(try f.json(taken)["serverKey"] == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: f.keysDirectory.appendingPathComponent("demo").path).allSatisfy { !$0.hasPrefix("delegated.") })
        let served = try SignedTargets(bytes: f.get("/v1/apps/demo/metadata/1.qa.json").body)
        #expect(served.signatures.map(\.keyID) == [qa.tufKey.keyID] && served.body.targets.keys.sorted() == ["staging/2.3/2/main.js"])
        // The server holds no key of the role: a staging publish through it waits for the
        // role's key holder (202, pending), and nothing is served.
        let waiting = stagingPublish(f, "t()")
        #expect(waiting.status == 202)
        #expect(try f.json(waiting)["pending"]?["role"]?.stringValue == "qa")
        #expect(f.get("/v1/apps/demo/metadata/2.qa.json").status == 404, "no new role metadata is signed or served")
    }
}
