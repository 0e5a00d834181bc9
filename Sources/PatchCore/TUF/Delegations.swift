import Foundation

/// A targets role's `delegations` (spec 4.5): the keys its delegated roles sign with, and
/// the roles in the order the targets search visits them (spec 5.6.7).
public struct Delegations: Sendable, Equatable {
    public var keys: [String: TUFKey]
    public var roles: [DelegatedRole]
    public var extra: [String: JSON]

    public init(keys: [String: TUFKey], roles: [DelegatedRole], extra: [String: JSON] = [:]) {
        self.keys = keys
        self.roles = roles
        self.extra = extra
    }

    /// Top-level role names cannot be delegated to: `{V}.snapshot.json` is not a targets role
    /// whatever a delegator says (python-tuf refuses them too).
    static let reservedNames: Set<String> = Set(Role.allCases.map(\.rawValue))

    init(json: JSON, role: String) throws(TUFError) {
        guard let object = json.objectValue else { throw .malformed(role: role, reason: "delegations must be an object") }
        if object["succinct_roles"] != nil {
            throw .malformed(role: role, reason: "succinct_roles (TAP 15) is not supported")
        }
        guard let keyObjects = object["keys"]?.objectValue else { throw .malformed(role: role, reason: "delegations.keys must be an object") }
        var keys: [String: TUFKey] = [:]
        for (keyID, keyJSON) in keyObjects {
            let key = try TUFKey(json: keyJSON, role: role)
            guard key.keyID == keyID else { throw .malformed(role: role, reason: "keyid \(keyID.debugSanitized) does not match its key") }
            keys[keyID] = key
        }
        guard let roleList = object["roles"]?.arrayValue else { throw .malformed(role: role, reason: "delegations.roles must be a list") }
        var roles: [DelegatedRole] = []
        var names = Set<String>()
        for entry in roleList {
            let delegated = try DelegatedRole(json: entry, delegator: role)
            guard names.insert(delegated.name).inserted else {
                throw .malformed(role: role, reason: "delegated role \(delegated.name.debugSanitized) is listed twice")
            }
            roles.append(delegated)
        }
        self.keys = keys
        self.roles = roles
        self.extra = object.filter { $0.key != "keys" && $0.key != "roles" }
    }

    var json: JSON {
        var out = extra
        out["keys"] = .object(keys.mapValues(\.json))
        out["roles"] = .array(roles.map(\.json))
        return .object(out)
    }

    /// The keys and threshold `name` must be signed with, as this delegator lists them.
    func verifier(for name: String) -> (keys: [TUFKey], threshold: Int)? {
        guard let role = roles.first(where: { $0.name == name }) else { return nil }
        return (role.keyIDs.compactMap { keys[$0] }, role.threshold)
    }
}

/// One entry of `delegations.roles`: who may sign the role, and which target paths it is
/// trusted for — by `paths` patterns or by `path_hash_prefixes`, exactly one of the two.
public struct DelegatedRole: Sendable, Equatable {
    public enum Scope: Sendable, Equatable {
        /// Patterns matched component by component, fnmatch-style (`*` stays within a component).
        case paths([String])
        /// Hex prefixes of the sha256 of the target path.
        case pathHashPrefixes([String])
    }

    public var name: String
    public var keyIDs: [String]
    public var threshold: Int
    public var scope: Scope
    /// A match here ends the search: no later sibling, nor anything after, is consulted.
    public var terminating: Bool
    public var extra: [String: JSON]

    public init(name: String, keyIDs: [String], threshold: Int = 1, scope: Scope, terminating: Bool = false, extra: [String: JSON] = [:]) {
        self.name = name
        self.keyIDs = keyIDs
        self.threshold = threshold
        self.scope = scope
        self.terminating = terminating
        self.extra = extra
    }

    static let modelled: Set<String> = ["name", "keyids", "threshold", "terminating", "paths", "path_hash_prefixes"]

