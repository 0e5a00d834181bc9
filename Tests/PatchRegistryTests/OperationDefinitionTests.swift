import Foundation
import PatchAPI
import PatchCore
import PatchRegistry
import Testing

// Holds docs/openapi.yaml to the release operations' definitions (Sources/PatchRegistry/Operations),
// parameter by parameter, and checks the one codec both ways: what a call encodes is what the
// server decodes. The console's operations.js is rendered from the same definitions by patchd
// (OperationsScript); ConsoleRouteTests checks what it renders.

private let packageRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

private func text(_ relative: String) throws -> String {
    try String(contentsOf: packageRoot.appendingPathComponent(relative), encoding: .utf8)
}

/// One parameter as openapi.yaml declares it.
private struct Declared: Hashable, CustomStringConvertible {
    let name: String
    let place: String
    let required: Bool
    var description: String { "\(place) \(name)\(required ? " (required)" : "")" }
}

/// The parameters of each operationId in openapi.yaml, `$ref`s to `components/parameters`
/// resolved. Reads the layout the file is written in (two-space indents: a path at 2, a
/// method at 4, its fields at 6, a parameter's `- ` at 8 and its fields at 10; a component
/// parameter at 4 and its fields at 6).
private func declaredParameters(_ yaml: String) -> [String: Set<Declared>] {
    let lines = yaml.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    func indent(_ line: String) -> Int { line.prefix { $0 == " " }.count }
    func field(_ line: String, _ name: String) -> String? {
        let content = line.trimmingCharacters(in: .whitespaces).drop { $0 == "-" || $0 == " " }
        guard content.hasPrefix(name + ":") else { return nil }
        return content.dropFirst(name.count + 1).trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
    }
    // components.parameters: name → (name, in, required)
    var components: [String: Declared] = [:]
    if let start = lines.firstIndex(of: "  parameters:") {
        var current: String?, name = "", place = "", required = false
        func flush() { if let current { components[current] = Declared(name: name, place: place, required: required) } }
        for line in lines[(start + 1)...] {
            if !line.isEmpty, indent(line) < 4 { break }
            if indent(line) == 4, line.hasSuffix(":") {
                flush()
                current = line.trimmingCharacters(in: .whitespaces).dropLast().description
                name = ""; place = ""; required = false
            } else if indent(line) == 6 {
                if let v = field(line, "name") { name = v }
                if let v = field(line, "in") { place = v }
                if let v = field(line, "required") { required = v == "true" }
            }
        }
        flush()
    }
    var out: [String: Set<Declared>] = [:]
    var id: String?, inParameters = false
    var name: String?, place = "", required = false
    func flushParameter() {
        if let id, let name { out[id, default: []].insert(Declared(name: name, place: place, required: required)) }
        name = nil; place = ""; required = false
    }
    for line in lines {
        if line.hasPrefix("components:") { break }
        let depth = indent(line)
        if depth <= 4, !line.trimmingCharacters(in: .whitespaces).isEmpty { flushParameter(); id = nil; inParameters = false; continue }
        if depth == 6 {
            flushParameter()
            if let v = field(line, "operationId") { id = v; out[v] = out[v] ?? [] }
            inParameters = line.trimmingCharacters(in: .whitespaces) == "parameters:"
            continue
        }
        guard inParameters else { continue }
        if depth == 8, line.trimmingCharacters(in: .whitespaces).hasPrefix("- ") {
            flushParameter()
            if let ref = field(line, "$ref"), let component = components[String(ref.split(separator: "/").last ?? "")], let id {
                out[id, default: []].insert(component)
                continue
            }
            name = field(line, "name")
        } else if depth == 10 {
            if let v = field(line, "name") { name = v }
            if let v = field(line, "in") { place = v }
            if let v = field(line, "required") { required = v == "true" }
        }
    }
    flushParameter()
    return out
}

