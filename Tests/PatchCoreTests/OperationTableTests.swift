import Foundation
import PatchAPI
import PatchCore
import Testing

// Holds docs/openapi.yaml and README's CLI reference to the operation table
// (APIOperation+Table.swift), so a route is spelt once and every other copy is checked
// (the console's operations.js is rendered from it by patchd: ConsoleRouteTests).

private let packageRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

private func text(_ relative: String) throws -> String {
    try String(contentsOf: packageRoot.appendingPathComponent(relative), encoding: .utf8)
}

/// One operation as docs/openapi.yaml declares it: `operationId`, method, path and whether it
/// names `bearerAuth` under `security`.
private struct Declared: Hashable, CustomStringConvertible {
    let id: String
    let method: String
    let path: String
    let bearer: Bool
    var description: String { "\(id): \(method) \(path)\(bearer ? " (bearer)" : "")" }
}

/// The operations of an OpenAPI document laid out as ours is (two-space indents: a path at
/// 2, a method at 4, its fields at 6). Enough YAML for that layout, and it refuses any other.
private func declaredOperations(_ yaml: String) throws -> [Declared] {
    var out: [Declared] = []
    var inPaths = false
    var path: String?
    var method: String?
    var id: String?
    var bearer = false
    var inSecurity = false
    func flush() {
        if let path, let method, let id { out.append(Declared(id: id, method: method.uppercased(), path: path, bearer: bearer)) }
        method = nil; id = nil; bearer = false; inSecurity = false
    }
    for line in yaml.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
        if !line.hasPrefix(" "), !line.isEmpty {
            flush()
            inPaths = line == "paths:"
            path = nil
            continue
        }
        guard inPaths else { continue }
        let indent = line.prefix { $0 == " " }.count
        let content = line.trimmingCharacters(in: .whitespaces)
        if indent == 2, content.hasSuffix(":"), content.hasPrefix("/") {
            flush()
            path = String(content.dropLast())
        } else if indent == 4, ["get:", "put:", "post:", "delete:", "patch:", "head:"].contains(content) {
            flush()
            method = String(content.dropLast())
        } else if indent == 6, content.hasPrefix("operationId:") {
            id = content.dropFirst("operationId:".count).trimmingCharacters(in: .whitespaces)
        } else if indent == 6 {
            inSecurity = content == "security:"
        } else if inSecurity, indent == 8, content.contains("bearerAuth") {
            bearer = true
        }
    }
    flush()
    return out
}

@Suite("The operation table")
struct OperationTableTests {
    @Test("docs/openapi.yaml declares exactly the table's operations: id, method, path and whether a token is needed")
    func openAPIMatches() throws {
        let declared = Set(try declaredOperations(try text("docs/openapi.yaml")))
        let table = Set(APIOperation.all.map { Declared(id: $0.id, method: $0.method, path: $0.path, bearer: $0.scope != .anyone) })
        #expect(declared.count >= 30, "the scanner found \(declared.count) operations: it reads the wrong layout")
        #expect(declared.subtracting(table).sorted { $0.id < $1.id } == [], "in openapi.yaml, not in the table (or differing)")
        #expect(table.subtracting(declared).sorted { $0.id < $1.id } == [], "in the table, not in openapi.yaml (or differing)")
    }

    @Test("ids and method+path pairs are unique")
    func unique() {
        #expect(Set(APIOperation.all.map(\.id)).count == APIOperation.all.count)
        #expect(Set(APIOperation.all.map(\.description)).count == APIOperation.all.count)
        for operation in APIOperation.all { #expect(APIOperation.named(operation.id) == operation) }
    }

    @Test("every command the table names is a row of README's CLI reference, and the --server list names exactly those")
    func readme() throws {
        let readme = try text("README.md")
        let commands = Set(APIOperation.all.flatMap(\.commands))
        for command in commands.sorted() {
            #expect(readme.contains("| `patchctl \(command) "), "README's CLI reference has no row for `patchctl \(command)`")
        }
        // "`publish`, `promote`, … act on a running `patchd` instead of the local registry".
        let marker = " act on a\nrunning `patchd` instead of the local registry"
        let paragraph = try #require(readme.components(separatedBy: marker).first?.components(separatedBy: "\n\n").last,
                                     "README lost the sentence listing the commands that take --server")
        let listed = Set(paragraph.split(separator: "`", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) })
        // fetch and verify read a server's TUF repository (`--server` is their input, not a
        // choice between registry and server).
        #expect(listed == commands.subtracting(["fetch"]), "README's --server sentence and the table differ")
    }

    @Test("the TUF operations are the repository layout: the repository root, then metadata/ or targets/ and the target path")
    func repositoryLayout() {
        let root = DeviceRoutes.repositoryRoot(app: "demo")
        #expect(root == "/v1/apps/demo")
        #expect(APIOperation.getMetadata.path(["app": "demo", "file": "3.targets.json"]) == root + "/" + RepositoryFile.metadata("3.targets.json").relativePath)
        let cases: [(APIOperation, ChannelName, Bool)] = [
            (.getTarget, .production, false), (.getConditionalTarget, .production, true),
            (.getChannelTarget, try! ChannelName("beta"), false), (.getChannelConditionalTarget, try! ChannelName("beta"), true),
        ]
        for (operation, channel, conditional) in cases {
            let signed = PatchTargetInfo.path(appVersion: "2.3", channel: channel, patch: 7, conditional: conditional)
            let file = conditional ? PatchTargetInfo.conditionalFileName : "main.js"
            let hashed = String(signed.dropLast(file.count)) + "ab12.\(file)"
            var values = ["app": "demo", "appVersion": "2.3", "patch": "7", "hash": "ab12"]
            if channel != .production { values["channel"] = channel.rawValue }
            #expect(operation.path(values) == root + "/" + RepositoryFile.target(hashed).relativePath, "\(operation.id)")
        }
        #expect(APIOperation.checkPatch.path(["app": "demo", "appVersion": "2.3"]) == "/v1/apps/demo/versions/2.3/patch")
    }

    @Test("paths and queries are percent-encoded per segment; suffixes and a trailing slash are kept")
    func encoding() {
        #expect(APIOperation.consoleIndex.path([:]) == "/console/")
        #expect(APIOperation.rootRedirect.path([:]) == "/")
        #expect(APIOperation.getJSPatchPackage.path(["app": "a", "appVersion": "1.0", "package": "v2"]) == "/jspatch/a/1.0/v2.zip")
        #expect(APIOperation.consoleFile.path(["file": "a/b c"]) == "/console/a%2Fb%20c")
        #expect(APIOperation.rollBackTo.target(["app": "demo", "appVersion": "2.3"], query: ["to": "2", "message": "fix & go 🚑"])
                == "/v1/apps/demo/versions/2.3/rollback?message=fix%20%26%20go%20%F0%9F%9A%91&to=2")
        #expect(APIOperation.getTarget.parameters == ["app", "appVersion", "patch", "hash"])
    }

    @Test("a segment with a suffix captures what precedes it, never an empty value")
    func capture() {
        let segment = APIOperation.getTarget.segments.last!
        #expect(segment.capture("ab12.main.js") == "ab12")
        #expect(segment.capture(".main.js") == nil)
        #expect(segment.capture("ab12.main.conditional.js") == nil)
        #expect(APIOperation.getTarget.segments[0].capture("v1") == "")
        #expect(APIOperation.getTarget.segments[0].capture("v2") == nil)
    }
}
