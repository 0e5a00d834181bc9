import Foundation
import PatchCore

/// What an app version's binary has, for the script check (docs/PROTOCOL.md, "Native
/// manifest"): its classes with their superclass, adopted protocols and instance and class
/// selectors, the protocols' selectors, and the names of every other class the runtime knows
/// (`knownClasses`: framework classes a script may `require`, listed without selectors), and
/// the names the app's JSPatch setup adds for scripts (`jsGlobals`).
/// PatchClientObjC's `HPNativeManifest` writes it on a device or simulator; `patchctl apps
/// manifest` stores it per app version.
public struct NativeManifest: Sendable, Equatable {
    public static let format = "hotpatch-native-manifest/1"
    /// Bounds on what one manifest may hold: a big app has tens of thousands of classes in its
    /// process (UIKit's among them), each with hundreds of selectors at most.
    public static let maxBytes = 32 << 20
    public static let maxClasses = 200_000
    public static let maxSelectorsPerClass = 50_000
    public static let maxNameLength = 1024

    public struct Class: Sendable, Equatable {
        public var superclass: String?
        public var protocols: [String]
        public var instanceMethods: Set<String>
        public var classMethods: Set<String>

        public init(superclass: String?, protocols: [String] = [], instanceMethods: Set<String> = [], classMethods: Set<String> = []) {
            self.superclass = superclass
            self.protocols = protocols
            self.instanceMethods = instanceMethods
            self.classMethods = classMethods
        }

        func methods(classSide: Bool) -> Set<String> { classSide ? classMethods : instanceMethods }
    }

    public struct ProtocolEntry: Sendable, Equatable {
        public var instanceMethods: Set<String>
        public var classMethods: Set<String>

        public init(instanceMethods: Set<String> = [], classMethods: Set<String> = []) {
            self.instanceMethods = instanceMethods
            self.classMethods = classMethods
        }

        func methods(classSide: Bool) -> Set<String> { classSide ? classMethods : instanceMethods }
    }

    public var appVersion: String?
    public var classes: [String: Class]
    public var protocols: [String: ProtocolEntry]
    public var knownClasses: Set<String>
    /// Names the app's JSPatch setup defines for scripts beyond JSPatch's own (an extension's
    /// `defineCFunction`, a helper the app adds to the context): a script may use them at top
    /// level without the check calling them undefined.
    public var jsGlobals: Set<String>

    public init(appVersion: String? = nil, classes: [String: Class], protocols: [String: ProtocolEntry] = [:], knownClasses: Set<String> = [],
                jsGlobals: Set<String> = []) {
        self.appVersion = appVersion
        self.classes = classes
        self.protocols = protocols
        self.knownClasses = knownClasses
        self.jsGlobals = jsGlobals
    }

    /// Reads and checks a manifest; every refusal says which entry and why.
    public init(bytes: [UInt8]) throws(ManifestError) {
        guard bytes.count <= Self.maxBytes else { throw .invalid("the manifest is \(bytes.count) bytes; the limit is \(Self.maxBytes)") }
        let json: JSON
        do { json = try JSONParser.parse(bytes) } catch { throw .invalid("the manifest is not JSON: \(error)") }
        guard let object = json.objectValue else { throw .invalid("the manifest is not a JSON object") }
        guard object["format"]?.stringValue == Self.format else {
            throw .invalid("the manifest's format is \(object["format"].map { "\($0)" } ?? "missing"); expected \"\(Self.format)\"")
        }
        if let version = object["appVersion"], version != .null {
            guard let text = version.stringValue else { throw .invalid("appVersion is not a string") }
            appVersion = text
        }
        guard let classList = object["classes"]?.objectValue else { throw .invalid("classes is missing or not an object") }
        guard classList.count <= Self.maxClasses else { throw .invalid("classes lists \(classList.count); the limit is \(Self.maxClasses)") }
        var classes: [String: Class] = [:]
        for (name, entry) in classList {
            try Self.checkName(name, "class")
            guard let fields = entry.objectValue else { throw .invalid("class \(name) is not an object") }
            var superclass: String?
            if let value = fields["superclass"], value != .null {
                guard let text = value.stringValue else { throw .invalid("class \(name): superclass is not a string") }
                try Self.checkName(text, "superclass of \(name)")
                superclass = text
            }
            classes[name] = Class(superclass: superclass, protocols: try Self.names(fields["protocols"], "class \(name): protocols"),
                                  instanceMethods: try Self.selectors(fields["instanceMethods"], "class \(name): instanceMethods"),
                                  classMethods: try Self.selectors(fields["classMethods"], "class \(name): classMethods"))
        }
        self.classes = classes
        var protocols: [String: ProtocolEntry] = [:]
        if let list = object["protocols"], list != .null {
            guard let entries = list.objectValue else { throw .invalid("protocols is not an object") }
            for (name, entry) in entries {
                try Self.checkName(name, "protocol")
                guard let fields = entry.objectValue else { throw .invalid("protocol \(name) is not an object") }
                protocols[name] = ProtocolEntry(instanceMethods: try Self.selectors(fields["instanceMethods"], "protocol \(name): instanceMethods"),
                                           classMethods: try Self.selectors(fields["classMethods"], "protocol \(name): classMethods"))
            }
        }
        self.protocols = protocols
        let known = try Self.names(object["knownClasses"], "knownClasses")
        guard known.count <= Self.maxClasses else { throw .invalid("knownClasses lists \(known.count); the limit is \(Self.maxClasses)") }
        knownClasses = Set(known)
        jsGlobals = Set(try Self.names(object["jsGlobals"], "jsGlobals"))
    }

