import Foundation

/// A JSON value restricted to what TUF metadata may hold: integers only, never floats,
/// because canonical JSON (OLPC / securesystemslib) refuses them and a signature over a
/// float would not be reproducible by another implementation.
public enum JSON: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case string(String)
    case array([JSON])
    case object([String: JSON])

    public subscript(key: String) -> JSON? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    public var intValue: Int64? {
        if case .int(let i) = self { return i }
        return nil
    }

    public var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    public var arrayValue: [JSON]? {
        if case .array(let a) = self { return a }
        return nil
    }

    public var objectValue: [String: JSON]? {
        if case .object(let o) = self { return o }
        return nil
    }
}

extension JSON: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSON...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSON)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
    public init(nilLiteral: ()) { self = .null }
}

public enum JSONError: Error, Equatable, CustomStringConvertible {
    case syntax(offset: Int, reason: String)
    case floatNotAllowed(offset: Int)
    case duplicateKey(String)
    case tooDeep
    case tooLarge(limit: Int)

    public var description: String {
        switch self {
        case .syntax(let offset, let reason): return "invalid JSON at byte \(offset): \(reason)"
        case .floatNotAllowed(let offset): return "invalid JSON at byte \(offset): numbers must be integers"
        case .duplicateKey(let key): return "invalid JSON: duplicate key \"\(key)\""
        case .tooDeep: return "invalid JSON: nested too deeply"
        case .tooLarge(let limit): return "invalid JSON: larger than \(limit) bytes"
        }
    }
}

extension JSON {
    /// A change's answer as a dry run gives it: the object (or each object of an array)
    /// with `"dryRun": true`; unchanged when `dryRun` is false. One rule for patchd's answers
    /// and patchctl's local ones.
    public func markedDryRun(_ dryRun: Bool) -> JSON {
        guard dryRun else { return self }
        func mark(_ value: JSON) -> JSON {
            guard var object = value.objectValue else { return value }
            object["dryRun"] = true
            return .object(object)
        }
        return arrayValue.map { .array($0.map(mark)) } ?? mark(self)
    }
}
