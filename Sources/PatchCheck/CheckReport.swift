import PatchCore

/// One thing the check found (docs/PROTOCOL.md, "Script check"). An error refuses a publish
/// unless `--skip-check` gives a reason; a warning is shown and recorded; a note says what the
/// check could not confirm.
public struct CheckFinding: Sendable, Equatable {
    public enum Severity: String, Sendable, Comparable {
        case error, warning, note

        public static func < (a: Severity, b: Severity) -> Bool { a.rank < b.rank }
        private var rank: Int { self == .error ? 0 : self == .warning ? 1 : 2 }
    }

    public var severity: Severity
    /// A stable name for the kind of finding: `syntax`, `exception`, `limit`, `unknown-class`,
    /// `unknown-superclass`, `unknown-required-class`, `selector-typo`, `new-method`,
    /// `unconfirmed-selector`, `undefined-name`, `app-global`, `not-a-function`, `declaration`,
    /// `superclass-ignored`, `include`, `truncated`, `native-skipped`.
    public var code: String
    public var message: String
    public var at: ScriptLocation?
    public var className: String?
    public var selector: String?
    public var suggestions: [String]

    public init(_ severity: Severity, _ code: String, _ message: String, at: ScriptLocation? = nil, className: String? = nil,
                selector: String? = nil, suggestions: [String] = []) {
        self.severity = severity
        self.code = code
        self.message = CheckFinding.oneLine(message)
        self.at = at
        self.className = className
        self.selector = selector
        self.suggestions = suggestions
    }

    /// A message on one line that reads as it is: control characters (a thrown message's
    /// newline) as spaces, bidirectional overrides (which would reorder a listing) as U+FFFD.
    static func oneLine(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.map { scalar in
            if scalar.value < 0x20 || scalar.value == 0x7f { return " " }
            if (0x202A...0x202E).contains(scalar.value) || (0x2066...0x2069).contains(scalar.value) { return "\u{FFFD}" }
            return scalar
        }))
    }

    public var json: JSON {
        var object: [String: JSON] = ["severity": .string(severity.rawValue), "code": .string(code), "message": .string(message)]
        if let line = at?.line { object["line"] = .int(Int64(line)) }
        if let column = at?.column { object["column"] = .int(Int64(column)) }
        if let className { object["class"] = .string(className) }
        if let selector { object["selector"] = .string(selector) }
        if !suggestions.isEmpty { object["suggestions"] = .array(suggestions.map(JSON.string)) }
        return .object(object)
    }

    public init?(json: JSON) {
        guard let severity = json["severity"]?.stringValue.flatMap(Severity.init(rawValue:)), let code = json["code"]?.stringValue,
              let message = json["message"]?.stringValue else { return nil }
        let line = json["line"]?.intValue.map(Int.init), column = json["column"]?.intValue.map(Int.init)
        self.init(severity, code, message, at: line == nil ? nil : ScriptLocation(line: line, column: column),
                  className: json["class"]?.stringValue, selector: json["selector"]?.stringValue,
                  suggestions: json["suggestions"]?.arrayValue?.compactMap(\.stringValue) ?? [])
    }

    /// `main.js:6:12: error: …`, as compilers print it.
    public var line: String {
        "\(at?.text ?? "main.js"): \(severity.rawValue): \(message)"
    }
}

/// What one check of a script found, for one app version.
public struct CheckReport: Sendable, Equatable {
    public enum Outcome: String, Sendable {
        case passed, warnings, failed
    }

    public var findings: [CheckFinding]
    /// Whether the script was checked against the app version's native manifest.
    public var nativeChecked: Bool
    public var manifestSha256: String?
    /// The selectors the script defines, per class (`Class -selector` / `Class +selector`):
    /// what a reviewer reads to see what a patch touches.
    public var touches: [String]
    public var syntaxMicros: Int?
    public var evaluationMicros: Int?

    public init(findings: [CheckFinding], nativeChecked: Bool, manifestSha256: String? = nil, touches: [String] = [],
                syntaxMicros: Int? = nil, evaluationMicros: Int? = nil) {
        self.findings = findings.sorted { ($0.severity, $0.at?.line ?? 0, $0.at?.column ?? 0) < ($1.severity, $1.at?.line ?? 0, $1.at?.column ?? 0) }
        self.nativeChecked = nativeChecked
        self.manifestSha256 = manifestSha256
        self.touches = touches
        self.syntaxMicros = syntaxMicros
        self.evaluationMicros = evaluationMicros
    }

    public var errors: [CheckFinding] { findings.filter { $0.severity == .error } }
    public var warnings: [CheckFinding] { findings.filter { $0.severity == .warning } }

    public var outcome: Outcome {
        if !errors.isEmpty { return .failed }
        return warnings.isEmpty ? .passed : .warnings
    }

    /// "1 error, 2 warnings" / "passed".
    public var summary: String {
        let errors = errors.count, warnings = warnings.count
        guard errors + warnings > 0 else { return nativeChecked ? "passed" : "passed (native check skipped: no manifest)" }
        var parts: [String] = []
        if errors > 0 { parts.append("\(errors) error\(errors == 1 ? "" : "s")") }
        if warnings > 0 { parts.append("\(warnings) warning\(warnings == 1 ? "" : "s")") }
        return parts.joined(separator: ", ")
    }

    public var json: JSON {
        var object: [String: JSON] = [
            "outcome": .string(outcome.rawValue), "native": .string(nativeChecked ? "checked" : "skipped"),
            "errors": .int(Int64(errors.count)), "warnings": .int(Int64(warnings.count)),
            "findings": .array(findings.map(\.json)), "touches": .array(touches.map(JSON.string)),
        ]
        if let manifestSha256 { object["manifestSha256"] = .string(manifestSha256) }
        return .object(object)
    }

    public init?(json: JSON) {
        guard let findings = json["findings"]?.arrayValue, let native = json["native"]?.stringValue else { return nil }
        self.init(findings: findings.compactMap(CheckFinding.init(json:)), nativeChecked: native == "checked",
                  manifestSha256: json["manifestSha256"]?.stringValue, touches: json["touches"]?.arrayValue?.compactMap(\.stringValue) ?? [])
    }

    /// The findings as lines, errors first.
    public var lines: [String] { findings.map(\.line) }
}
