import HotpatchCLI
import PatchCore

/// Which apps `status`, `list` and `audit` cover: `--app`, else hotpatch.json's app (the
/// default `--app` of every command), else every app; `--all-apps` every app even inside an
/// app's repository. Every app is the registry's, or over `--server` those the token may read.
enum ListedApps {
    static let flag = "--all-apps"
    static let options: [Option] = [
        .value("--app", "NAME", "only this app (default: hotpatch.json's app, else every app)"),
        .flag(flag, "every app (of the registry, or that the token may read), even where hotpatch.json names one"),
    ]

    /// `--app`, hotpatch.json's app, or nil for every app.
    static func named(_ arguments: Arguments) throws(CLIError) -> AppName? {
        try arguments.optionalAppName(everyApp: flag)
    }

    /// The apps to show. Every app is asked of the backend itself: `Backend.apps(nil)` answers
    /// hotpatch.json's app over a server, which `--all-apps` is there to get past.
    static func names(_ named: AppName?, backend: any Backend) throws(CLIError) -> [AppName] {
        if let named { return try backend.apps(named) }
        return try backend.apps().compactMap { $0["app"]?.stringValue }.compactMap { try? AppName($0) }
    }
}