    private static func checkName(_ name: String, _ what: String) throws(ManifestError) {
        // Objective-C names, Swift's mangled ones (`_TtC4Demo4Cart`) and module-qualified ones
        // (`Demo.Cart`): printable, no spaces.
        guard !name.isEmpty, name.utf8.count <= maxNameLength, name.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7f }) else {
            throw .invalid("\(what) \"\(name.prefix(80).debugDescription)\" is not a name (printable ASCII without spaces, at most \(maxNameLength) bytes)")
        }
    }

    private static func names(_ value: JSON?, _ what: String) throws(ManifestError) -> [String] {
        guard let value, value != .null else { return [] }
        guard let list = value.arrayValue else { throw .invalid("\(what) is not a list") }
        guard list.count <= maxClasses else { throw .invalid("\(what) lists \(list.count); the limit is \(maxClasses)") }
        var names: [String] = []
        for item in list {
            guard let name = item.stringValue else { throw .invalid("\(what) holds something that is not a string") }
            try checkName(name, "\(what) entry")
            names.append(name)
        }
        return names
    }

    private static func selectors(_ value: JSON?, _ what: String) throws(ManifestError) -> Set<String> {
        let list = try names(value, what)
        guard list.count <= maxSelectorsPerClass else { throw .invalid("\(what) lists \(list.count); the limit is \(maxSelectorsPerClass)") }
        return Set(list)
    }

    /// Whether the app's process has a class of this name.
    public func has(class name: String) -> Bool { classes[name] != nil || knownClasses.contains(name) }

    /// Every class name it lists, for did-you-mean.
    public var classNames: [String] { Array(Set(classes.keys).union(knownClasses)).sorted() }

    /// What the manifest says of `selector` on `name` and its superclasses.
    public enum Lookup: Equatable {
        /// Implemented by this class of the chain: an override.
        case implemented(by: String)
        /// Declared by a protocol a class of the chain adopts.
        case declared(byProtocol: String)
        /// Not in the chain, which the manifest lists to its root: JSPatch adds it.
        case missing
        /// Not in the part of the chain the manifest lists: the chain leaves it at `at`.
        case unconfirmed(at: String)
    }

    public func lookup(_ selector: String, classSide: Bool, in name: String, protocols extra: [String] = []) -> Lookup {
        var current: String? = name, seen: Set<String> = []
        var adopted = extra
        while let className = current, seen.insert(className).inserted {
            guard let entry = classes[className] else {
                if let found = protocolDeclaring(selector, classSide: classSide, among: adopted) { return .declared(byProtocol: found) }
                return .unconfirmed(at: className)
            }
            if entry.methods(classSide: classSide).contains(selector) { return .implemented(by: className) }
            adopted += entry.protocols
            current = entry.superclass
        }
        if let found = protocolDeclaring(selector, classSide: classSide, among: adopted) { return .declared(byProtocol: found) }
        return .missing
    }

    private func protocolDeclaring(_ selector: String, classSide: Bool, among names: [String]) -> String? {
        names.first { protocols[$0]?.methods(classSide: classSide).contains(selector) == true }
    }

    /// The selectors of one side of `name`'s chain and its protocols: what a typo is compared with.
    public func selectors(classSide: Bool, of name: String, protocols extra: [String] = []) -> Set<String> {
        var all: Set<String> = [], current: String? = name, seen: Set<String> = [], adopted = extra
        while let className = current, seen.insert(className).inserted, let entry = classes[className] {
            all.formUnion(entry.methods(classSide: classSide))
            adopted += entry.protocols
            current = entry.superclass
        }
        for protocolName in adopted { all.formUnion(protocols[protocolName]?.methods(classSide: classSide) ?? []) }
        return all
    }

    public var json: JSON {
        var object: [String: JSON] = ["format": .string(Self.format)]
        if let appVersion { object["appVersion"] = .string(appVersion) }
        object["classes"] = .object(classes.mapValues { entry in
            var fields: [String: JSON] = [
                "protocols": .array(entry.protocols.map(JSON.string)),
                "instanceMethods": .array(entry.instanceMethods.sorted().map(JSON.string)),
                "classMethods": .array(entry.classMethods.sorted().map(JSON.string)),
            ]
            fields["superclass"] = entry.superclass.map(JSON.string) ?? .null
            return .object(fields)
        })
        object["protocols"] = .object(protocols.mapValues {
            ["instanceMethods": .array($0.instanceMethods.sorted().map(JSON.string)), "classMethods": .array($0.classMethods.sorted().map(JSON.string))]
        })
        object["knownClasses"] = .array(knownClasses.sorted().map(JSON.string))
        object["jsGlobals"] = .array(jsGlobals.sorted().map(JSON.string))
        return .object(object)
    }
}

public enum ManifestError: Error, Equatable, CustomStringConvertible {
    case invalid(String)

    public var description: String {
        switch self {
        case .invalid(let why): return "not a native manifest: \(why)"
        }
    }
}
