import Foundation
import PatchAPI
import Testing
import PatchCore
@testable import PatchRegistry
@testable import HTTPTransport
@testable import PatchServer
import HotpatchTestSupport

@Suite("patchd's routes are the operation table")
struct RouteTableTests {
    @Test("every operation of the table is routed once, with its method, path and scope; nothing else is routed")
    func routed() throws {
        let routes = PatchService.routes().routes
        #expect(routes.map(\.operation.id).sorted() == APIOperation.all.map(\.id).sorted())
        for route in routes {
            let operation = try #require(APIOperation.named(route.operation.id))
            #expect(route.operation == operation)
            switch (operation.scope, route.access) {
            case (.anyone, .anyone), (.token, .token), (.auditor, .role(.auditor)), (.publisher, .role(.publisher)): break
            default: Issue.record("\(operation.id): scope \(operation.scope) routed as \(route.access)")
            }
        }
    }

    @Test("every path the table builds routes to its own operation")
    func roundTrip() throws {
        let router = PatchService.routes()
        let values = ["app": "demo", "appVersion": "2.3", "patch": "4", "hash": "ab12", "channel": "beta", "file": "timestamp.json",
                      "package": "v4", "id": "0123456789ab"]
        for operation in APIOperation.all {
            let match = router.match(method: operation.method, path: operation.path(values))
            guard case .success(let (route, params)) = match.result else {
                Issue.record("\(operation.id): \(operation.path(values)) did not route"); continue
            }
            #expect(route.operation.id == operation.id, "\(operation.path(values))")
            for name in operation.parameters { #expect(params[name] == values[name], "\(operation.id) {\(name)}") }
        }
    }

    @Test("the fast path is a cache: every published file answers the same through it and through its route")
    func fastPathIsACache() throws {
        let f = try ServiceFixture(minInterval: 0, channels: ["beta"])
        #expect(f.publish("fix()").status == 201)
        #expect(f.post("/v1/apps/demo/patches", body: "beta()", token: f.publisherToken,
                       query: ["appVersion": "2.3", "channel": "beta"]).status == 201)
        #expect(f.post("/v1/apps/demo/patches", body: "qa()", token: f.publisherToken, query: ["appVersion": "2.3"],
                       headers: ["X-Patch-Conditions": #"{"os":{"max":"17.4","min":"15.0"}}"#]).status == 201)
        _ = f.get("/v1/apps/demo/metadata/timestamp.json")  // builds the catalog
        let catalog = f.service.catalog
        let app = try #require(catalog.app(try AppName("demo")))
        var paths = app.metadata.keys.map { APIOperation.getMetadata.path(["app": "demo", "file": $0]) }
        paths += app.targets.keys.map { DeviceRoutes.repositoryRoot(app: "demo") + "/" + RepositoryFile.target($0).relativePath }
        paths.append(APIOperation.checkPatch.path(["app": "demo", "appVersion": "2.3"]))
        #expect(paths.contains { $0.hasSuffix(".main.conditional.js") } && paths.contains { $0.contains("/targets/beta/") })
        for path in paths {
            #expect(catalog.file(at: path) != nil, "\(path) is not in the fast path's cache")
            let headers = ["X-Device-ID": "device-1", "X-OS-Version": "16.0"]
            let fast = f.get(path, headers: headers)
            let match = f.service.router.match(method: "GET", path: path)
            guard case .success(let (route, params)) = match.result else { Issue.record("\(path) did not route"); continue }
            let routed: HTTPResponse
            do { routed = try route.handler(f.service, HTTPRequest(method: "GET", path: path, headers: headers), params).wait() } catch { routed = error.response }
            #expect(fast.status == 200, "\(path)")
            #expect(routed.status == fast.status && routed.body == fast.body, "\(path): \(routed.status) routed, \(fast.status) fast")
            #expect(routed.headers.map { "\($0.0): \($0.1)" }.sorted() == fast.headers.map { "\($0.0): \($0.1)" }.sorted(), "\(path)")
        }
    }
}
