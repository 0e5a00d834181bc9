import Foundation
import PatchCore

/// A command-line option as a command declares it; the same declaration parses and prints help.
/// One grammar for patchctl and patchd: `--name VALUE` or `--name=VALUE`, `--flag`, `--` ending
/// the options, and (patchd's) an environment variable that sets the option when the command
/// line does not.
public struct Option: Sendable {
    public let name: String
    public let value: String?
    public let help: String
    /// Older or other spellings that parse as `name` (shown in --help as "also …").
    public var aliases: [String] = []
    /// The parser refuses a command line without it, and the usage line shows it unbracketed.
    public var isRequired = false
    /// The environment variable that gives the value when the command line does not.
    public var environment: String?
    /// May be given more than once (`Arguments.all`); otherwise a second one, in any spelling,
    /// is a usage error: `--rollout 10 --rollout 100` is a typo or a pasted line, and taking
    /// either silently would ship a rollout nobody chose.
    public var isRepeatable = false

    /// `--name VALUE`
    public static func value(_ name: String, _ value: String, _ help: String) -> Option { Option(name: name, value: value, help: help) }
    /// `--name`
    public static func flag(_ name: String, _ help: String) -> Option { Option(name: name, value: nil, help: help) }

    /// The same option, required.
    public var required: Option { var copy = self; copy.isRequired = true; return copy }

    /// The same option, taken more than once (`--key a.pub --key b.pub`).
    public var repeatable: Option { var copy = self; copy.isRepeatable = true; return copy }

    /// The same option, also accepted as `names`.
    public func alias(_ names: String...) -> Option { var copy = self; copy.aliases += names; return copy }

    /// The same option, also set by the environment variable `variable`.
    public func environment(_ variable: String) -> Option { var copy = self; copy.environment = variable; return copy }

    public var spellings: [String] { [name] + aliases }

    /// `--name VALUE`, bracketed when optional.
    public var usage: String {
        let text = value.map { "\(name) \($0)" } ?? name
        return isRequired ? text : "[\(text)]"
    }
}

/// What a command accepts: its program and words (`patchctl apps create`, `patchd`), options
/// and positional arguments.
public struct CommandSpec: Sendable {
    public let program: String
    public let words: [String]
    public let summary: String
    public let positionals: [String]
    public let options: [Option]

    public init(_ words: String, program: String = "patchctl", summary: String, positionals: [String] = [], options: [Option] = []) {
        self.program = program
        self.words = words.split(separator: " ").map(String.init)
        self.summary = summary
        self.positionals = positionals
        self.options = options
    }

    /// `patchctl apps create`, `patchd`.
    public var invocation: String { ([program] + words).joined(separator: " ") }

    public var usage: String {
        var line = invocation
        // Required options first, so what must be typed reads left to right.
        for option in options.filter(\.isRequired) + options.filter({ !$0.isRequired }) { line += " " + option.usage }
        for positional in positionals { line += " \(positional)" }
        return line
    }

    public var help: String {
        var text = "\(summary)\n\nUsage: \(usage)\n"
        if !options.isEmpty {
            text += "\nOptions:\n"
            let width = options.map { $0.name.count + ($0.value.map { $0.count + 1 } ?? 0) }.max() ?? 0
            for option in options {
                let left = option.name + (option.value.map { " \($0)" } ?? "")
                let notes = (option.isRequired ? ["required"] : []) + (option.isRepeatable ? ["repeatable"] : []) + (option.aliases.isEmpty ? [] : ["also " + option.aliases.joined(separator: ", ")])
                    + (option.environment.map { ["or $\($0)"] } ?? [])
                text += "  " + left.padding(toLength: width + 2, withPad: " ", startingAt: 0) + option.help
                    + (notes.isEmpty ? "" : " (\(notes.joined(separator: "; ")))") + "\n"
            }
        }
        return text
    }
}

/// Parsed arguments of one command; accessors turn missing or malformed values into usage errors.
public struct Arguments: Sendable {
    public let spec: CommandSpec
    public private(set) var values: [String: String] = [:]
    /// Every value of a repeatable option, in the order given.
    public private(set) var repeated: [String: [String]] = [:]
    public private(set) var flags: Set<String> = []
    public private(set) var positionals: [String] = []

