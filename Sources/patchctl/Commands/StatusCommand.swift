import Foundation
import HotpatchCLI
import PatchCore
import PatchRegistry

/// `patchctl status`: per app and app version, what devices get now (the rollout split, from
/// the rule server and client apply) and each role's metadata version and expiry, from the
/// local registry or with --server from `GET /v1/apps/{app}/status`.
struct StatusCommand: Command {
    static let spec = CommandSpec("status", summary: "Show what devices get now per app version (the rollout split) and each role's metadata version and expiry",
                                  options: ListedApps.options + [.flag("--json", "print JSON")] + Context.globalOptions + Remote.options)

    static func run(_ arguments: Arguments) throws(CLIError) {
        let name = try ListedApps.named(arguments)
        // Both paths give AppStatus.json, one object per app; one printer renders it.
        let backend = try Backends.open(arguments)
        var apps: [JSON] = []
        for app in try ListedApps.names(name, backend: backend) { apps.append(try withReports(backend.status(app: app), backend: backend)) }
        if arguments.flag("--json") { Output.json(["apps": .array(apps)]); return }
        guard !apps.isEmpty else { Output.line("no apps"); return }
        let now = Date()
        for (index, app) in apps.enumerated() {
            if index > 0 { Output.line() }
            Output.line("app \(app["app"]?.stringValue ?? "")")
            let metadata = app["metadata"]?.objectValue ?? [:]
            Output.line(table(["ROLE", "VERSION", "EXPIRES", ""], Role.allCases.compactMap { role in
                metadata[role.rawValue].map { m in
                    let expires = m["expires"]?.stringValue ?? ""
                    return [role.rawValue, String(m["version"]?.intValue ?? 0), expires, Self.remaining(until: expires, now: now)]
                }
            }))
            // What waits for signatures is not served: said before what is.
            for change in app["pending"]?.arrayValue ?? [] {
                Output.line("waiting for signatures: change \(change["id"]?.intValue ?? 0) (\(change["summary"]?.stringValue ?? "")), \(change["signatures"]?.intValue ?? 0) of \(change["threshold"]?.intValue ?? 0) \(change["role"]?.stringValue ?? "targets") signatures, proposed by \(change["proposedBy"]?.stringValue ?? "?"): `patchctl pending`")
            }
            let reports = app["reports"]
            for rule in reports?["guards"]?.arrayValue ?? [] { Output.line(DeviceFigures.guardLine(rule)) }
            for trip in reports?["trips"]?.arrayValue ?? [] { Output.line(DeviceFigures.tripLine(trip)) }
            for schedule in reports?["schedules"]?.arrayValue ?? [] { Output.line(DeviceFigures.scheduleLine(schedule)) }
            let versions = app["versions"]?.arrayValue ?? []
            if versions.isEmpty { Output.line("no patches"); continue }
            // One row per version and channel (a version has one split per channel), grouped by
            // channel, production first, as the JSON's versions are ordered within each version.
            let grouped = Self.groupedByChannel(versions)
            Output.line(table(["VERSION", "CHANNEL", "DEVICES GET NOW"], grouped.map { v in
                // A server from before conditions sends no summary: the split alone.
                [v["appVersion"]?.stringValue ?? "", v["channel"]?.stringValue ?? "production", v["summary"]?.stringValue ?? (v["served"]?.arrayValue ?? []).map { share in
                    Rollout.Share(patch: share["patch"]?.intValue.map(Int.init), basisPoints: Int(share["basisPoints"]?.intValue ?? 0)).text
                }.joined(separator: ", ")]
            }))
            for set in app["together"]?.arrayValue ?? [] { Output.line(Self.togetherLine(set)) }
            for halted in Self.halted(app) { Output.line(Self.haltedLine(halted)) }
            // Halted patches show as such beside their figures (the split above only says "none").
            var delivery: [String: String] = [:]
            for v in versions {
                for p in v["patches"]?.arrayValue ?? [] {
                    delivery[DeviceFigures.key(appVersion: v["appVersion"], channel: v["channel"], patch: p["patch"])] = p["delivery"]?.stringValue
                }
            }
            if let reports, let figures = DeviceFigures.figuresTable(reports, delivery: delivery) { Output.line(figures) }
        }
    }

