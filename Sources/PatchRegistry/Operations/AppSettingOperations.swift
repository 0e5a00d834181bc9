import Foundation
import PatchCore

/// `apps guard APP --max-rollback-rate …`: the rule by which patchd halts (or revokes) a patch
/// of a channel whose devices roll it back too often (`Registry.setGuard`).
public struct GuardOperation: ReleaseOperation, Equatable {
    public static let definition = OperationDefinition(
        kind: "guard", routes: [.setGuard],
        parameters: [
            OperationParameter("channel", .body, .channel, "the channel the guard watches (default production)"),
            OperationParameter("maxRollbackRatePpm", .body, .integer, required: true, "the rollback rate it acts above, in parts per million (2 % = 20000)"),
            OperationParameter("minDevices", .body, .integer, required: true, "installed devices needed before it decides"),
            OperationParameter("action", .body, .text, "halt (the default) or revoke"),
        ],
        audits: ["guard.set"], danger: .routine, dryRun: false, expectPatch: false, metric: "guard", bodyLimit: 4096)

    public var channel: ChannelName
    public var maxRollbackPPM: Int
    public var minDevices: Int
    public var action: GuardAction

    public init(channel: ChannelName = .production, maxRollbackPPM: Int, minDevices: Int, action: GuardAction = .halt) {
        self.channel = channel
        self.maxRollbackPPM = maxRollbackPPM
        self.minDevices = minDevices
        self.action = action
    }

    public init(_ values: OperationValues) throws(RegistryError) {
        guard let ppm = try values.integer("maxRollbackRatePpm", in: 1...1_000_000), let minDevices = try values.integer("minDevices", in: 1...100_000_000) else {
            throw .invalidCall("maxRollbackRatePpm (2 % = 20000) and minDevices are required")
        }
        let raw = values.text("action") ?? GuardAction.halt.rawValue
        guard let action = GuardAction(rawValue: raw) else { throw .invalidCall("action must be halt or revoke, got \(raw.debugSanitized)") }
        self.init(channel: try values.channel("channel") ?? .production, maxRollbackPPM: ppm, minDevices: minDevices, action: action)
    }

    public var values: OperationValues {
        .encode(["channel": channel, "maxRollbackRatePpm": maxRollbackPPM, "minDevices": minDevices, "action": action.rawValue])
    }

    public var summary: String { "guard \(channel): \(action.rawValue) above \(maxRollbackPPM) ppm rolled back, from \(minDevices) devices" }

    /// The guard as it is now, with `changed`.
    public func execute(on registry: Registry, _ context: OperationContext) throws(RegistryError) -> JSON {
        let app = try context.requireApp()
        let changed = try registry.setGuard(app: app, channel: channel, maxRollbackPPM: maxRollbackPPM, minDevices: minDevices, action: action,
                                            actor: context.actor, now: context.now) != nil
        var out = try registry.guards(app: app).first { $0.channel == channel }?.json.objectValue ?? [:]
        out["changed"] = .bool(changed)
        return .object(out)
    }
}

/// `apps guard APP --off`: the channel's guard removed (`Registry.removeGuard`).
public struct RemoveGuardOperation: ReleaseOperation, Equatable {
    public static let definition = OperationDefinition(
        kind: "guard-remove", routes: [.removeGuard],
        parameters: [.channel("the channel whose guard is removed (default production)")],
        audits: ["guard.remove"], danger: .routine, dryRun: false, expectPatch: false, metric: "guard")

    public var channel: ChannelName

    public init(channel: ChannelName = .production) { self.channel = channel }

    public init(_ values: OperationValues) throws(RegistryError) { self.init(channel: try values.channel("channel") ?? .production) }

    public var values: OperationValues { .encode(["channel": channel]) }

    public var summary: String { "remove the guard of \(channel)" }

    public func execute(on registry: Registry, _ context: OperationContext) throws(RegistryError) -> JSON {
        let app = try context.requireApp()
        let removed = try registry.removeGuard(app: app, channel: channel, actor: context.actor, now: context.now)
        return ["channel": .string(channel.rawValue), "changed": .bool(removed)]
    }
}

