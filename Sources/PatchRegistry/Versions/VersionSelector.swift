import PatchCore

/// What `publish --app-version` names (issue 44): one exact version, a list, and ranges that
/// expand, at publish time, to the versions the registry knows of (`Registry.knownVersions`).
/// The grammar, comparison and expansion are docs/PROTOCOL.md "Version selectors"; parsing
/// and matching live only here, so patchctl (which checks the option before sending it) and
/// patchd (which expands it) cannot disagree.
///
///     selector    = alternative *( "," alternative )
///     alternative = version                      ; that exact string, looked up nowhere
///                 / 1*3( number "." ) "*"        ; a wildcard: 2.*, 2.3.*
///                 / comparison *( 1*SP comparison )   ; every one must hold
///     comparison  = ( ">=" / "<=" / ">" / "<" / "=" ) *SP release-version
///
/// A bare version stays the string it is: `2.3` and `2.3.0` are different versions, because
/// apps send what they send (`CFBundleShortVersionString` as it is). Ranges compare numbers,
/// where `2.3` and `2.3.0` are equal, so `=2.3` and `2.3.*` match both when both are known.
public struct VersionSelector: Sendable, Hashable, CustomStringConvertible {
    public enum Operator: String, Sendable, Hashable, CaseIterable {
        // Longest first: `>=` must not be read as `>` followed by "=2.3".
        case atLeast = ">=", atMost = "<=", above = ">", below = "<", equal = "="
    }

    public struct Comparison: Sendable, Hashable {
        public let op: Operator
        public let version: AppVersion

        public func holds(for candidate: AppVersion) -> Bool {
            let order = VersionSelector.numericOrder(candidate, version)
            switch op {
            case .atLeast: return order >= 0
            case .atMost: return order <= 0
            case .above: return order > 0
            case .below: return order < 0
            case .equal: return order == 0
            }
        }
    }

    public enum Alternative: Sendable, Hashable {
        case exact(AppVersion)
        /// The leading numeric components a version must have (missing ones count as 0).
        case wildcard([UInt32])
        case range([Comparison])

        var text: String {
            switch self {
            case .exact(let v): v.rawValue
            case .wildcard(let prefix): prefix.map(String.init).joined(separator: ".") + ".*"
            case .range(let comparisons): comparisons.map { $0.op.rawValue + $0.version.rawValue }.joined(separator: " ")
            }
        }
    }

    /// Bounds on what one option may hold: a selector is typed by a person, and a longer one
    /// is a mistake or an attempt to make the parser work.
    public static let maxLength = 1024
    public static let maxAlternatives = 64
    public static let maxComparisons = 8

    public let alternatives: [Alternative]

    public init(_ version: AppVersion) { alternatives = [.exact(version)] }

    public init(versions: [AppVersion]) {
        precondition(!versions.isEmpty, "a selector names at least one version")
        alternatives = versions.map { .exact($0) }
    }

