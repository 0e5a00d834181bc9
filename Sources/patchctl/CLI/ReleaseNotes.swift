import PatchCore

/// Release notes (`--message`) and delivery conditions under a listing: one line per patch
/// that has them, so the table stays one row per patch.
enum ReleaseNotes {
    static func print(_ patches: [JSON]) {
        let noted = patches.filter { $0["message"]?.stringValue != nil || $0["revokeMessage"]?.stringValue != nil || $0["conditions"] != nil }
        guard !noted.isEmpty else { return }
        Output.line()
        for p in noted {
            let patch = "\(p["app"]?.stringValue ?? "") \(p["appVersion"]?.stringValue ?? "") patch \(p["patch"]?.intValue ?? 0)"
            if let message = p["message"]?.stringValue { Output.line("\(patch): \(message)") }
            if let conditions = p["conditions"] { Output.line("\(patch) only for: \(DeliveryConditions.summary(listing: conditions))") }
            if let reason = p["revokeMessage"]?.stringValue { Output.line("\(patch) revoked: \(reason)") }
        }
    }
}
