/// Who may get a patch beyond its rollout: an allow-list of test devices and an OS version
/// range, signed in the target's `custom.conditions` (docs/PROTOCOL.md section 5). The one
/// place the rule is written; PatchClient and the simple check both call `admits`.
///
/// Device IDs are never stored or signed raw: the list holds sha256(salt ‖ UTF-8 device ID)
/// with a random 16-byte salt per patch, so targets metadata (public to anyone who can fetch
/// it) does not publish the IDs of a team's test phones, and one patch's hashes say nothing
/// about another's.
///
/// Reading is strict: a member this code does not know, or a malformed one, makes the whole
/// entry "not a hotpatch patch" and no device installs it. A condition a reader ignored would
/// widen delivery, so an unknown condition must fail closed.
public struct DeliveryConditions: Sendable, Equatable {
    public struct Devices: Sendable, Equatable {
        /// 32 lowercase hex digits (16 bytes).
        public let salt: String
        /// sha256(salt ‖ device ID) in lowercase hex, sorted, without duplicates.
        public let hashes: [String]

        /// Hashes `deviceIDs` under `salt` (PatchSigning's `hashing(_:)` draws a fresh one;
        /// tests and vectors give their own).
        public static func hashing(_ deviceIDs: [String], salt: [UInt8]) throws(ValidationError) -> Devices {
            guard salt.count == 16 else { throw ValidationError("the device-list salt must be 16 bytes") }
            let ids = Set(deviceIDs)
            guard !ids.isEmpty else { throw ValidationError("the device list is empty") }
            guard ids.count <= DeliveryConditions.maxDevices else {
                throw ValidationError("the device list names \(ids.count) devices; the limit is \(DeliveryConditions.maxDevices) (every device downloads the list in targets metadata)")
            }
            for id in ids where !DeliveryConditions.isDeviceID(id) {
                throw ValidationError("invalid device ID \"\(id.debugSanitized)\": 1 to 256 bytes without control characters, as X-Device-ID carries it")
            }
            return Devices(salt: Hex.encode(salt), hashes: ids.map { hash(deviceID: $0, salt: salt) }.sorted())
        }

        public static func hash(deviceID: String, salt: [UInt8]) -> String { Digest.sha256Hex(salt + Array(deviceID.utf8)) }

        public func contains(_ deviceID: String) -> Bool {
            guard let salt = Hex.decode(salt) else { return false }
            let hash = Devices.hash(deviceID: deviceID, salt: salt)
            return hashes.contains(hash)
        }

        init(salt: String, hashes: [String]) {
            self.salt = salt
            self.hashes = hashes
        }
    }

    /// An inclusive range of OS versions; either end may be open. `max` includes every
    /// version it is a prefix of: a max of `17.4` admits `17.4.1`, a max of `17` every 17.x.
    public struct OSRange: Sendable, Equatable {
        public let min: OSVersion?
        public let max: OSVersion?

        public init(min: OSVersion?, max: OSVersion?) throws(ValidationError) {
            guard min != nil || max != nil else { throw ValidationError("an OS range needs a minimum, a maximum or both") }
            if let min, let max, !max.admitsAtMost(min) { throw ValidationError("the OS minimum \(min) is above the maximum \(max)") }
            self.min = min
            self.max = max
        }

        public func contains(_ version: OSVersion) -> Bool {
            if let min, version < min { return false }
            if let max, !max.admitsAtMost(version) { return false }
            return true
        }

        /// "15.0–17.4", "≥ 15.0", "≤ 17.4".
        public var text: String {
            switch (min, max) {
            case let (min?, max?): return "\(min)–\(max)"
            case let (min?, nil): return "≥ \(min)"
            case let (nil, max?): return "≤ \(max)"
            case (nil, nil): return "any"
            }
        }
    }

    /// Bounds the list every device downloads with targets metadata (~67 bytes a device).
    public static let maxDevices = 100

    public let devices: Devices?
    public let os: OSRange?

    public init(devices: Devices?, os: OSRange?) throws(ValidationError) {
        guard devices != nil || os != nil else { throw ValidationError("delivery conditions need a device list, an OS range or both") }
        self.devices = devices
        self.os = os
    }

    /// Whether a device may get the patch. A device that does not say who it is or which OS
    /// it runs is not admitted by a condition on that: conditions only ever narrow delivery.
    public func admits(deviceID: String?, osVersion: String?) -> Bool {
        if let devices {
            guard let deviceID, devices.contains(deviceID) else { return false }
        }
        if let os {
            guard let raw = osVersion, let version = try? OSVersion(raw), os.contains(version) else { return false }
        }
        return true
    }

