import Foundation
import PatchCheck
import PatchCore

/// `apps manifest --app-version V FILE`: an app version's native manifest, for the script check
/// of every publish to it (`Registry.setManifest`; docs/PROTOCOL.md, "Native manifest").
public struct ManifestOperation: ReleaseOperation, Equatable {
    public static let definition = OperationDefinition(
        kind: "manifest", routes: [.setManifest],
        parameters: [
            .appVersion,
            OperationParameter("manifest", .content, .bytes, required: true,
                               "the native manifest (hotpatch-native-manifest/1 JSON), at most NativeManifest.maxBytes bytes"),
        ],
        audits: ["app.manifest"], danger: .routine, dryRun: false, expectPatch: false, metric: "publish", bodyLimit: NativeManifest.maxBytes)

    public var appVersion: AppVersion
    public var manifest: [UInt8]

    public init(appVersion: AppVersion, manifest: [UInt8]) {
        self.appVersion = appVersion
        self.manifest = manifest
    }

    public init(_ values: OperationValues) throws(RegistryError) {
        guard let manifest = values.bundle else { throw .invalidCall("the manifest (the request body) is required") }
        self.init(appVersion: try values.appVersion(), manifest: manifest)
    }

    public var values: OperationValues { .encode(["appVersion": appVersion], bundle: manifest) }

    public var summary: String { "store the native manifest of \(appVersion) (\(manifest.count) bytes)" }

    /// What was stored: its sha256, what it lists, and the sha256 it replaced.
    public func execute(on registry: Registry, _ context: OperationContext) throws(RegistryError) -> JSON {
        try registry.setManifest(app: try context.requireApp(), appVersion: appVersion, bytes: manifest, actor: context.actor, now: context.now)
    }
}

/// `check [--app-version V] [FILE]`: the script check alone, against the version's manifest
/// when it names one (`Registry.checkScript`). Changes nothing; the answer is the report.
public struct CheckScriptOperation: ReleaseOperation, Equatable {
    public static let definition = OperationDefinition(
        kind: "check", routes: [.checkScript],
        parameters: [
            OperationParameter("appVersion", .query, .appVersion, "the app version whose native manifest to check against (left out: syntax and evaluation only)"),
            OperationParameter("script", .content, .bytes, required: true, "the script: UTF-8 JavaScript, at most Registry.maxBundleSize bytes"),
        ],
        audits: [], danger: .routine, dryRun: false, expectPatch: false, metric: "publish", bodyLimit: Registry.maxBundleSize, checksScript: true)

    public var appVersion: AppVersion?
    public var script: [UInt8]

    public init(appVersion: AppVersion?, script: [UInt8]) {
        self.appVersion = appVersion
        self.script = script
    }

    public init(_ values: OperationValues) throws(RegistryError) {
        guard let script = values.bundle else { throw .invalidCall("the script (the request body) is required") }
        self.init(appVersion: values["appVersion"] == nil ? nil : try values.appVersion(), script: script)
    }

    public var values: OperationValues { .encode(["appVersion": appVersion], bundle: script) }

    public var summary: String { "check a \(script.count)-byte script\(appVersion.map { " against \($0)'s manifest" } ?? "")" }

    public func scriptToCheck(in registry: Registry, app: AppName) throws(RegistryError) -> [UInt8]? { script }

    public func execute(on registry: Registry, _ context: OperationContext) throws(RegistryError) -> JSON {
        let app = try context.requireApp()
        var report = try registry.checkScript(script, app: app, appVersion: appVersion).json.objectValue ?? [:]
        report["app"] = .string(app.rawValue)
        if let appVersion { report["appVersion"] = .string(appVersion.rawValue) }
        return .object(report)
    }
}

extension OperationParameter {
    /// `--skip-check REASON` of every release that publishes a script.
    static let skipCheck = OperationParameter("skipCheck", .query, .text,
                                              "publish even though the script check finds errors or cannot run; the reason (one line) is audited with the findings")
}
