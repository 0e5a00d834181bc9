import PatchCore

/// Where in main.js something happened, as JavaScriptCore counts (1-based line and column).
public struct ScriptLocation: Sendable, Equatable {
    public var line: Int?
    public var column: Int?

    public init(line: Int?, column: Int?) {
        self.line = line
        self.column = column
    }

    init(_ json: JSON?) {
        line = json?["line"]?.intValue.map(Int.init)
        column = json?["column"]?.intValue.map(Int.init)
    }

    /// `main.js:6:12`, `main.js:6` or `main.js`.
    public var text: String {
        guard let line else { return "main.js" }
        return column.map { "main.js:\(line):\($0)" } ?? "main.js:\(line)"
    }
}

/// What the worker reported of one script: its syntax error, or what its top level did against
/// the recording JSPatch runtime (the classes it defines and requires, and what threw).
struct ScriptRecording: Sendable {
    struct Method: Sendable, Equatable {
        var jsName: String
        var arity: Int
    }

    /// Something JSPatch's own JavaScript would mishandle in one `defineClass` call.
    struct Problem: Sendable, Equatable {
        var kind: String
        var table: String?
        var name: String?
        var valueType: String?
        var dropped: [String]
        var message: String?
    }

    struct DefinedClass: Sendable {
        var declaration: String
        var name: String?
        var superclass: String?
        var protocols: [String]
        var instanceMethods: [Method]
        var classMethods: [Method]
        var problems: [Problem]
        var at: ScriptLocation
    }

    struct DefinedProtocol: Sendable {
        var name: String?
        var instanceMethods: [Method]
        var classMethods: [Method]
    }

    struct Thrown: Sendable {
        var message: String
        var at: ScriptLocation
    }

    var syntaxError: Thrown?
    var exception: Thrown?
    var classes: [DefinedClass] = []
    var required: [(name: String, at: ScriptLocation)] = []
    var protocols: [DefinedProtocol] = []
    var includes: [(file: String, at: ScriptLocation)] = []
    /// Names the top level used that neither JavaScript nor JSPatch defines, where each was
    /// first used (the worker stood in for them and ran the script again).
    var unknownGlobals: [(name: String, at: ScriptLocation)] = []
    var truncated = false
    var syntaxMicros: Int?
    var evaluationMicros: Int?

    static let format = "hotpatch-check-worker/1"

    /// The worker's answer; nil when it is not one (a worker of another build).
    init?(workerOutput json: JSON) {
        guard json["format"]?.stringValue == Self.format else { return nil }
        syntaxError = Self.thrown(json["syntaxError"])
        exception = Self.thrown(json["exception"])
        unknownGlobals = (json["unknownGlobals"]?.arrayValue ?? []).compactMap { entry in
            entry["name"]?.stringValue.map { ($0, ScriptLocation(entry)) }
        }
        syntaxMicros = json["timing"]?["syntaxMicros"]?.intValue.map(Int.init)
        evaluationMicros = json["timing"]?["evaluationMicros"]?.intValue.map(Int.init)
        if syntaxError != nil { return }
        guard let recording = json["recording"] else {
            // The report function itself threw: the script broke the recorder's own objects.
            if let broken = Self.thrown(json["reportError"]) {
                exception = exception ?? Thrown(message: "the script's top level left nothing to report (\(broken.message))", at: broken.at)
                return
            }
            return nil
        }
        truncated = recording["truncated"]?.boolValue ?? false
        classes = (recording["classes"]?.arrayValue ?? []).map { entry in
            DefinedClass(declaration: entry["declaration"]?.stringValue ?? "", name: entry["name"]?.stringValue,
                         superclass: entry["superclass"]?.stringValue, protocols: Self.strings(entry["protocols"]),
                         instanceMethods: Self.methods(entry["instanceMethods"]), classMethods: Self.methods(entry["classMethods"]),
                         problems: (entry["problems"]?.arrayValue ?? []).map(Self.problem), at: ScriptLocation(entry["at"]))
        }
        required = (recording["required"]?.arrayValue ?? []).compactMap { entry in
            entry["name"]?.stringValue.map { ($0, ScriptLocation(entry["at"])) }
        }
        protocols = (recording["protocols"]?.arrayValue ?? []).map { entry in
            DefinedProtocol(name: entry["name"]?.stringValue, instanceMethods: Self.methods(entry["instanceMethods"]),
                            classMethods: Self.methods(entry["classMethods"]))
        }
        includes = (recording["includes"]?.arrayValue ?? []).compactMap { entry in
            entry["file"]?.stringValue.map { ($0, ScriptLocation(entry["at"])) }
        }
    }

    private static func thrown(_ json: JSON?) -> Thrown? {
        guard let json, let message = json["message"]?.stringValue else { return nil }
        return Thrown(message: message, at: ScriptLocation(json))
    }

    private static func strings(_ json: JSON?) -> [String] { json?.arrayValue?.compactMap(\.stringValue) ?? [] }

    private static func methods(_ json: JSON?) -> [Method] {
        (json?.arrayValue ?? []).compactMap { entry in
            entry["name"]?.stringValue.map { Method(jsName: $0, arity: Int(entry["arity"]?.intValue ?? 0)) }
        }
    }

    private static func problem(_ json: JSON) -> Problem {
        Problem(kind: json["kind"]?.stringValue ?? "unknown", table: json["table"]?.stringValue, name: json["name"]?.stringValue,
                valueType: json["valueType"]?.stringValue, dropped: strings(json["dropped"]), message: json["message"]?.stringValue)
    }
}
