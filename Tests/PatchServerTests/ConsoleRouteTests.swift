import Foundation
import PatchAPI
import PatchCore
import PatchRegistry
import Testing
import WebConsole
@testable import HTTPTransport
@testable import PatchServer

/// console/ in the repository, read at test time: what patchd must serve, byte for byte.
private let consoleDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("console")

/// The files of console/ patchd serves: all but the Swift file that lists them.
private func consoleFileNames() throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: consoleDirectory.path).filter { !$0.hasPrefix(".") && !$0.hasSuffix(".swift") }.sorted()
}

/// The nonce of a page response's policy.
private func pageNonce(_ page: HTTPResponse) throws -> String {
    String(try #require(page.header("Content-Security-Policy")?.split(separator: "'").first { $0.hasPrefix("nonce-") }?.dropFirst(6)))
}

@Suite("The web console and the routes it needs")
struct ConsoleRouteTests {
    func bearer(_ token: String) -> [String: String] { ["Authorization": "Bearer \(token)"] }

    @Test("/console/ serves the console's page with its policy: scripts only by this response's nonce (not 'self': bundles are scripts on this origin), no framing, nosniff, never stored")
    func index() throws {
        let f = try ServiceFixture()
        let page = f.get("/console/")
        #expect(page.status == 200)
        #expect(page.header("Content-Type") == "text/html; charset=utf-8")
        let csp = try #require(page.header("Content-Security-Policy"))
        #expect(csp.hasPrefix("default-src 'self'; script-src 'nonce-") && csp.contains("frame-ancestors 'none'"))
        #expect(!csp.contains("unsafe-inline") && !csp.contains("unsafe-eval") && !csp.contains("strict-dynamic"))
        let nonce = try pageNonce(page)
        #expect(Data(base64Encoded: nonce)?.count == 16)
        #expect(page.bodyString.contains("<script nonce=\"\(nonce)\" type=\"module\" src=\"main.js\"></script>"))
        #expect(page.header("X-Content-Type-Options") == "nosniff")
        #expect(page.header("X-Frame-Options") == "DENY")
        #expect(page.header("Cache-Control") == "no-store" && page.header("ETag") == nil)
        // A fresh nonce each time; otherwise the same page.
        let again = f.get("/console/index.html")
        let other = try pageNonce(again)
        #expect(other != nonce)
        #expect(again.bodyString.replacingOccurrences(of: other, with: "N") == page.bodyString.replacingOccurrences(of: nonce, with: "N"))
        #expect(f.service.respond(to: HTTPRequest(method: "HEAD", path: "/console/")).status == 200)
    }

    @Test("every console file has its content type; a matching If-None-Match is 304")
    func filesAndETags() throws {
        let f = try ServiceFixture()
        #expect(f.get("/console/main.js").header("Content-Type") == "text/javascript; charset=utf-8")
        #expect(f.get("/console/console.css").header("Content-Type") == "text/css; charset=utf-8")
        #expect(f.get("/console/favicon.svg").header("Content-Type") == "image/svg+xml")
        let js = f.get("/console/main.js")
        let etag = try #require(js.header("ETag"))
        let again = f.get("/console/main.js", headers: ["If-None-Match": etag])
        #expect(again.status == 304 && again.body.isEmpty)
        #expect(again.header("Content-Security-Policy") == ConsoleSite.filePolicy)
        #expect(js.header("Content-Security-Policy")?.contains("script-src 'none'") == true, "an SVG opened on its own runs nothing")
        #expect(f.get("/console/main.js", headers: ["If-None-Match": "\"other\""]).status == 200)
    }

    @Test("the console has no inline script or style that its policy would block")
    func noInlineScript() throws {
        for file in ConsoleFiles.all + [OperationsScript.file] {
            let text = String(decoding: file.bytes, as: UTF8.self)
            if file.name.hasSuffix(".html") {
                #expect(!text.contains("<script>") && !text.contains("<style") && !text.contains(" style="))
                #expect(!text.contains(" onclick=") && !text.contains("javascript:"))
            }
            if file.name.hasSuffix(".js") {
                #expect(!text.contains("innerHTML") && !text.contains("outerHTML") && !text.contains("insertAdjacentHTML"), "\(file.name)")
                #expect(!text.contains("eval(") && !text.contains("new Function"), "\(file.name)")
            }
        }
    }

    @Test("a file name is looked up, never resolved: .., %2e%2e, encoded slashes and unknown names are 404")
    func noTraversal() throws {
        let f = try ServiceFixture()
        // Paths as the transport hands them over, already percent-decoded.
        for path in ["/console/..", "/console/../Package.swift", "/console/%2e%2e", "/console/..%2fPackage.swift",
                     "/console/../../etc/passwd", "/console/.%2e/registry.sqlite", "/console/x/../main.js",
                     "/console/missing.js", "/console//main.js", "/console/.", "/console/index.html/", "/console/Main.js"] {
            let response = f.get(path)
            #expect(response.status == 404, "\(path)")
            #expect(response.header("Content-Type") == "application/json", "\(path)")
        }
        // As they would be decoded, were the transport not refusing %2e and %2f in a path
        // (400 before routing, RequestHeadTests): still no file.
        for raw in ["/console/%2e%2e/Package.swift", "/console/..%2fPackage.swift", "/console/%2E%2E%2F%2E%2E%2Fetc%2Fpasswd", "/console/main.js%00"] {
            let decoded = String(decoding: RequestHead.percentDecoded(ArraySlice(raw.utf8), plusIsSpace: false), as: UTF8.self)
            #expect(f.get(decoded).status == 404, "\(raw)")
        }
    }

    @Test("patchd serves each file of console/ as it is in the repository (the page with its nonce), and no file console/ lacks")
    func servesTheConsoleDirectory() throws {
        let f = try ServiceFixture()
        let names = try consoleFileNames()
        #expect(names.contains(ConsoleSite.pageName), "read \(consoleDirectory.path): \(names)")
        #expect(ConsoleFiles.all.map(\.name).sorted() == names, "console/WebConsole.swift lists each file of console/, and only those")
        #expect(!names.contains(OperationsScript.name), "patchd renders operations.js: a file of that name would never be served")
        for name in names {
            let bytes = [UInt8](try Data(contentsOf: consoleDirectory.appendingPathComponent(name)))
            let response = f.get("/console/\(name)")
            guard response.status == 200 else {
                Issue.record("/console/\(name) is \(response.status): patchd does not serve console/\(name)")
                continue
            }
            if name == ConsoleSite.pageName {
                let nonce = try pageNonce(response)
                let same = response.bodyString.replacingOccurrences(of: "<script nonce=\"\(nonce)\" ", with: "<script ") == String(decoding: bytes, as: UTF8.self)
                #expect(same, "/console/ is console/\(name) with this response's nonce in its script element")
            } else {
                let same = response.body == bytes
                #expect(same, "/console/\(name) differs from console/\(name)")
                #expect(response.header("Content-Security-Policy") == ConsoleSite.filePolicy, "\(name)")
            }
        }
    }

    @Test("/console/operations.js is the operation table rendered, served like the files of console/: content type, policy, ETag, 304")
    func operationsScript() throws {
        let f = try ServiceFixture()
        let script = f.get("/console/operations.js")
        #expect(script.status == 200 && script.bodyString == OperationsScript.render())
        #expect(script.header("Content-Type") == ConsoleFiles.javaScript)
        #expect(script.header("Content-Security-Policy") == ConsoleSite.filePolicy && script.header("Cache-Control") == "no-cache")
        #expect(script.header("X-Content-Type-Options") == "nosniff" && script.header("X-Frame-Options") == "DENY")
        let etag = try #require(script.header("ETag"))
        let again = f.get("/console/operations.js", headers: ["If-None-Match": etag])
        #expect(again.status == 304 && again.body.isEmpty)
        let api = try String(contentsOf: consoleDirectory.appendingPathComponent("api.js"), encoding: .utf8)
        #expect(api.contains("from \"./\(OperationsScript.name)\""), "api.js imports it by that name")
    }

    @Test("operations.js names every operation and release operation once, in keys and strings that need no escaping, and each release's routes and path parameters resolve in it")
    func operationsScriptCoversTheTable() throws {
        let lines = OperationsScript.render().split(separator: "\n").map(String.init)
        // The renderer escapes nothing: an unquoted key must be an identifier, a string hold no quote or line end.
        func identifier(_ s: String) -> Bool {
            guard let first = s.unicodeScalars.first, first.properties.isAlphabetic || first == "_" else { return false }
            return s.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || $0.properties.numericType != nil || $0 == "_") }
        }
        func plain(_ s: String) -> Bool { !s.isEmpty && !s.unicodeScalars.contains { "\"\\\n\r\u{2028}\u{2029}".unicodeScalars.contains($0) } }
        for operation in APIOperation.all {
            #expect(identifier(operation.id) && plain(operation.method) && plain(operation.path), "\(operation.id)")
            #expect(lines.filter { $0.hasPrefix("  \(operation.id): ") }.count == 1, "\(operation.id) is in operations.js once")
        }
        let ids = Set(APIOperation.all.map(\.id))
        for type in ReleaseOperations.all {
            let definition = type.definition
            let parameters = definition.parameters + definition.callParameters
            #expect(plain(definition.kind) && parameters.allSatisfy { plain($0.name) }, "\(definition.kind)")
            #expect(lines.filter { $0 == "  \"\(definition.kind)\": Object.freeze({" }.count == 1, "\(definition.kind) is in operations.js once")
            #expect(!definition.routes.isEmpty && definition.routes.allSatisfy { ids.contains($0.id) }, "\(definition.kind): api.js finds each route")
            for parameter in parameters {
                #expect(parameter.route.map { route in definition.routes.contains { $0.id == route } } ?? true, "\(definition.kind) \(parameter.name)")
            }
            // api.js's perform fills a route's path from the call's values, by the parameters' names.
            for route in definition.routes {
                for name in route.parameters where name != "app" {
                    #expect(parameters.contains { $0.name == name && $0.place == .path && $0.belongs(to: route) }, "\(route.id) {\(name)}")
                }
            }
        }
    }

    @Test("/ and /console redirect a browser to /console/")
    func rootRedirects() throws {
        let f = try ServiceFixture()
        let root = f.get("/")
        #expect(root.status == 302)
        #expect(root.header("Location") == "/console/")
        #expect(f.get("/console").header("Location") == "/console/")
    }

    @Test("GET /v1/whoami says the token's id, name, role and scope; 401 without a known token")
    func whoami() throws {
        let f = try ServiceFixture()
        let publisher = try f.json(f.get("/v1/whoami", headers: bearer(f.publisherToken)))
        #expect(publisher["name"]?.stringValue == "ci" && publisher["role"]?.stringValue == "publisher" && publisher["scope"]?.stringValue == "demo")
        let auditor = try f.json(f.get("/v1/whoami", headers: bearer(f.auditorToken)))
        #expect(auditor["role"]?.stringValue == "auditor" && auditor["scope"]?.stringValue == "*")
        #expect(Set(auditor.objectValue?.keys.map { $0 } ?? []) == ["id", "name", "role", "scope"])
        #expect(!f.get("/v1/whoami", headers: bearer(f.auditorToken)).bodyString.contains("hp_"))
        #expect(f.get("/v1/whoami").status == 401)
        let wrong = f.get("/v1/whoami", headers: bearer("hp_not-a-token"))
        #expect(wrong.status == 401)
        #expect(try f.json(wrong)["error"]?["message"]?.stringValue == "unknown or revoked token")
    }

    @Test("a patch's script: text/plain for any reader of the app, revoked ones too; 404 for no such patch; 403 elsewhere")
    func script() throws {
        let f = try ServiceFixture()
        #expect(f.publish("one()").status == 201)
        #expect(f.publish("two()").status == 201)
        #expect(f.post("/v1/apps/demo/versions/2.3/patches/1/revoke", token: f.publisherToken).status == 200)
        let first = f.get("/v1/apps/demo/versions/2.3/patches/1/script", headers: bearer(f.auditorToken))
        #expect(first.status == 200 && first.bodyString == "one()")
        #expect(first.header("Content-Type") == "text/plain; charset=utf-8")
        #expect(first.header("X-Content-Type-Options") == "nosniff")
        #expect(f.get("/v1/apps/demo/versions/2.3/patches/2/script", headers: bearer(f.publisherToken)).bodyString == "two()")
        #expect(f.get("/v1/apps/demo/versions/2.3/patches/3/script", headers: bearer(f.auditorToken)).status == 404)
        #expect(f.get("/v1/apps/demo/versions/2.3/patches/1/script").status == 401)
        #expect(f.get("/v1/apps/demo/versions/2.3/patches/1/script", headers: bearer(f.otherAppToken)).status == 403)
        #expect(f.get("/v1/apps/demo/versions/2.3/patches/0/script", headers: bearer(f.auditorToken)).status == 400)
    }

    @Test("an encrypted app's scripts are not served in the clear: 409 naming patchctl diff")
    func encryptedScript() throws {
        let f = try ServiceFixture(encrypted: true)
        #expect(f.publish("secret()").status == 201)
        let response = f.get("/v1/apps/demo/versions/2.3/patches/1/script", headers: bearer(f.auditorToken))
        #expect(response.status == 409)
        #expect(try f.json(response)["error"]?["message"]?.stringValue?.contains("patchctl diff") == true)
        #expect(!response.bodyString.contains("secret()"))
    }

    @Test("a trailing slash matches only a pattern that ends in one; an empty parameter matches nothing")
    func trailingSlash() throws {
        let f = try ServiceFixture()
        #expect(f.get("/v1/apps/demo/metadata/").status == 404)
        #expect(f.get("/v1/apps/").status == 404)
        #expect(f.get("/healthz/").status == 404)
        #expect(f.get("/v1/apps/demo/metadata/1.root.json").status == 200)
    }
}
