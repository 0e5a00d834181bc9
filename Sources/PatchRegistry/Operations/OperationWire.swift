import Foundation
import PatchAPI
import PatchCore

/// One call of a release operation as HTTP carries it: what patchctl's remote form sends and
/// what patchd's handler reads back, each from the operation's parameters (docs/PROTOCOL.md
/// section "Release operations").
public struct OperationRequest: Sendable, Equatable {
    public let route: APIOperation
    /// Path parameters, `app` among them.
    public let path: [String: String]
    public let query: [String: String]
    public let headers: [String: String]
    public let body: [UInt8]?
}

/// How a call is run, beside what it does: the call parameters (`OperationDefinition.callParameters`).
public struct CallOptions: Sendable, Equatable {
    public var dryRun: Bool
    public var expectPatch: Int?
    public var confirmed: Bool

    public init(dryRun: Bool = false, expectPatch: Int? = nil, confirmed: Bool = false) {
        self.dryRun = dryRun
        self.expectPatch = expectPatch
        self.confirmed = confirmed
    }

    public func context(app: AppName?, actor: Actor, caller: TokenRecord? = nil, now: Date = Date()) -> OperationContext {
        OperationContext(app: app, actor: actor, caller: caller, dryRun: dryRun, expectPatch: expectPatch, confirmed: confirmed, now: now)
    }
}

extension ReleaseOperation {
    /// This call as its route takes it.
    public func request(app: AppName?, _ options: CallOptions = CallOptions()) -> OperationRequest {
        let definition = Self.definition
        var values = self.values
        // Only what the operation takes: a caller cannot send what its routes would refuse.
        if options.dryRun, definition.dryRun { values["dryRun"] = "true" }
        if let expect = options.expectPatch, definition.expectPatch { values["expectPatch"] = String(expect) }
        if options.confirmed, definition.confirms { values["confirm"] = "true" }
        let route = definition.route(for: values)
        var path: [String: String] = [:], query: [String: String] = [:], headers: [String: String] = [:]
        if let app, route.parameters.contains("app") { path["app"] = app.rawValue }
        var members: [String: JSON] = [:]
        for (name, raw) in values.fields {
            guard let parameter = definition.parameter(name) else { preconditionFailure("\(definition.kind): \(name) is not a parameter") }
            switch parameter.place {
            case .path where route.parameters.contains(name): path[name] = raw
            case .path, .query: query[name] = raw
            case .header: headers[parameter.header ?? name] = raw
            case .body: members[name] = parameter.kind.bodyValue(raw)
            case .content: continue
            }
        }
        let body = definition.parameters.contains { $0.place == .body } ? JSON.object(members).canonicalBytes : values.bundle
        return OperationRequest(route: route, path: path, query: query, headers: headers, body: body)
    }
}

extension OperationParameter.Kind {
    var isNumber: Bool { self == .patch || self == .percent || self == .integer }

    /// A value's JSON form in a body: numbers as integers, a list as an array of them.
    func bodyValue(_ raw: String) -> JSON {
        if self == .flag { return .bool(raw == "true") }
        if self == .json { return (try? JSONParser.parse(Array(raw.utf8))) ?? .string(raw) }
        if self == .integers { return .array(raw.split(separator: ",").map { Int64($0).map { .int($0) } ?? .string(String($0)) }) }
        return isNumber ? Int64(raw).map { .int($0) } ?? .string(raw) : .string(raw)
    }

    /// A body member's text form, or nil when it is not of this kind's JSON type.
    func text(_ value: JSON) -> String? {
        switch (self, value) {
        case (.json, _): return value.canonicalString
        case (.flag, .bool(let b)): return b ? "true" : "false"
        case (.flag, _): return nil
        case (.integers, .array(let items)):
            let numbers = items.compactMap(\.intValue)
            return numbers.count == items.count ? numbers.map(String.init).joined(separator: ",") : nil
        case (.integers, _): return nil
        case (_, .int(let n)) where isNumber: return String(n)
        case (_, .string(let s)) where !isNumber: return s
        default: return nil
        }
    }
}

extension OperationDefinition {
    /// Reads a call from what a route captured (`path`, without `app`), its query arguments
    /// in order, a header lookup and the body: any argument the operation does not declare,
    /// or one sent twice, is refused, so a misspelt option is never silently ignored.
    public func decode(route: APIOperation, path: [String: String], query: [(name: String, value: String)], header: (String) -> String?,
                       body: [UInt8]) throws(RegistryError) -> (values: OperationValues, options: CallOptions) {
        var values = OperationValues()
        for (name, value) in path where name != "app" { values[name] = value }
        for (name, value) in query {
            guard let parameter = parameter(name, on: route), parameter.place == .query else {
                throw .invalidCall("\(kind) takes no query parameter \(name.debugSanitized) here (it takes \(queryNames(route).joined(separator: ", ")))")
            }
            guard values[name] == nil else { throw .invalidCall("\(name) was sent twice") }
            values[name] = value
        }
        for parameter in parameters where parameter.place == .header {
            if let value = header(parameter.header ?? parameter.name) { values[parameter.name] = value }
        }
        if parameters.contains(where: { $0.place == .content }) {
            values.bundle = body
        } else if parameters.contains(where: { $0.place == .body }) {
            try decodeMembers(body, into: &values)
        } else if !body.isEmpty {
            throw .invalidCall("\(kind) takes no request body")
        }
        let options = CallOptions(dryRun: try values.flag("dryRun"), expectPatch: try values.patch("expectPatch", allowZero: true),
                                  confirmed: try values.flag("confirm"))
        for call in callParameters { values[call.name] = nil }
        return (values, options)
    }

    private func queryNames(_ route: APIOperation) -> [String] {
        (parameters + callParameters).filter { $0.place == .query && $0.belongs(to: route) }.map(\.name)
    }

    /// A JSON object of the body parameters, each of its declared type.
    private func decodeMembers(_ body: [UInt8], into values: inout OperationValues) throws(RegistryError) {
        let members = parameters.filter { $0.place == .body }
        let example = "{" + members.map { "\"\($0.name)\": …" }.joined(separator: ", ") + "}"
        let json: JSON
        do { json = try JSONParser.parse(body, maxLength: bodyLimit) } catch { throw .invalidCall("the body must be JSON like \(example): \(error)") }
        guard let object = json.objectValue else { throw .invalidCall("the body must be a JSON object like \(example)") }
        for (name, value) in object {
            guard let parameter = members.first(where: { $0.name == name }) else {
                throw .invalidCall("the body has a member \(name.debugSanitized) that \(kind) does not take (it takes \(members.map(\.name).joined(separator: ", ")))")
            }
            guard let text = parameter.kind.text(value) else {
                let type = switch parameter.kind {
                case .integers: "an array of integers"
                case .flag: "true or false"
                default: parameter.kind.isNumber ? "an integer" : "a string"
                }
                throw .invalidCall("\(name) must be \(type)")
            }
            // A flag's false is its absence, as a value encodes it.
            if parameter.kind == .flag, text == "false" { continue }
            values[name] = text
        }
        for parameter in members where parameter.required && values[parameter.name] == nil {
            throw .invalidCall("the body must be JSON like \(example): \(parameter.name) is required")
        }
    }
}
