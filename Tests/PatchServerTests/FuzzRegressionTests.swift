import Foundation
import Testing
import PatchCore
@testable import HTTPTransport
@testable import PatchServer

/// Requests libFuzzer's FuzzRouter target stopped on (`make fuzz`, docs/SECURITY.md "Fuzzing"),
/// kept as tests. The inputs are in fuzz/crashes-fixed/FuzzRouter/.
@Suite("Fuzz regressions: routes")
struct RouterFuzzRegressionTests {
    /// FuzzRouter stopped on error bodies quoting a bad path or `app` query value that held a
    /// token: an echo of what the caller put in the URL, not a leak (the harness now allows
    /// exactly that). What must hold is that the credential itself never comes back.
    @Test("a bearer token never comes back in an answer, even one quoting a bad path or query", arguments: [
        ("/v1/audit", ["app": "other x"]),
        ("/v1/audit", ["app": "../demo"]),
        ("/v1/apps/demo/metadata/timestamp.x.json", [:]),
        ("/v1/apps/demo/metadata/timestamp.js\0", [:]),
        ("/v1/apps/demo/patches", ["active": "maybe"]),
        ("/v1/apps/de mo/versions/2.3/patch", [:]),
    ] as [(String, [String: String])])
    func tokenNeverEchoed(_ path: String, _ query: [String: String]) throws {
        let f = try ServiceFixture()
        for token in [f.publisherToken, f.auditorToken, f.otherAppToken] {
            let response = f.get(path, headers: ["Authorization": "Bearer \(token)", "X-Device-ID": "d"], query: query)
            #expect(response.status < 500)
            #expect(!response.bodyString.contains(token))
            #expect(!response.headers.contains { $0.1.contains(token) })
        }
    }
}
