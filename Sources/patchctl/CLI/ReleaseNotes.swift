import PatchCore

/// Release notes (`--message`) under a listing: one line per patch that has them, so the
/// table stays one row per patch.
enum ReleaseNotes {
    static func print(_ patches: [JSON]) {
        let noted = patches.filter { $0["message"]?.stringValue != nil }
        guard !noted.isEmpty else { return }
        Output.line()
        for p in noted {
            Output.line("\(p["app"]?.stringValue ?? "") \(p["appVersion"]?.stringValue ?? "") patch \(p["patch"]?.intValue ?? 0): \(p["message"]?.stringValue ?? "")")
        }
    }
}