    /// The app's status with `reports`: what its devices reported (the stats route's
    /// patches, guards and trips; the hourly series is the stats route's alone).
    static func withReports(_ app: JSON, backend: any Backend) throws(CLIError) -> JSON {
        guard var object = app.objectValue, let name = app["app"]?.stringValue.flatMap({ try? AppName($0) }) else { return app }
        var stats = try backend.stats(app: name).objectValue ?? [:]
        stats["hourly"] = nil
        stats["app"] = nil
        object["reports"] = .object(stats)
        return .object(object)
    }

    /// The app's halted patches: `halted` as the registry gives it (with device figures), or,
    /// from a server that predates it, the `halted` deliveries of `versions` without figures.
    static func halted(_ app: JSON) -> [JSON] {
        if let halted = app["halted"]?.arrayValue { return halted }
        return (app["versions"]?.arrayValue ?? []).flatMap { v in
            (v["patches"]?.arrayValue ?? []).filter { $0["delivery"]?.stringValue == Delivery.halted.rawValue }.map { p -> JSON in
                ["appVersion": v["appVersion"] ?? .null, "channel": v["channel"] ?? .string(ChannelName.production.rawValue), "patch": p["patch"] ?? .null]
            }
        }
    }

    /// "halted: 2.3 production patch 3 (rollout 0 %) is offered to no device; devices that
    /// installed it keep it until a newer patch reaches them or it is revoked (12 devices
    /// reported installing it, 2 rolled it back)". The split alone says "none", which reads as
    /// if no device ran it; it also names both ways to take it off the devices that do.
    static func haltedLine(_ halted: JSON) -> String {
        var line = "halted: \(halted["appVersion"]?.stringValue ?? "") \(halted["channel"]?.stringValue ?? "production") patch \(halted["patch"]?.intValue ?? 0) (rollout 0 %) is offered to no device; devices that installed it keep it until a newer patch reaches them or it is revoked"
        if let installed = halted["installedDevices"]?.intValue {
            let rolledBack = halted["rolledBackDevices"]?.intValue ?? 0
            line += " (\(installed) device\(installed == 1 ? "" : "s") reported installing it\(rolledBack > 0 ? ", \(rolledBack) rolled it back" : ""))"
        }
        return line
    }

    /// "published together (one change, audit seq 12): 2.3 patch 4, 2.3.1 patch 2 (production)":
    /// a publish to several versions, as long as a patch of it is active.
    static func togetherLine(_ set: JSON) -> String {
        let patches = (set["patches"]?.arrayValue ?? []).map { "\($0["appVersion"]?.stringValue ?? "") patch \($0["patch"]?.intValue ?? 0)" }
        return "published together (one change, audit seq \(set["publishSeq"]?.intValue ?? 0)): \(patches.joined(separator: ", ")) (\(set["channel"]?.stringValue ?? "production"))"
    }

    /// The version rows of one app, production's first, then each other channel's by name,
    /// each channel's in the order given (by version).
    static func groupedByChannel(_ versions: [JSON]) -> [JSON] {
        func channel(_ v: JSON) -> String { v["channel"]?.stringValue ?? ChannelName.production.rawValue }
        func rank(_ name: String) -> (Int, String) { (name == ChannelName.production.rawValue ? 0 : 1, name) }
        let names = Set(versions.map(channel)).sorted { rank($0) < rank($1) }
        return names.flatMap { name in versions.filter { channel($0) == name } }
    }

    /// "in 29 days", "in 23 h", "EXPIRED".
    static func remaining(until expires: String, now: Date) -> String {
        guard let date = TUFTime.parse(expires) else { return "" }
        let seconds = date.timeIntervalSince(now)
        if seconds <= 0 { return "EXPIRED" }
        return seconds >= 2 * 86_400 ? "in \(Int(seconds / 86_400)) days" : "in \(Int(seconds / 3600)) h"
    }
}
