import HotpatchCLI
import PatchCore
import PatchRegistry

/// What the devices of an app version get now, read from the local registry or a server's
/// listing, and the one "now served" line that revoke, rollout and rollback print.
enum NowServed {
    /// What the devices of an app version get now, one per channel that has patches
    /// (production first).
    static func servings(app: AppName, version: AppVersion, backend: any Backend) throws(CLIError) -> [VersionServing] {
        VersionServing.grouped(app: app, appVersion: version, try backend.servingEntries(app: app, version: version))
    }

    /// What the devices of an app version on one channel get now (nothing listed: "none").
    static func serving(app: AppName, version: AppVersion, channel: ChannelName, backend: any Backend) throws(CLIError) -> VersionServing {
        try servings(app: app, version: version, backend: backend).first { $0.channel == channel }
            ?? VersionServing(app: app, appVersion: version, channel: channel, entries: [])
    }

    /// "demo 2.3 now serves: patch 3 → 25 %, patch 2 → 75 %" (a channel other than
    /// production is named: "demo 2.3 (staging) now serves: …")
    static func line(_ serving: VersionServing) -> String {
        let channel = serving.channel == .production ? "" : " (\(serving.channel))"
        return "\(serving.app) \(serving.appVersion)\(channel) now serves: \(serving.summary)"
    }

    /// One line per channel of the version (a revoke without --patch touches every channel).
    static func print(app: AppName, version: AppVersion, backend: any Backend) throws(CLIError) {
        let all = try servings(app: app, version: version, backend: backend)
        for serving in all.isEmpty ? [VersionServing(app: app, appVersion: version, entries: [])] : all { Output.line(line(serving)) }
    }

    /// Each patch of a listing with its `delivery` (live, superseded, halted, revoked) added,
    /// computed per app version from the listing itself.
    static func annotate(_ listing: [JSON]) -> [JSON] {
        var servings: [String: VersionServing] = [:]
        for (key, group) in Dictionary(grouping: listing, by: key) {
            guard let first = group.first, let app = try? AppName(first["app"]?.stringValue ?? ""),
                  let version = try? AppVersion(first["appVersion"]?.stringValue ?? ""),
                  let entry = VersionServing.Entry(listing: first) else { continue }
            servings[key] = VersionServing(app: app, appVersion: version, channel: entry.channel, entries: group.compactMap(VersionServing.Entry.init(listing:)))
        }
        return listing.map { patch in
            guard var object = patch.objectValue, let number = patch["patch"]?.intValue,
                  let delivery = servings[key(patch)]?.delivery[Int(number)] else { return patch }
            object["delivery"] = .string(delivery.rawValue)
            return .object(object)
        }
    }

    private static func key(_ patch: JSON) -> String {
        [patch["app"]?.stringValue ?? "", patch["appVersion"]?.stringValue ?? "", patch["channel"]?.stringValue ?? ChannelName.production.rawValue].joined(separator: "\u{0}")
    }
}