/// What the definition says each route of `operation` takes.
private func expected(_ definition: OperationDefinition, route: APIOperation) -> Set<Declared> {
    var out: Set<Declared> = route.parameters.contains("app") ? [Declared(name: "app", place: "path", required: true)] : []
    for parameter in definition.parameters + definition.callParameters where parameter.belongs(to: route) {
        switch parameter.place {
        case .path where route.parameters.contains(parameter.name): out.insert(Declared(name: parameter.name, place: "path", required: true))
        case .path, .body, .content: continue
        case .query: out.insert(Declared(name: parameter.name, place: "query", required: parameter.required))
        case .header: out.insert(Declared(name: parameter.header ?? parameter.name, place: "header", required: parameter.required))
        }
    }
    return out
}

@Suite("Release operations: one definition each")
struct OperationDefinitionTests {
    @Test("docs/openapi.yaml declares each route of each release operation with exactly its parameters")
    func openAPIParameters() throws {
        let declared = declaredParameters(try text("docs/openapi.yaml"))
        #expect(declared.count >= 30, "the scanner found \(declared.count) operations: it reads the wrong layout")
        for type in ReleaseOperations.all {
            for route in type.definition.routes {
                let found = try #require(declared[route.id], "openapi.yaml has no \(route.id)")
                let wanted = expected(type.definition, route: route)
                #expect(found.subtracting(wanted).sorted { $0.description < $1.description } == [], "\(route.id): in openapi.yaml, not in the definition")
                #expect(wanted.subtracting(found).sorted { $0.description < $1.description } == [], "\(route.id): in the definition, not in openapi.yaml")
            }
        }
    }

