#if canImport(ObjectiveC) && canImport(UIKit)
// The Apple-side writer of the native manifest (issue 45; docs/PROTOCOL.md section 13, "Native
// manifest"): what the app's own binary has, read through the Objective-C runtime, for
// `patchctl apps manifest` to store and every publish to be checked against. Run it from a
// debug build or a build phase (a test target that launches the app), never in a release: it
// walks every class the process has.
//
// Apple platforms only (the Objective-C runtime): never compiled on the Linux machines this is
// built on, and not in the apple-shaped build either, whose stand-ins are UIKit's and
// Foundation's, not the runtime's (README, "iOS"; docs/IOS.md).
import Foundation
import ObjectiveC

@objc(HPNativeManifest)
public final class HPNativeManifest: NSObject {
    public static let format = "hotpatch-native-manifest/1"

    /// The manifest of the image `anchor` lives in (pass the app delegate's class: the app's
    /// own executable), as JSON: each of its classes with superclass, adopted protocols and
    /// selectors; every class of their superclass chains the same way (UIKit's
    /// `UIViewController`…), so a lookup reaches the root; the protocols any of them adopt;
    /// every other class the process has by name; and `jsGlobals`, the names the app's JSPatch
    /// setup adds to a script's context (an extension's functions).
    @objc(manifestForAppVersion:anchor:jsGlobals:error:)
    public static func manifest(appVersion: String?, anchor: AnyClass, jsGlobals: [String] = []) throws -> Data {
        var classes: [String: Any] = [:]
        var protocols: [String: Any] = [:]
        var pending: [AnyClass] = []
        if let image = class_getImageName(anchor) {
            var count: UInt32 = 0
            if let names = objc_copyClassNamesForImage(image, &count) {
                defer { free(names) }
                for index in 0..<Int(count) {
                    if let cls = objc_getClass(names[index]) as? AnyClass { pending.append(cls) }
                }
            }
        }
        // The app's classes, then their superclasses, each once.
        while let cls = pending.popLast() {
            let name = NSStringFromClass(cls)
            guard classes[name] == nil else { continue }
            let adopted = protocolNames(of: cls)
            for protocolName in adopted where protocols[protocolName] == nil {
                if let found = NSProtocolFromString(protocolName) { protocols[protocolName] = describe(found) }
            }
            let superclass: AnyClass? = class_getSuperclass(cls)
            classes[name] = [
                "superclass": superclass.map { NSStringFromClass($0) } ?? NSNull(),
                "protocols": adopted,
                "instanceMethods": selectors(of: cls),
                // A class's class methods are its metaclass's instance methods.
                "classMethods": object_getClass(cls).map(selectors(of:)) ?? [],
            ] as [String: Any]
            if let superclass { pending.append(superclass) }
        }
        let known = allClassNames().filter { classes[$0] == nil }
        var manifest: [String: Any] = [
            "format": format, "classes": classes, "protocols": protocols, "knownClasses": known.sorted(), "jsGlobals": jsGlobals.sorted(),
        ]
        if let appVersion { manifest["appVersion"] = appVersion }
        return try JSONSerialization.data(withJSONObject: manifest, options: [.sortedKeys])
    }

    /// Writes `manifest(appVersion:anchor:jsGlobals:)` to `url` (for a build phase to pick up).
    @objc(writeManifestToURL:appVersion:anchor:jsGlobals:error:)
    public static func write(to url: URL, appVersion: String?, anchor: AnyClass, jsGlobals: [String] = []) throws {
        try manifest(appVersion: appVersion, anchor: anchor, jsGlobals: jsGlobals).write(to: url, options: .atomic)
    }

    /// The selectors `cls` itself implements (not its superclasses'), sorted.
    private static func selectors(of cls: AnyClass) -> [String] {
        var count: UInt32 = 0
        guard let methods = class_copyMethodList(cls, &count) else { return [] }
        defer { free(methods) }
        return (0..<Int(count)).map { NSStringFromSelector(method_getName(methods[$0])) }.sorted()
    }

    private static func protocolNames(of cls: AnyClass) -> [String] {
        var count: UInt32 = 0
        guard let list = class_copyProtocolList(cls, &count) else { return [] }
        defer { free(UnsafeMutableRawPointer(list)) }
        return (0..<Int(count)).map { String(cString: protocol_getName(list[$0])) }.sorted()
    }

    /// A protocol's selectors, required and optional, instance and class side.
    private static func describe(_ proto: Protocol) -> [String: [String]] {
        func methods(instance: Bool) -> [String] {
            var names: [String] = []
            for required in [true, false] {
                var count: UInt32 = 0
                guard let list = protocol_copyMethodDescriptionList(proto, required, instance, &count) else { continue }
                defer { free(list) }
                names += (0..<Int(count)).compactMap { list[$0].name.map(NSStringFromSelector) }
            }
            return Array(Set(names)).sorted()
        }
        return ["instanceMethods": methods(instance: true), "classMethods": methods(instance: false)]
    }

    /// Every class the runtime has registered: what `require` may name.
    private static func allClassNames() -> [String] {
        var count: UInt32 = 0
        guard let list = objc_copyClassList(&count) else { return [] }
        defer { free(UnsafeMutableRawPointer(list)) }
        return (0..<Int(count)).map { NSStringFromClass(list[$0]) }
    }
}
#endif