    public init(_ text: String) throws(ValidationError) {
        func invalid(_ why: String) -> ValidationError {
            ValidationError("invalid app version selector \"\(text.debugSanitized)\": \(why); give a version (2.3), a list (2.3,2.3.1), a range ('>=2.3 <2.4') or a wildcard (2.3.*)")
        }
        guard text.utf8.count <= VersionSelector.maxLength else { throw invalid("longer than \(VersionSelector.maxLength) bytes") }
        let items = text.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingSpaces }
        guard items.count <= VersionSelector.maxAlternatives else { throw invalid("more than \(VersionSelector.maxAlternatives) items") }
        var alternatives: [Alternative] = []
        for item in items {
            guard !item.isEmpty else { throw invalid("an empty item") }
            alternatives.append(try VersionSelector.alternative(item, invalid))
        }
        self.alternatives = alternatives
    }

    private static func alternative(_ item: Substring, _ invalid: (String) -> ValidationError) throws(ValidationError) -> Alternative {
        if item.hasSuffix("*") {
            let prefix = item.dropLast()
            guard prefix.hasSuffix("."), prefix.count > 1 else {
                throw invalid(item == "*" ? "`*` alone would match every version (write '>=0' if that is meant)" : "a wildcard is numbers then .* (2.3.*)")
            }
            let parts = prefix.dropLast().split(separator: ".", omittingEmptySubsequences: false)
            guard (1...3).contains(parts.count), let version = try? AppVersion(String(prefix.dropLast())), version.prerelease.isEmpty else {
                throw invalid("\"\(item)\" is not 1 to 3 numbers followed by .*")
            }
            return .wildcard(version.numbers)
        }
        guard let first = item.first, "<>=".contains(first) else {
            guard !item.contains(" ") else { throw invalid("\"\(item)\" has a space; a range's comparisons each start with >=, <=, >, < or =") }
            do { return .exact(try AppVersion(String(item))) } catch { throw invalid(error.message) }
        }
        // Tokens split at spaces; an operator on its own takes the next token (">= 2.3").
        var tokens = item.split(separator: " ").map(String.init)[...]
        var comparisons: [Comparison] = []
        while let token = tokens.popFirst() {
            guard let op = Operator.allCases.first(where: { token.hasPrefix($0.rawValue) }) else {
                throw invalid("\"\(token)\" in a range does not start with >=, <=, >, < or =")
            }
            var operand = String(token.dropFirst(op.rawValue.count))
            if operand.isEmpty, let next = tokens.popFirst() { operand = next }
            guard let version = try? AppVersion(operand) else { throw invalid("\"\(operand)\" after \(op.rawValue) is not a version") }
            guard version.prerelease.isEmpty else {
                throw invalid("ranges compare release versions; name a pre-release version (\(version)) exactly instead")
            }
            comparisons.append(Comparison(op: op, version: version))
        }
        guard comparisons.count <= VersionSelector.maxComparisons else { throw invalid("more than \(VersionSelector.maxComparisons) comparisons in one range") }
        return .range(comparisons)
    }

    /// The text it was read from, normalized (spaces around commas and after operators removed):
    /// what travels and what messages show.
    public var description: String { alternatives.map(\.text).joined(separator: ",") }

    /// The one version of a selector that is one exact version: a publish as it always was
    /// (no expansion, no confirmation, the one-patch answer).
    public var single: AppVersion? {
        if alternatives.count == 1, case .exact(let version) = alternatives[0] { return version }
        return nil
    }

    /// Whether it needs the registry's versions to mean anything (a range or wildcard).
    public var expands: Bool {
        alternatives.contains { if case .exact = $0 { false } else { true } }
    }

    /// Whether a range or wildcard of it admits `version`. A pre-release (10.0.0-beta.2) is
    /// never in a range: a hotfix for 10.0.* is not meant for the beta's testers, who are named
    /// exactly when they are meant.
    public func matches(_ version: AppVersion) -> Bool {
        alternatives.contains { alternative in
            switch alternative {
            case .exact(let exact): return exact.rawValue == version.rawValue
            case .wildcard(let prefix):
                guard version.prerelease.isEmpty else { return false }
                return prefix.indices.allSatisfy { i in (i < version.numbers.count ? version.numbers[i] : 0) == prefix[i] }
            case .range(let comparisons):
                return version.prerelease.isEmpty && comparisons.allSatisfy { $0.holds(for: version) }
            }
        }
    }

    /// The versions it names: every exact one as given, and each of `known` a range or
    /// wildcard admits; each once, in version order.
    public func expand(known: [AppVersion]) -> [AppVersion] {
        var out: [String: AppVersion] = [:]
        for alternative in alternatives {
            if case .exact(let version) = alternative { out[version.rawValue] = version }
        }
        for version in known where out[version.rawValue] == nil && matches(version) { out[version.rawValue] = version }
        return out.values.sorted()
    }

    /// Numeric order of two versions' dot-separated numbers, missing components counting as 0
    /// (so 2.3 and 2.3.0 are equal): -1, 0 or 1.
    static func numericOrder(_ a: AppVersion, _ b: AppVersion) -> Int {
        for i in 0..<max(a.numbers.count, b.numbers.count) {
            let x = i < a.numbers.count ? a.numbers[i] : 0, y = i < b.numbers.count ? b.numbers[i] : 0
            if x != y { return x < y ? -1 : 1 }
        }
        return 0
    }
}

extension Substring {
    var trimmingSpaces: Substring {
        var s = self
        while s.first == " " { s.removeFirst() }
        while s.last == " " { s.removeLast() }
        return s
    }
}
