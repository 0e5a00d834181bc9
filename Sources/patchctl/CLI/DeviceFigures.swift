import HotpatchCLI
import PatchCore
import PatchRegistry

/// What devices reported of each patch (`ReportStats.json`, as `GET /v1/apps/{app}/stats`
/// answers), read from the local registry or a server, for the columns of `list` and the
/// figures and guards of `status`. One reader for both commands.
enum DeviceFigures {
    /// Each patch of a listing with the `devices` figures of its stats (zeros when no device
    /// reported it).
    static func annotate(_ patches: [JSON], backend: any Backend) throws(CLIError) -> [JSON] {
        var byApp: [String: [String: JSON]] = [:]
        for raw in Set(patches.compactMap { $0["app"]?.stringValue }) {
            guard let app = try? AppName(raw) else { continue }
            var figures: [String: JSON] = [:]
            for figure in try backend.stats(app: app)["patches"]?.arrayValue ?? [] {
                figures[key(figure)] = figure["devices"]
            }
            byApp[raw] = figures
        }
        return patches.map { patch in
            guard var object = patch.objectValue, let app = patch["app"]?.stringValue else { return patch }
            object["devices"] = byApp[app]?[key(patch)] ?? .object(Dictionary(uniqueKeysWithValues: ReportEventType.allCases.map { ($0.rawValue, JSON.int(0)) }))
            return .object(object)
        }
    }

    private static func key(_ json: JSON) -> String { key(appVersion: json["appVersion"], channel: json["channel"], patch: json["patch"]) }

    /// One patch of an app, as a lookup key.
    static func key(appVersion: JSON?, channel: JSON?, patch: JSON?) -> String {
        "\(appVersion?.stringValue ?? "")|\(channel?.stringValue ?? "production")|\(patch?.intValue ?? 0)"
    }

    static let columns = ["INSTALLED", "CONFIRMED", "ROLLED BACK"]

    /// The cells under `columns` for one annotated patch.
    static func cells(_ patch: JSON) -> [String] {
        [ReportEventType.installed, .confirmed, .rolledBack].map { String(patch["devices"]?[$0.rawValue]?.intValue ?? 0) }
    }

    /// "guard production: halt a patch once ≥ 50 devices installed it and the rollback rate's 95 % lower bound exceeds 2%"
    static func guardLine(_ rule: JSON) -> String {
        let action = rule["action"]?.stringValue ?? "halt"
        return "guard \(rule["channel"]?.stringValue ?? "production"): \(action) a patch once ≥ \(rule["minDevices"]?.intValue ?? 0) devices installed it " +
            "and the rollback rate's 95 % lower bound exceeds \(WilsonInterval.percentText(ppm: Int(rule["maxRollbackRatePpm"]?.intValue ?? 0)))"
    }

    /// "staged rollout 2.3 production patch 2: next 25 % at 2026-12-02T13:00:00Z (then 50 %, 100 %),
    /// at most one step every 3600 s, each only while the guard sees it healthy".
    static func scheduleLine(_ schedule: JSON) -> String {
        let steps = (schedule["steps"]?.arrayValue ?? []).compactMap(\.intValue).map { "\($0) %" }
        let then = steps.dropFirst().isEmpty ? "" : " (then \(steps.dropFirst().joined(separator: ", ")))"
        return "staged rollout \(schedule["appVersion"]?.stringValue ?? "") \(schedule["channel"]?.stringValue ?? "production") " +
            "patch \(schedule["patch"]?.intValue ?? 0): next \(steps.first ?? "?") at \(schedule["nextAt"]?.stringValue ?? "")\(then), " +
            "at most one step every \(schedule["everySeconds"]?.intValue ?? 0) s, each only while the guard sees it healthy"
    }

    /// "guard halted 2.3 production patch 3 at …: 10 of 60 installed devices rolled back (lower bound 9.3132% > 2%)",
    /// then "; configured: revoke — revoke would leave 2.3 production with no patch" when it did not do what it was set to.
    static func tripLine(_ trip: JSON) -> String {
        let done = trip["action"]?.stringValue
        let action = done == GuardAction.revoke.rawValue ? "revoked" : "halted"
        var line = "guard \(action) \(trip["appVersion"]?.stringValue ?? "") \(trip["channel"]?.stringValue ?? "") patch \(trip["patch"]?.intValue ?? 0) at \(trip["at"]?.stringValue ?? ""): " +
            "\(trip["rolledBack"]?.intValue ?? 0) of \(trip["installed"]?.intValue ?? 0) installed devices rolled back " +
            "(lower bound \(WilsonInterval.percentText(ppm: Int(trip["lowerBoundPpm"]?.intValue ?? 0))) > \(WilsonInterval.percentText(ppm: Int(trip["thresholdPpm"]?.intValue ?? 0))))"
        if let configured = trip["configured"]?.stringValue, configured != done {
            line += "; configured: \(configured) — \(trip["overrideReason"]?.stringValue ?? "")"
        }
        return line
    }

    /// The figures table of `status`: per patch a device reported, its devices per event and
    /// its rollback rate with the 95 % interval.
    static func figuresTable(_ stats: JSON, delivery: [String: String] = [:]) -> String? {
        let patches = (stats["patches"]?.arrayValue ?? []).filter { $0["patch"]?.intValue != nil }
        guard !patches.isEmpty else { return nil }
        return table(["VERSION", "CHANNEL", "PATCH", "DELIVERY", "DOWNLOADED"] + columns + ["REFUSED", "ROLLBACK RATE (95 %)"], patches.map { p in
            let d = p["devices"]
            let rate = p["rollbackRatePpm"].map { r in
                "\(WilsonInterval.percentText(ppm: Int(r["observed"]?.intValue ?? 0))) (\(WilsonInterval.percentText(ppm: Int(r["lower"]?.intValue ?? 0)))–\(WilsonInterval.percentText(ppm: Int(r["upper"]?.intValue ?? 0))))"
            } ?? "-"
            return [p["appVersion"]?.stringValue ?? "", p["channel"]?.stringValue ?? "", String(p["patch"]?.intValue ?? 0),
                    delivery[key(p)] ?? "", String(d?["downloaded"]?.intValue ?? 0)] + cells(p) + [String(d?["refused"]?.intValue ?? 0), rate]
        })
    }
}