    @Test("every release operation: what a call encodes, patchd decodes to the same value and call options", arguments: [
        ("publish", ["appVersion": "2.3", "channel": "beta", "rollout": "25", "message": "fix", "allowSame": "true",
                     "conditions": #"{"os":{"min":"15.0"}}"#], true),
        ("promote", ["appVersion": "2.3", "from": "beta", "to": "production", "patch": "4", "rollout": "10"], false),
        ("rollout", ["appVersion": "2.3", "patch": "2", "percent": "40"], false),
        ("halt", ["appVersion": "2.3", "patch": "2", "message": "crash"], false),
        ("resume", ["appVersion": "2.3", "patch": "2", "rollout": "30"], false),
        ("revoke", ["appVersion": "2.3", "patch": "2", "message": "bad"], false),
        ("revoke", ["appVersion": "2.3", "all": "true", "channel": "beta"], false),
        ("rollback", ["appVersion": "2.3", "channel": "beta", "patch": "3"], false),
        ("rollback", ["appVersion": "2.3", "to": "1", "rollout": "50", "message": "back"], false),
        ("channel", ["channel": "staging"], false),
        ("guard", ["channel": "beta", "maxRollbackRatePpm": "20000", "minDevices": "50", "action": "revoke"], false),
        ("guard-remove", ["channel": "beta"], false),
        ("throttle", ["minInterval": "60", "ipRatePerMinute": "0"], false),
        ("schedule", ["appVersion": "2.3", "patch": "2", "steps": "25,50,100", "everySeconds": "3600"], false),
        ("token", ["app": "demo", "role": "auditor", "name": "dashboard"], false),
        ("token-revoke", ["id": "0123456789ab"], false),
        ("delegate", ["channel": "staging", "name": "qa", "threshold": "1", "replace": "true",
                      "keys": #"[{"keytype":"ed25519","keyval":{"public":"\#(String(repeating: "ab", count: 32))"},"scheme":"ed25519"}]"#], false),
        ("delegate", ["channel": "staging", "name": "qa"], false),
        ("undelegate", ["channel": "staging"], false),
    ] as [(String, [String: String], Bool)])
    func codec(kind: String, fields: [String: String], bundle: Bool) throws {
        let app = try AppName("demo")
        let type = try #require(ReleaseOperations.type(kind))
        let operation = try type.init(OperationValues(fields, bundle: bundle ? Array("fix()".utf8) : nil))
        let options = CallOptions(dryRun: type.definition.dryRun, expectPatch: type.definition.expectPatch ? 3 : nil, confirmed: type.definition.confirms)
        let request = operation.request(app: app, options)
        #expect(request.path["app"] == (request.route.parameters.contains("app") ? "demo" : nil))
        let path = request.path.filter { $0.key != "app" }
        let call = try type.definition.decode(route: request.route, path: path, query: request.query.map { ($0.key, $0.value) }.sorted { $0.0 < $1.0 },
                                              header: { name in request.headers.first { $0.key.lowercased() == name.lowercased() }?.value },
                                              body: request.body ?? [])
        #expect(call.values == operation.values, "\(kind)")
        #expect(call.options == options)
        // The route is the one whose path parameters the call has.
        #expect(request.route.parameters.allSatisfy { $0 == "app" || path[$0] != nil })
    }

    @Test("an argument an operation does not take, one sent twice, or a body member it does not know is refused")
    func strictDecoding() throws {
        let rollout = RolloutOperation.definition
        #expect(throws: RegistryError.self) {
            try rollout.decode(route: .setRollout, path: ["appVersion": "2.3", "patch": "1"], query: [("rolout", "10")], header: { _ in nil }, body: Array(#"{"percent":1}"#.utf8))
        }
        #expect(throws: RegistryError.self) {
            try rollout.decode(route: .setRollout, path: ["appVersion": "2.3", "patch": "1"], query: [("dryRun", "true"), ("dryRun", "false")], header: { _ in nil },
                               body: Array(#"{"percent":1}"#.utf8))
        }
        #expect(throws: RegistryError.self) {
            try rollout.decode(route: .setRollout, path: ["appVersion": "2.3", "patch": "1"], query: [], header: { _ in nil }, body: Array(#"{"percent":1,"x":2}"#.utf8))
        }
        #expect(throws: RegistryError.self) {
            try rollout.decode(route: .setRollout, path: ["appVersion": "2.3", "patch": "1"], query: [], header: { _ in nil }, body: Array(#"{"percent":"1"}"#.utf8))
        }
        // A schedule's steps are a JSON array of integers in the body, nothing else.
        #expect(throws: RegistryError.self) {
            try ScheduleOperation.definition.decode(route: .setSchedule, path: ["appVersion": "2.3", "patch": "1"], query: [], header: { _ in nil },
                                                    body: Array(#"{"steps":[25,"50"],"everySeconds":60}"#.utf8))
        }
        #expect(throws: RegistryError.self) {
            try HaltOperation.definition.decode(route: .haltPatch, path: ["appVersion": "2.3", "patch": "1"], query: [], header: { _ in nil }, body: Array("x".utf8))
        }
    }

    @Test("revoke needs a patch or all, never both; rollback's patch and to exclude each other; the words are the CLI's and the server's alike")
    func callRules() throws {
        func message(_ body: () throws -> Void) -> String? {
            do { try body(); return nil } catch RegistryError.invalidCall(let m) { return m } catch { return "\(error)" }
        }
        #expect(message { _ = try RevokeOperation(OperationValues(["appVersion": "2.3"])) }?.contains("--all") == true)
        #expect(message { _ = try RevokeOperation(OperationValues(["appVersion": "2.3", "patch": "1", "all": "true"])) } != nil)
        #expect(message { _ = try RollbackOperation(OperationValues(["appVersion": "2.3", "patch": "1", "to": "2"])) } != nil)
        #expect(message { _ = try RollbackOperation(OperationValues(["appVersion": "2.3", "rollout": "5"])) } != nil)
        #expect(message { _ = try ResumeOperation(OperationValues(["appVersion": "2.3", "patch": "1", "rollout": "0"])) } != nil)
        #expect(message { _ = try RolloutOperation(OperationValues(["appVersion": "2.3", "patch": "1"])) } != nil)
        #expect(message { _ = try GuardOperation(OperationValues(["maxRollbackRatePpm": "20000", "minDevices": "50", "action": "explode"])) }?
            .contains("halt or revoke") == true)
        #expect(message { _ = try ScheduleOperation(OperationValues(["appVersion": "2.3", "patch": "1", "steps": "25,x", "everySeconds": "60"])) } != nil)
        // Steps are a set taken in increasing order, whatever order they came in.
        #expect(try ScheduleOperation(OperationValues(["appVersion": "2.3", "patch": "1", "steps": "100,25,50,25", "everySeconds": "60"])).steps == [25, 50, 100])
    }
}
