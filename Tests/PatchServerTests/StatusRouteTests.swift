import Foundation
import PatchCore
import PatchRegistry
import Testing
@testable import HTTPTransport
@testable import PatchServer
import HotpatchTestSupport

@Suite("GET /v1/apps/{app}/status")
struct StatusRouteTests {
    @Test("answers the registry's status of the app to an auditor or publisher of it; 401 without a token, 403 for another app's")
    func status() throws {
        let f = try ServiceFixture()
        f.publish("one()")
        f.publish("two()", rollout: 25)
        let response = f.get("/v1/apps/demo/status", headers: ["Authorization": "Bearer \(f.auditorToken)"])
        #expect(response.status == 200)
        let registry = try TestBackend.registry(dataDirectory: f.dataDirectory, keysDirectory: f.keysDirectory, create: false)
        let expected = try #require(try registry.status(app: try AppName("demo")).first).json
        #expect(try f.json(response) == expected)
        let served = try f.json(response)["versions"]?.arrayValue?.first?["served"]?.arrayValue?.compactMap { $0["basisPoints"]?.intValue }
        #expect(served == [2500, 7500])
        #expect(f.get("/v1/apps/demo/status", headers: ["Authorization": "Bearer \(f.publisherToken)"]).status == 200)
        #expect(f.get("/v1/apps/demo/status").status == 401)
        #expect(f.get("/v1/apps/demo/status", headers: ["Authorization": "Bearer \(f.otherAppToken)"]).status == 403)
        #expect(f.get("/v1/apps/nope/status", headers: ["Authorization": "Bearer \(f.auditorToken)"]).status == 404)
    }
}
