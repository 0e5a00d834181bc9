import Foundation
import Testing
import PatchCore
@testable import HTTPTransport
@testable import PatchServer

/// The API passes every message to the registry, whose rule (`ReadableText`) answers; bytes
/// that are not UTF-8 are refused by the transport (RequestHeadTests.queryNotUTF8).
@Suite("Readable text over the API, in process")
struct ReadableTextRouteTests {
    @Test("publish, promote and revoke with a bidi override or a zero-width space in ?message= are 400 naming it; nothing is published or audited")
    func messages() throws {
        let f = try ServiceFixture(minInterval: 0, channels: ["staging"])
        #expect(f.post("/v1/apps/demo/patches", body: "stage()", token: f.publisherToken, query: ["appVersion": "2.3", "channel": "staging"]).status == 201)
        let auditor = ["Authorization": "Bearer \(f.auditorToken)"]
        let before = (f.get("/v1/apps/demo/patches", headers: auditor).body, f.get("/v1/audit", headers: auditor).body)
        for (path, query, named) in [
            ("/v1/apps/demo/patches", ["appVersion": "2.3", "message": "revoke \u{202E}3 hctap"], "U+202E RIGHT-TO-LEFT OVERRIDE (character 8)"),
            ("/v1/apps/demo/patches", ["appVersion": "2.3", "message": "fix\u{200B}", "dryRun": "true"], "U+200B ZERO WIDTH SPACE (character 4)"),
            ("/v1/apps/demo/versions/2.3/promote", ["from": "staging", "to": "production", "message": "\u{2067}qa"], "U+2067 RIGHT-TO-LEFT ISOLATE"),
            ("/v1/apps/demo/versions/2.3/patches/1/revoke", ["message": "bad\u{FEFF}"], "U+FEFF ZERO WIDTH NO-BREAK SPACE"),
            ("/v1/apps/demo/versions/2.3/revoke", ["all": "true", "message": "a\u{E0041}"], "U+E0041 TAG LATIN CAPITAL LETTER A"),
        ] {
            let response = f.post(path, body: path.hasSuffix("/patches") ? "x()" : "", token: f.publisherToken, query: query)
            #expect(response.status == 400, "\(path) \(query)")
            let message = try f.json(response)["error"]?["message"]?.stringValue ?? ""
            #expect(message.hasPrefix("the message cannot hold \(named)"), "\(message)")
        }
        #expect(f.get("/v1/apps/demo/patches", headers: auditor).body == before.0)
        #expect(f.get("/v1/audit", headers: auditor).body == before.1)
        let noted = f.post("/v1/apps/demo/patches", body: "x()", token: f.publisherToken, query: ["appVersion": "2.3", "message": "修复崩溃 🚑"])
        #expect(noted.status == 201)
        #expect(try f.json(noted)["message"]?.stringValue == "修复崩溃 🚑")
    }
}