    /// The signed form: `{"devices": {"salt": hex, "sha256": [hex…]}, "os": {"min": v, "max": v}}`.
    public var json: JSON {
        var out: [String: JSON] = [:]
        if let devices { out["devices"] = ["salt": .string(devices.salt), "sha256": .array(devices.hashes.map { .string($0) })] }
        if let os {
            var range: [String: JSON] = [:]
            if let min = os.min { range["min"] = .string(min.rawValue) }
            if let max = os.max { range["max"] = .string(max.rawValue) }
            out["os"] = .object(range)
        }
        return .object(out)
    }

    /// Reads the signed form; nil for anything but exactly that shape.
    public init?(_ json: JSON) {
        guard let object = json.objectValue, !object.isEmpty, Set(object.keys).isSubset(of: ["devices", "os"]) else { return nil }
        var devices: Devices?
        if let list = object["devices"] {
            guard let members = list.objectValue, Set(members.keys) == ["salt", "sha256"],
                let salt = members["salt"]?.stringValue, Hex.isLowercase(salt, byteCount: 16),
                let values = members["sha256"]?.arrayValue, !values.isEmpty, values.count <= DeliveryConditions.maxDevices else { return nil }
            let hashes = values.compactMap(\.stringValue)
            guard hashes.count == values.count, hashes.allSatisfy({ Hex.isLowercase($0, byteCount: 32) }),
                hashes == Array(Set(hashes)).sorted() else { return nil }
            devices = Devices(salt: salt, hashes: hashes)
        }
        var os: OSRange?
        if let range = object["os"] {
            guard let members = range.objectValue, !members.isEmpty, Set(members.keys).isSubset(of: ["min", "max"]) else { return nil }
            func version(_ key: String) -> OSVersion?? {
                guard let value = members[key] else { return .some(nil) }
                guard let raw = value.stringValue, let parsed = try? OSVersion(raw) else { return nil }
                return .some(parsed)
            }
            guard let min = version("min"), let max = version("max"), let parsed = try? OSRange(min: min, max: max) else { return nil }
            os = parsed
        }
        guard let parsed = try? DeliveryConditions(devices: devices, os: os) else { return nil }
        self = parsed
    }

    /// "3 listed devices, OS 15.0–17.4": what listings show (never the hashes).
    public var summary: String { Self.summary(listing: listing) }

    /// What listings carry instead of the hashes: `{"devices": N, "os": {...}}`.
    public var listing: JSON {
        var out = json.objectValue ?? [:]
        if let devices { out["devices"] = .int(Int64(devices.hashes.count)) }
        return .object(out)
    }

    /// `summary` from the `listing` form (what a server's patch listing carries).
    public static func summary(listing: JSON) -> String {
        var parts: [String] = []
        if let count = listing["devices"]?.intValue { parts.append("\(count) listed device\(count == 1 ? "" : "s")") }
        let version = { (key: String) in listing["os"]?[key]?.stringValue.flatMap { try? OSVersion($0) } }
        if let range = try? OSRange(min: version("min"), max: version("max")) { parts.append("OS \(range.text)") }
        return parts.joined(separator: ", ")
    }

    /// The device-ID rule of the check path (docs/PROTOCOL.md section 11): 1 to 256 bytes, no
    /// control characters.
    static func isDeviceID(_ id: String) -> Bool {
        let bytes = id.utf8
        return !bytes.isEmpty && bytes.count <= 256 && !id.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }
}

/// An OS version as devices report it (`UIDevice.systemVersion`, "17.4.1"): 1 to 4 decimal
/// components of at most 6 digits. Compared numerically with missing components as 0, so
/// "17" and "17.0" are the same version.
public struct OSVersion: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let rawValue: String
    public let components: [Int]

    public init(_ value: String) throws(ValidationError) {
        let parts = value.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...4).contains(parts.count),
            parts.allSatisfy({ (1...6).contains($0.utf8.count) && $0.utf8.allSatisfy { (0x30...0x39).contains($0) } }) else {
            throw ValidationError("invalid OS version \"\(value.debugSanitized)\": use 1 to 4 numbers separated by dots, e.g. 17.4")
        }
        rawValue = value
        components = parts.map { Int($0)! }
    }

    public var description: String { rawValue }

    private func padded(_ count: Int) -> [Int] { components + Array(repeating: 0, count: Swift.max(0, count - components.count)) }

    public static func < (a: OSVersion, b: OSVersion) -> Bool {
        let count = Swift.max(a.components.count, b.components.count)
        return a.padded(count).lexicographicallyPrecedes(b.padded(count))
    }

    public static func == (a: OSVersion, b: OSVersion) -> Bool { !(a < b) && !(b < a) }
    public func hash(into hasher: inout Hasher) { hasher.combine(Array(components.reversed().drop { $0 == 0 }.reversed())) }

    /// Whether `version` is at most this one read as a maximum: compared on this version's
    /// components only, so a maximum of 17.4 admits 17.4.1.
    func admitsAtMost(_ version: OSVersion) -> Bool {
        let count = components.count
        let head = Array(version.padded(count).prefix(count))
        return !components.lexicographicallyPrecedes(head)
    }
}
