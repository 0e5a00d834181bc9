import Foundation
import PatchCore

/// Distinct devices per event of one patch (patch nil: sync failures naming no patch).
public struct PatchFigures: Sendable, Equatable {
    public struct Key: Sendable, Hashable, Comparable {
        public let app: AppName
        public let appVersion: AppVersion
        public let channel: ChannelName
        public let patch: Int?

        public static func < (a: Key, b: Key) -> Bool {
            (a.app, a.appVersion, a.channel.rawValue, a.patch ?? 0) < (b.app, b.appVersion, b.channel.rawValue, b.patch ?? 0)
        }
    }

    public let key: Key
    /// Devices that reported the event at least once.
    public var devices: [ReportEventType: Int] = [:]
    /// Devices per reason, for the events that carry one (refused, syncFailed).
    public var reasons: [ReportEventType: [String: Int]] = [:]

    public init(key: Key) { self.key = key }

    public func count(_ event: ReportEventType) -> Int { devices[event] ?? 0 }

    /// Rolled-back ÷ installed devices, with its 95 % Wilson interval.
    public var rollbackRate: WilsonInterval { WilsonInterval(successes: count(.rolledBack), trials: count(.installed)) }

    public var json: JSON {
        var out: [String: JSON] = [
            "appVersion": .string(key.appVersion.rawValue), "channel": .string(key.channel.rawValue),
            "patch": key.patch.map { .int(Int64($0)) } ?? .null,
            "devices": .object(Dictionary(uniqueKeysWithValues: ReportEventType.allCases.map { ($0.rawValue, JSON.int(Int64(count($0)))) })),
            "reasons": .object(Dictionary(uniqueKeysWithValues: reasons.map { event, byReason in
                (event.rawValue, JSON.object(byReason.mapValues { .int(Int64($0)) }))
            })),
        ]
        if count(.installed) > 0 {
            let rate = rollbackRate
            out["rollbackRatePpm"] = ["observed": .int(Int64(WilsonInterval.ppm(Double(rate.successes) / Double(rate.trials)))),
                                      "lower": .int(Int64(WilsonInterval.ppm(rate.lower))), "upper": .int(Int64(WilsonInterval.ppm(rate.upper)))]
        }
        return .object(out)
    }
}

/// Events per type received in one hour (server time) for one patch.
public struct HourlyFigures: Sendable, Equatable {
    public struct Key: Sendable, Hashable, Comparable {
        public let hour: String
        public let appVersion: AppVersion
        public let channel: ChannelName
        public let patch: Int?

        public static func < (a: Key, b: Key) -> Bool {
            (a.hour, a.appVersion, a.channel.rawValue, a.patch ?? 0) < (b.hour, b.appVersion, b.channel.rawValue, b.patch ?? 0)
        }
    }

    public let key: Key
    public var events: [ReportEventType: Int] = [:]

    public init(key: Key) { self.key = key }

    public var json: JSON {
        ["hour": .string(key.hour), "appVersion": .string(key.appVersion.rawValue), "channel": .string(key.channel.rawValue),
         "patch": key.patch.map { .int(Int64($0)) } ?? .null,
         "events": .object(Dictionary(uniqueKeysWithValues: events.map { ($0.key.rawValue, JSON.int(Int64($0.value))) }))]
    }
}

/// `GET /v1/apps/{app}/stats`.
public struct ReportStats: Sendable {
    public let app: AppName
    public let patches: [PatchFigures]
    public let hourly: [HourlyFigures]
    public let guards: [PatchGuard]
    public let trips: [GuardTrip]
    public let schedules: [RolloutSchedule]

    public var json: JSON {
        ["app": .string(app.rawValue), "patches": .array(patches.map(\.json)), "hourly": .array(hourly.map(\.json)),
         "guards": .array(guards.map(\.json)), "trips": .array(trips.map(\.json)), "schedules": .array(schedules.map(\.json))]
    }
}