    init(json: JSON, delegator: String) throws(TUFError) {
        guard let object = json.objectValue, let name = object["name"]?.stringValue, !name.isEmpty else {
            throw .malformed(role: delegator, reason: "each delegated role needs a non-empty name")
        }
        let what = "delegated role \(name.debugSanitized)"
        guard !Delegations.reservedNames.contains(name) else { throw .malformed(role: delegator, reason: "\(what) has a top-level role's name") }
        guard let list = object["keyids"]?.arrayValue, case let ids = list.compactMap(\.stringValue), ids.count == list.count,
            Set(ids).count == ids.count, let threshold = object["threshold"]?.intValue, threshold >= 1, threshold <= 1_000 else {
            throw .malformed(role: delegator, reason: "\(what) needs unique keyids and a threshold >= 1")
        }
        guard let terminating = object["terminating"]?.boolValue else { throw .malformed(role: delegator, reason: "\(what) needs a boolean terminating") }
        func strings(_ key: String) throws(TUFError) -> [String]? {
            guard let value = object[key] else { return nil }
            guard let list = value.arrayValue, case let items = list.compactMap(\.stringValue), items.count == list.count else {
                throw .malformed(role: delegator, reason: "\(what): \(key) must be a list of strings")
            }
            return items
        }
        switch (try strings("paths"), try strings("path_hash_prefixes")) {
        case (let paths?, nil): scope = .paths(paths)
        case (nil, let prefixes?): scope = .pathHashPrefixes(prefixes)
        default: throw .malformed(role: delegator, reason: "\(what) needs exactly one of paths and path_hash_prefixes")
        }
        self.name = name
        self.keyIDs = ids
        self.threshold = Int(threshold)
        self.terminating = terminating
        self.extra = object.filter { !Self.modelled.contains($0.key) }
    }

    var json: JSON {
        var out = extra
        out["name"] = .string(name)
        out["keyids"] = .array(keyIDs.map { .string($0) })
        out["threshold"] = .int(Int64(threshold))
        out["terminating"] = .bool(terminating)
        switch scope {
        case .paths(let paths): out["paths"] = .array(paths.map { .string($0) })
        case .pathHashPrefixes(let prefixes): out["path_hash_prefixes"] = .array(prefixes.map { .string($0) })
        }
        return .object(out)
    }

    /// Whether this role is trusted for `path` (python-tuf's `is_delegated_path`).
    public func isDelegated(_ path: String) -> Bool {
        switch scope {
        case .paths(let patterns):
            return patterns.contains { PathPattern.matches(path, pattern: $0) }
        case .pathHashPrefixes(let prefixes):
            let hash = Digest.sha256Hex(Array(path.utf8))
            return prefixes.contains { hash.hasPrefix($0) }
        }
    }
}

/// `paths` patterns: the path and the pattern must have as many `/`-separated components,
/// and each component matches as Python's `fnmatch.fnmatchcase` would (`*`, `?`, `[seq]`,
/// `[!seq]`), so `*` never crosses a `/`. Compared as Unicode scalars, case-sensitively.
enum PathPattern {
    static func matches(_ path: String, pattern: String) -> Bool {
        let names = path.split(separator: "/", omittingEmptySubsequences: false)
        let patterns = pattern.split(separator: "/", omittingEmptySubsequences: false)
        guard names.count == patterns.count else { return false }
        return zip(names, patterns).allSatisfy { component(Array($0.unicodeScalars), Array($1.unicodeScalars)) }
    }

    /// Glob matching of one component, with backtracking over the last `*` only (linear-ish,
    /// never exponential, whatever the pattern).
    static func component(_ name: [Unicode.Scalar], _ pattern: [Unicode.Scalar]) -> Bool {
        var n = 0, p = 0
        var star: (p: Int, n: Int)?
        while n < name.count {
            if p < pattern.count {
                switch pattern[p] {
                case "*":
                    star = (p + 1, n)
                    p += 1
                    continue
                case "?":
                    p += 1; n += 1
                    continue
                case "[":
                    if let (matched, next) = bracket(pattern, at: p, name[n]) {
                        if matched { p = next; n += 1; continue }
                    } else if name[n] == "[" {
                        p += 1; n += 1
                        continue
                    }
                default:
                    if pattern[p] == name[n] { p += 1; n += 1; continue }
                }
            }
            guard let last = star else { return false }
            star = (last.p, last.n + 1)
            p = last.p
            n = last.n + 1
        }
        while p < pattern.count, pattern[p] == "*" { p += 1 }
        return p == pattern.count
    }

    /// A `[...]` set starting at `start`: whether `scalar` is in it and the index after it;
    /// nil when there is no closing `]`, so the `[` is literal (as fnmatch translates it).
    private static func bracket(_ pattern: [Unicode.Scalar], at start: Int, _ scalar: Unicode.Scalar) -> (Bool, Int)? {
        var i = start + 1
        var negate = false
        if i < pattern.count, pattern[i] == "!" { negate = true; i += 1 }
        var matched = false
        var first = true
        while i < pattern.count {
            let c = pattern[i]
            if c == "]", !first { return (matched != negate, i + 1) }
            first = false
            if i + 2 < pattern.count, pattern[i + 1] == "-", pattern[i + 2] != "]" {
                if c.value <= scalar.value && scalar.value <= pattern[i + 2].value { matched = true }
                i += 3
            } else {
                if c == scalar { matched = true }
                i += 1
            }
        }
        return nil
    }
}
