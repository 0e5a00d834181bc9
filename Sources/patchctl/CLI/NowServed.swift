import PatchCore
import PatchRegistry

/// What the devices of an app version get now, read from the local registry or a server's
/// listing, and the one "now served" line that revoke, rollout and rollback print.
enum NowServed {
    static func serving(app: AppName, version: AppVersion, remote: Remote?, registry: Registry?) throws(CLIError) -> VersionServing {
        if let remote {
            let listing = try remote.json("GET", "/v1/apps/\(app)/patches", query: ["active": "false"]).arrayValue ?? []
            return VersionServing(app: app, appVersion: version, entries: listing.filter { $0["appVersion"]?.stringValue == version.rawValue }
                .compactMap(VersionServing.Entry.init(listing:)))
        }
        guard let registry else { throw .failed("no registry to read what \(app) \(version) serves") }
        do { return try registry.serving(app: app, appVersion: version) } catch { throw error.cliError }
    }

    /// "demo 2.3 now serves: patch 3 → 25 %, patch 2 → 75 %"
    static func line(_ serving: VersionServing) -> String {
        "\(serving.app) \(serving.appVersion) now serves: \(serving.summary)"
    }

    static func print(app: AppName, version: AppVersion, remote: Remote?, registry: Registry?) throws(CLIError) {
        Output.line(line(try serving(app: app, version: version, remote: remote, registry: registry)))
    }

    /// Each patch of a listing with its `delivery` (live, superseded, halted, revoked) added,
    /// computed per app version from the listing itself.
    static func annotate(_ listing: [JSON]) -> [JSON] {
        var servings: [String: VersionServing] = [:]
        for (key, group) in Dictionary(grouping: listing, by: key) {
            guard let first = group.first, let app = try? AppName(first["app"]?.stringValue ?? ""),
                  let version = try? AppVersion(first["appVersion"]?.stringValue ?? "") else { continue }
            servings[key] = VersionServing(app: app, appVersion: version, entries: group.compactMap(VersionServing.Entry.init(listing:)))
        }
        return listing.map { patch in
            guard var object = patch.objectValue, let number = patch["patch"]?.intValue,
                  let delivery = servings[key(patch)]?.delivery[Int(number)] else { return patch }
            object["delivery"] = .string(delivery.rawValue)
            return .object(object)
        }
    }

    private static func key(_ patch: JSON) -> String { (patch["app"]?.stringValue ?? "") + "\u{0}" + (patch["appVersion"]?.stringValue ?? "") }
}