    /// `environment` gives the options that declare a variable their value when the command
    /// line does not (the command line wins).
    public init(spec: CommandSpec, parsing words: [String], environment: [String: String] = [:]) throws(CLIError) {
        self.spec = spec
        for option in spec.options {
            if let variable = option.environment, option.value != nil, let value = environment[variable] { values[option.name] = value }
        }
        var index = 0
        var onlyPositionals = false
        // How each option was first spelt on the command line, by its name, for the message
        // when it comes again. (An environment variable's value is not "given": the command
        // line overrides it once.)
        var givenAs: [String: String] = [:]
        while index < words.count {
            let word = words[index]
            index += 1
            if onlyPositionals || !word.hasPrefix("--") || word == "-" {
                positionals.append(word)
                continue
            }
            if word == "--" { onlyPositionals = true; continue }
            var name = word
            var inlineValue: String?
            if let equals = word.firstIndex(of: "=") {
                name = String(word[..<equals])
                inlineValue = String(word[word.index(after: equals)...])
            }
            guard let option = spec.options.first(where: { $0.spellings.contains(name) }) else {
                let hint = Suggestion.closest(to: name, among: spec.options.flatMap(\.spellings) + ["--help"]).map { "; did you mean \($0)?" } ?? ""
                throw .usage("unknown option \(name.debugSanitized) for `\(spec.invocation)`\(hint)")
            }
            let given = name
            name = option.name
            if option.value != nil {
                let value: String
                if let inlineValue {
                    value = inlineValue
                } else {
                    guard index < words.count else { throw .usage("\(given) needs a value (\(option.value ?? "VALUE"))") }
                    value = words[index]
                    index += 1
                }
                if !option.isRepeatable, let first = givenAs[name] { throw Arguments.repeated(option, first: first, then: given) }
                givenAs[name] = given
                values[name] = value
                if option.isRepeatable { repeated[name, default: []].append(value) }
            } else {
                guard inlineValue == nil else { throw .usage("\(given) takes no value") }
                // A flag twice changes nothing, but it is refused like any other repeat: one
                // rule for every option is one rule to remember.
                if !option.isRepeatable, let first = givenAs[name] { throw Arguments.repeated(option, first: first, then: given) }
                givenAs[name] = given
                flags.insert(name)
            }
        }
        guard positionals.count <= spec.positionals.count else {
            throw .usage("unexpected argument \(positionals[spec.positionals.count].debugSanitized)")
        }
        // A positional written "[NAME]" may be left out (only at the end).
        guard positionals.count >= spec.positionals.filter({ !$0.hasPrefix("[") }).count else {
            throw .usage("missing \(spec.positionals[positionals.count])")
        }
        for option in spec.options where option.isRequired {
            if option.value == nil ? !flags.contains(option.name) : (values[option.name] ?? "").isEmpty { throw .usage("\(option.name) is required") }
        }
    }

    /// A non-repeatable option given a second time. The values are not echoed: one of them may
    /// be a secret (`--token`) bound for a CI log.
    private static func repeated(_ option: Option, first: String, then: String) -> CLIError {
        let spellings = first == then ? "" : " (as \(first) and \(then))"
        return .usage("\(option.name) is given twice\(spellings): give it once\(option.value == nil ? "" : ", with the value you mean")")
    }

    public func flag(_ name: String) -> Bool { flags.contains(name) }
    public func positional(_ index: Int) -> String? { index < positionals.count ? positionals[index] : nil }
    public func value(_ name: String) -> String? { values[name] }
    /// Every value given for a repeatable option (one from the environment counts once).
    public func all(_ name: String) -> [String] { repeated[name] ?? values[name].map { [$0] } ?? [] }

    public func required(_ name: String) throws(CLIError) -> String {
        guard let value = values[name], !value.isEmpty else { throw .usage("\(name) is required") }
        return value
    }

    public func int(_ name: String, in range: ClosedRange<Int>) throws(CLIError) -> Int? {
        guard let text = values[name] else { return nil }
        guard let value = Int(text), range.contains(value) else {
            throw .usage("\(name) must be an integer from \(range.lowerBound) to \(range.upperBound), got \(text.debugSanitized)")
        }
        return value
    }

    /// A whole percentage as an operator types it, `25` or `25%`: one spelling wherever a
    /// percentage is taken (rollouts, staged steps, the guard's rate).
    public func percent(_ name: String) throws(CLIError) -> Int? {
        guard let text = values[name] else { return nil }
        guard let value = Arguments.wholePercent(text) else {
            throw .usage("\(name) must be a percentage from 0 to 100, like 25 or 25%, got \(text.debugSanitized)")
        }
        return value
    }

    /// `25` or `25%` → 25; nil for anything else, or outside 0…100.
    public static func wholePercent<S: StringProtocol>(_ text: S) -> Int? {
        let digits = text.hasSuffix("%") ? text.dropLast() : text[...]
        guard !digits.isEmpty, digits.count <= 3, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              let value = Int(digits), (0...100).contains(value) else { return nil }
        return value
    }
}

/// How a command failed; each maps to one exit code (see README: Exit codes).
public enum CLIError: Error, Sendable {
    /// Bad flags or arguments: exit 64 (EX_USAGE), with the usage line.
    case usage(String)
    /// Something was checked and does not verify: exit 1.
    case verificationFailed(String)
    /// Refused or could not run: exit 2.
    case failed(String)
    /// Accepted but not made yet: the change waits for more signatures (the two-person
    /// rule), exit 3, so `publish && …` does not go on as if it had shipped. `json` is the
    /// pending change as `--json` prints it.
    case pending(String, json: JSON)

    public var message: String {
        switch self {
        case .usage(let m), .verificationFailed(let m), .failed(let m), .pending(let m, _): return m
        }
    }

    public var exitCode: Int32 {
        switch self {
        case .usage: return 64
        case .verificationFailed: return 1
        case .failed: return 2
        case .pending: return 3
        }
    }
}