/// `apps throttle APP --min-interval S --ip-rate N`: an app's throttling rules; a rule left out
/// keeps its value (`Registry.setThrottleRules`).
public struct ThrottleOperation: ReleaseOperation, Equatable {
    public static let definition = OperationDefinition(
        kind: "throttle", routes: [.setThrottle],
        parameters: [
            OperationParameter("minInterval", .body, .integer, "seconds a device waits between checks, 0 to 2592000"),
            OperationParameter("ipRatePerMinute", .body, .integer, "requests a minute per address, 0 (off) to 10000000"),
        ],
        audits: ["app.throttle"], danger: .routine, dryRun: false, expectPatch: false, metric: "throttle", bodyLimit: 1024)

    public var minInterval: Int?
    public var ipRatePerMinute: Int?

    public init(minInterval: Int? = nil, ipRatePerMinute: Int? = nil) {
        self.minInterval = minInterval
        self.ipRatePerMinute = ipRatePerMinute
    }

    public init(_ values: OperationValues) throws(RegistryError) {
        self.init(minInterval: try values.integer("minInterval", in: ThrottleRules.minIntervalRange),
                  ipRatePerMinute: try values.integer("ipRatePerMinute", in: ThrottleRules.ipRateRange))
    }

    public var values: OperationValues { .encode(["minInterval": minInterval, "ipRatePerMinute": ipRatePerMinute]) }

    public var summary: String { "throttle: minimum interval \(minInterval.map { "\($0) s" } ?? "kept"), \(ipRatePerMinute.map { "\($0)" } ?? "kept") requests a minute per address" }

    /// The rules in force, with `changed`.
    public func execute(on registry: Registry, _ context: OperationContext) throws(RegistryError) -> JSON {
        let app = try context.requireApp()
        var rules = try registry.throttleRules(app: app)
        rules.minInterval = minInterval ?? rules.minInterval
        rules.ipRatePerMinute = ipRatePerMinute ?? rules.ipRatePerMinute
        let changed = try registry.setThrottleRules(app: app, rules, actor: context.actor, now: context.now)
        var out = rules.json.objectValue ?? [:]
        out["changed"] = .bool(changed)
        return .object(out)
    }
}

/// `publish --advance 25,50,100 --every 1h`: a staged rollout of a patch, raised one step per
/// interval on its channel guard's evidence (`Registry.setSchedule`).
public struct ScheduleOperation: ReleaseOperation, Equatable {
    public static let definition = OperationDefinition(
        kind: "schedule", routes: [.setSchedule],
        parameters: [
            .appVersion, .pathPatch,
            OperationParameter("steps", .body, .integers, required: true, "the rollout percentages to raise it to, 1 to 100 (taken in increasing order)"),
            OperationParameter("everySeconds", .body, .integer, required: true, "seconds at least between two steps"),
        ],
        audits: ["rollout.schedule"], danger: .routine, dryRun: false, expectPatch: false, metric: "rollout", bodyLimit: 4096)

    public var appVersion: AppVersion
    public var patch: Int
    /// In increasing order, each once: the order the steps are taken in whatever order they came.
    public var steps: [Int]
    public var everySeconds: Int

    public init(appVersion: AppVersion, patch: Int, steps: [Int], everySeconds: Int) {
        self.appVersion = appVersion
        self.patch = patch
        self.steps = Set(steps).sorted()
        self.everySeconds = everySeconds
    }

    public init(_ values: OperationValues) throws(RegistryError) {
        guard let patch = try values.patch("patch") else { throw .invalidCall("patch is required") }
        guard let steps = try values.integers("steps", in: 0...100, limit: 100), let every = try values.integer("everySeconds", in: 0...Int(Int32.max)) else {
            throw .invalidCall("steps and everySeconds are required, like {\"steps\": [25, 50, 100], \"everySeconds\": 3600}")
        }
        self.init(appVersion: try values.appVersion(), patch: patch, steps: steps, everySeconds: every)
    }

    public var values: OperationValues { .encode(["appVersion": appVersion, "patch": patch, "steps": steps, "everySeconds": everySeconds]) }

    public var summary: String { "stage \(appVersion) patch \(patch): \(steps.map { "\($0) %" }.joined(separator: ", ")), every \(everySeconds) s" }

    public func execute(on registry: Registry, _ context: OperationContext) throws(RegistryError) -> JSON {
        let app = try context.requireApp()
        return try registry.setSchedule(app: app, appVersion: appVersion, number: patch, steps: steps, everySeconds: everySeconds,
                                 actor: context.actor, now: context.now).json
    }
}
