import Foundation
import Testing
import PatchCore
import PatchPush
import PatchRegistry
import PatchSigning
@testable import HTTPTransport
@testable import PatchServer
import HotpatchTestSupport

@Suite("POST /v1/apps/{app}/notify (notify --server)")
struct NotifyRouteTests {
    /// Nothing listens there: a round with devices would count them unreachable. The rounds
    /// here have none, so nothing is sent.
    static let endpoint = APNsEndpoint(production: URL(string: "https://127.0.0.1:1")!, sandbox: URL(string: "https://127.0.0.1:1")!)

    func withAPNs() throws -> ServiceFixture {
        let f = try ServiceFixture(apnsEndpoint: NotifyRouteTests.endpoint, channels: ["beta"])
        let key = try ECDSAPrivateKey.generate().pemRepresentation()
        try f.registry { try $0.setAPNs(app: AppName("demo"), teamID: "TEAM123456", keyID: "KEY1234567", topic: "com.example.demo", keyPEM: key, actor: Actor("fixture")) }
        return f
    }

    @Test("200 with the figures `notify --json` prints, and the push.notify event it records, for the version and channel asked")
    func pushes() throws {
        let f = try withAPNs()
        #expect(f.publish("fix()").status == 201)
        let response = f.post("/v1/apps/demo/notify", token: f.publisherToken, query: ["appVersion": "2.3", "channel": "beta"])
        #expect(response.status == 200)
        #expect(try f.json(response) == PushSummary().json)
        let event = try #require(try f.events("push.notify").last)
        #expect(event.details["reason"] == "notify" && event.details["appVersion"] == "2.3" && event.details["channel"] == "beta")
        #expect(event.actor.hasPrefix("ci (token "))
        #expect(f.post("/v1/apps/demo/notify", token: f.publisherToken).status == 200, "every version and channel")
        #expect(try f.events("push.notify").last?.details["appVersion"] == .null)
    }

    @Test("409 for an app without an APNs key; 400 for a bad version or channel; nothing recorded")
    func refusals() throws {
        let f = try withAPNs()
        let other = try f.registry { try $0.createToken(app: AppName("other"), role: .publisher, name: "o", actor: Actor("fixture")) }
        let none = f.post("/v1/apps/other/notify", token: other.secret)
        #expect(none.status == 409)
        #expect(try f.json(none)["error"]?["message"]?.stringValue?.contains("no APNs key") == true)
        #expect(f.post("/v1/apps/demo/notify", token: f.publisherToken, query: ["appVersion": "../2"]).status == 400)
        #expect(f.post("/v1/apps/demo/notify", token: f.publisherToken, query: ["channel": "Beta!"]).status == 400)
        #expect(try f.events("push.notify").isEmpty)
    }

    @Test("an auditor token, or a publisher of another app, is 403 and nothing is sent")
    func scopes() throws {
        let f = try withAPNs()
        #expect(f.post("/v1/apps/demo/notify", token: f.auditorToken).status == 403)
        #expect(f.post("/v1/apps/demo/notify", token: f.otherAppToken).status == 403)
        #expect(f.post("/v1/apps/demo/notify", token: nil).status == 401)
        #expect(try f.events("push.notify").isEmpty)
    }
}
