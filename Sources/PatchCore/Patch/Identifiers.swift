/// An app name: `[a-z0-9][a-z0-9._-]{0,63}`. It is a path component on disk and in URLs,
/// so the first character can never be a dot and nothing else is allowed.
public struct AppName: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let rawValue: String

    public init(_ value: String) throws(ValidationError) {
        guard isName(value) else {
            throw ValidationError("invalid app name \"\(value.debugSanitized)\": use 1-64 characters of a-z, 0-9, '.', '_', '-', starting with a letter or digit")
        }
        rawValue = value
    }

    public var description: String { rawValue }
    public static func < (lhs: AppName, rhs: AppName) -> Bool { Array(lhs.rawValue.utf8).lexicographicallyPrecedes(Array(rhs.rawValue.utf8)) }
}

/// A release channel (`production`, `staging`, `qa`…): the same grammar as app names, for
/// the same reason: it is a path component of target paths on disk and in URLs.
public struct ChannelName: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let rawValue: String

    /// The channel of every patch published without one, and of every patch a registry held
    /// before channels existed.
    public static let production = ChannelName(unchecked: "production")

    public init(_ value: String) throws(ValidationError) {
        guard isName(value) else {
            throw ValidationError("invalid channel name \"\(value.debugSanitized)\": use 1-64 characters of a-z, 0-9, '.', '_', '-', starting with a letter or digit")
        }
        rawValue = value
    }

    private init(unchecked value: String) { rawValue = value }

    public var description: String { rawValue }
    public static func < (lhs: ChannelName, rhs: ChannelName) -> Bool { Array(lhs.rawValue.utf8).lexicographicallyPrecedes(Array(rhs.rawValue.utf8)) }
}

/// `[a-z0-9][a-z0-9._-]{0,63}`: app and channel names.
private func isName(_ value: String) -> Bool {
    let bytes = Array(value.utf8)
    func allowedFirst(_ b: UInt8) -> Bool { (0x61...0x7A).contains(b) || (0x30...0x39).contains(b) }
    func allowed(_ b: UInt8) -> Bool { allowedFirst(b) || b == UInt8(ascii: ".") || b == UInt8(ascii: "_") || b == UInt8(ascii: "-") }
    guard let first = bytes.first, allowedFirst(first), bytes.count <= 64 else { return false }
    return bytes.allSatisfy(allowed)
}

/// An app version as apps report it (`CFBundleShortVersionString`): 1 to 4 numeric
/// components without leading zeros, optionally a pre-release suffix (`10.0.0-beta.2`).
/// Leading zeros are refused so `2.03` and `2.3` can never name two registries entries
/// of what a person reads as one version.
public struct AppVersion: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let rawValue: String
    public let numbers: [UInt32]
    public let prerelease: [String]

    public init(_ value: String) throws(ValidationError) {
        // Made only when thrown: sanitizing the text for the message cost more than the
        // whole check (a report's 100 events each name a version, parsed on an I/O thread).
        var invalid: ValidationError {
            ValidationError("invalid app version \"\(value.debugSanitized)\": expected numbers separated by dots with an optional pre-release suffix, like 2.3, 2.3.1 or 10.0.0-beta.2")
        }
        guard !value.isEmpty, value.utf8.count <= 64 else { throw invalid }
        let parts = value.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        let core = parts[0].split(separator: ".", omittingEmptySubsequences: false)
        guard (1...4).contains(core.count) else { throw invalid }
        var numbers: [UInt32] = []
        for component in core {
            guard !component.isEmpty, component.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
                component == "0" || component.first != "0", component.count <= 9, let number = UInt32(component) else {
                throw invalid
            }
            numbers.append(number)
        }
        var prerelease: [String] = []
        if parts.count == 2 {
            let identifiers = parts[1].split(separator: ".", omittingEmptySubsequences: false)
            for identifier in identifiers {
                guard !identifier.isEmpty, identifier.utf8.allSatisfy({
                    (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || $0 == UInt8(ascii: "-")
                }) else { throw invalid }
                prerelease.append(String(identifier))
            }
        }
        self.rawValue = value
        self.numbers = numbers
        self.prerelease = prerelease
    }

    public var description: String { rawValue }

    /// Semantic-version precedence: numbers first (missing components count as 0), then
    /// a pre-release sorts before the release; ties fall back to the text so the order is total.
    public static func < (lhs: AppVersion, rhs: AppVersion) -> Bool {
        let width = max(lhs.numbers.count, rhs.numbers.count)
        for i in 0..<width {
            let a = i < lhs.numbers.count ? lhs.numbers[i] : 0
            let b = i < rhs.numbers.count ? rhs.numbers[i] : 0
            if a != b { return a < b }
        }
        if lhs.prerelease.isEmpty != rhs.prerelease.isEmpty { return !lhs.prerelease.isEmpty }
        for (a, b) in zip(lhs.prerelease, rhs.prerelease) where a != b {
            switch (UInt64(a), UInt64(b)) {
            // "07" and "7" are the same number: not decided here, or neither would sort first.
            case let (x?, y?): if x != y { return x < y }
            case (_?, nil): return true
            case (nil, _?): return false
            case (nil, nil): return Array(a.utf8).lexicographicallyPrecedes(Array(b.utf8))
            }
        }
        if lhs.prerelease.count != rhs.prerelease.count { return lhs.prerelease.count < rhs.prerelease.count }
        return Array(lhs.rawValue.utf8).lexicographicallyPrecedes(Array(rhs.rawValue.utf8))
    }
}
