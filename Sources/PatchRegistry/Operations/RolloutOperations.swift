import Foundation
import PatchCore

/// `rollout`: a patch's percentage (`Registry.setRollout`).
public struct RolloutOperation: ReleaseOperation, Equatable {
    public static let definition = OperationDefinition(
        kind: "rollout", routes: [.setRollout],
        parameters: [.appVersion, .pathPatch,
                     OperationParameter("percent", .body, .percent, required: true, "the new rollout percentage, 0 to 100")],
        audits: ["patch.rollout", "rollout.schedule.stop", "change.propose"], danger: .routine, metric: "rollout", bodyLimit: 4096)

    public var appVersion: AppVersion
    public var patch: Int
    public var percent: Int

    public init(appVersion: AppVersion, patch: Int, percent: Int) {
        self.appVersion = appVersion
        self.patch = patch
        self.percent = percent
    }

    public init(_ values: OperationValues) throws(RegistryError) {
        guard let patch = try values.patch("patch") else { throw .invalidCall("patch is required") }
        // A change stored before operations were values kept the percentage as `rollout`.
        let stored = try values.percent("rollout")
        guard let percent = try values.percent("percent") ?? stored else {
            throw .invalidCall("percent (the new rollout percentage, 0 to 100) is required")
        }
        self.init(appVersion: try values.appVersion(), patch: patch, percent: percent)
    }

    public var values: OperationValues { .encode(["appVersion": appVersion, "patch": patch, "percent": percent]) }

    public var summary: String { "set \(appVersion) patch \(patch) to \(percent) %" }

    public func execute(on registry: Registry, _ context: OperationContext) throws(RegistryError) -> JSON {
        let app = try context.requireApp()
        return try registry.setRollout(app: app, appVersion: appVersion, number: patch, percent: percent, expectLive: context.expectPatch,
                                dryRun: context.dryRun, actor: context.actor, now: context.now).json
    }
}

/// `halt`: a patch offered to no more devices; those that installed it keep it (`Registry.halt`).
public struct HaltOperation: ReleaseOperation, Equatable {
    public static let definition = OperationDefinition(
        kind: "halt", routes: [.haltPatch],
        parameters: [.appVersion, .pathPatch, OperationParameter("message", .query, .text, "why (one line): kept in the audit log")],
        audits: ["patch.halt", "rollout.schedule.stop", "change.propose"], danger: .stops, metric: "rollout")

    public var appVersion: AppVersion
    public var patch: Int
    public var message: String?

    public init(appVersion: AppVersion, patch: Int, message: String? = nil) {
        self.appVersion = appVersion
        self.patch = patch
        self.message = message
    }

    public init(_ values: OperationValues) throws(RegistryError) {
        guard let patch = try values.patch("patch") else { throw .invalidCall("patch is required") }
        self.init(appVersion: try values.appVersion(), patch: patch, message: values.text("message"))
    }

    public var values: OperationValues { .encode(["appVersion": appVersion, "patch": patch, "message": message]) }

    public var summary: String { "halt \(appVersion) patch \(patch)" }

    public func execute(on registry: Registry, _ context: OperationContext) throws(RegistryError) -> JSON {
        let app = try context.requireApp()
        return try registry.halt(app: app, appVersion: appVersion, number: patch, message: message, expectLive: context.expectPatch,
                          dryRun: context.dryRun, actor: context.actor, now: context.now).json
    }
}

/// `resume`: a halted patch offered again, where its halt found it unless a percentage is
/// given (`Registry.resume`).
public struct ResumeOperation: ReleaseOperation, Equatable {
    public static let definition = OperationDefinition(
        kind: "resume", routes: [.resumePatch],
        parameters: [.appVersion, .pathPatch, .rollout("percent of devices offered it, 1 to 100 (default: what it had when it was halted)")],
        audits: ["patch.resume", "change.propose"], danger: .routine, metric: "rollout")

    public var appVersion: AppVersion
    public var patch: Int
    public var percent: Int?

    public init(appVersion: AppVersion, patch: Int, percent: Int? = nil) {
        self.appVersion = appVersion
        self.patch = patch
        self.percent = percent
    }

    public init(_ values: OperationValues) throws(RegistryError) {
        guard let patch = try values.patch("patch") else { throw .invalidCall("patch is required") }
        let percent = try values.percent("rollout")
        if percent == 0 { throw .invalidCall("resume rolls out to 1 to 100 %, got 0 (0 % is a halt)") }
        self.init(appVersion: try values.appVersion(), patch: patch, percent: percent)
    }

    public var values: OperationValues { .encode(["appVersion": appVersion, "patch": patch, "rollout": percent]) }

    public var summary: String { "resume \(appVersion) patch \(patch)\(percent.map { " at \($0) %" } ?? "")" }

    public func execute(on registry: Registry, _ context: OperationContext) throws(RegistryError) -> JSON {
        let app = try context.requireApp()
        return try registry.resume(app: app, appVersion: appVersion, number: patch, percent: percent, expectLive: context.expectPatch,
                            dryRun: context.dryRun, actor: context.actor, now: context.now).json
    }
}
