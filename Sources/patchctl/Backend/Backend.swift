import Foundation
import HotpatchCLI
import PatchCore
import PatchPush
import PatchSigning
import PatchRegistry

/// What patchctl's commands act on: the operations of the API table (PatchAPI), each
/// once, with two implementations — `LocalBackend` (the registry, in this process) and
/// `RemoteBackend` (a patchd over HTTP, `--server`). Every method answers the JSON the
/// operation's route answers, so a command prints the same output, `--json` and exit codes
/// whichever it was given; a command never asks which one it has, except for what only one
/// side holds (`registry`, for local-only options).
protocol Backend {
    /// Who a local change is recorded under; nil over a server, which records the token's.
    var actor: Actor? { get }
    /// The registry of a local backend; nil over a server.
    var registry: Registry? { get }
    /// Where it acts, for messages: the registry's path or database, or the server's URL.
    var place: String { get }

    /// An unknown app is refused as one before anything else is read (locally; a server
    /// answers 404 on the operation itself).
    func requireApp(_ app: AppName) throws(CLIError)

    // Reads.
    /// `listApps`: the apps (a server: those the token may read).
    func apps() throws(CLIError) -> [JSON]
    /// `listPatches`: the patches of one app, newest version first as the registry orders them.
    func patches(app: AppName, activeOnly: Bool) throws(CLIError) -> [JSON]
    /// `appStatus`: `AppStatus.json`.
    func status(app: AppName) throws(CLIError) -> JSON
    /// `appStats` over the last hour: `ReportStats.json`.
    func stats(app: AppName) throws(CLIError) -> JSON
    /// `getAudit`: `{"events": […], "chain": …}` from `after` on (every page of a server's).
    func audit(app: AppName?, after: Int, pageSize: Int?, verify: Bool) throws(CLIError) -> [String: JSON]
    /// `listChannels`: the app's declared channels, production first.
    func channels(app: AppName) throws(CLIError) -> [String]
    /// `listAppVersions`: `{"app", "days", "versions": [AskedVersion.json]}`, the most asked first.
    func askedVersions(app: AppName) throws(CLIError) -> JSON
    /// `listTokens`.
    func tokens(app: AppName?) throws(CLIError) -> [JSON]
    /// `patchScript`: a patch's script as published (decrypted locally; a server serves only
    /// a plaintext app's).
    func script(app: AppName, version: AppVersion, patch: Int) throws(CLIError) -> [UInt8]
    /// `getThrottle`: `ThrottleRules.json`.
    func throttle(app: AppName) throws(CLIError) -> JSON
    /// `listWebhooks`: `WebhookSubscription.json` of the app's subscriptions, never a secret.
    func webhooks(app: AppName) throws(CLIError) -> [JSON]
    /// The app's TUF repository written under `out` in `layout` (`patchctl export`): the
    /// registry's, re-signed to last `lifetime` when given; a server's, mirrored through the
    /// TUF verifier from `trustedRoot` (default: the server's own 1.root.json) and written only
    /// once every file verified.
    func export(app: AppName, to out: URL, layout: ExportLayout, lifetime: TimeInterval?, trustedRoot: [UInt8]?) throws(CLIError) -> ExportSummary

    // Changes: each answers what its route answers, marked `"dryRun": true` for a dry run.
    /// A release operation (publish, promote, rollout, halt, resume, revoke, rollback): the
    /// registry's `perform` here, its route over a server, with nothing per operation.
    func perform<Operation: ReleaseOperation>(_ operation: Operation, app: AppName?, _ options: CallOptions) throws(CLIError) -> Performed
    /// `notifyDevices?dryRun=true`: how many devices a round would wake; refused for an app
    /// without an APNs key. Nothing is sent.
    func pushAudience(app: AppName, version: AppVersion?, channel: ChannelName?) throws(CLIError) -> Int
    /// `notifyDevices`: one round of pushes (the APNs key is where the registry is).
    func notify(app: AppName, version: AppVersion?, channel: ChannelName?, reason: String) throws(CLIError) -> PushSummary

    // The two-person rule. A change above that needs signatures this side cannot make throws
    // `CLIError.pending`, after signing with the command's `--key-file` keys (over a server:
    // here, sending only the signatures).
    /// `listPending`: `PendingChange.json` of the app's changes waiting for signatures.
    func pending(app: AppName, all: Bool) throws(CLIError) -> [JSON]
    /// `approvePending` with signatures by the command's `--key-file` keys: the change, and
    /// `"result"` (what its operation answers) when this approval made it land.
    func approve(app: AppName, id: Int64) throws(CLIError) -> JSON
    /// `rejectPending`.
    func reject(app: AppName, id: Int64, reason: String?) throws(CLIError) -> JSON
}

/// What a release operation did: its answer, or nothing yet because it would leave a version
/// and channel serving no patch and was not confirmed (the reason, with what devices would run).
enum Performed {
    case done(JSON)
    case needsConfirmation(String)
}

enum Backends {
    /// The backend a command acts on: a server when `--server`, `$HOTPATCH_SERVER` or
    /// hotpatch.json's `server` names one (`Remote.from`), else the local registry.
    static func open(_ arguments: Arguments) throws(CLIError) -> any Backend {
        let keys = try SigningKeys.read(arguments)
        if let remote = try Remote.from(arguments) { return RemoteBackend(remote: remote, keys: keys) }
        let context = try Context(arguments: arguments)
        return LocalBackend(registry: try context.openRegistry(), actor: context.actor, place: context.place, keys: keys)
    }
}

extension Backend {
    /// The app a command acts on: `--app`, else hotpatch.json's, else the only app there is
    /// (the registry's, or the only one the server's token may read).
    func app(_ arguments: Arguments, option: String = "--app") throws(CLIError) -> AppName {
        if let given = try AppDefault.given(arguments, option: option) { return given }
        let names = try appNames()
        switch names.count {
        case 1: return names[0]
        case 0:
            // A registry with no apps, from an app's repository, is a registry looked for in
            // the wrong place: AppSuggestion says how to point at the right one.
            throw .usage("\(option) is required: " + (registry == nil ? "\(place) has no apps this token may read" : AppSuggestion.nothingAt(place, noRegistry: false)))
        default:
            throw .usage("\(option) is required: \(place) holds several apps (\(names.map(\.rawValue).joined(separator: ", "))) and no \(ProjectFile.fileName) names one (write one with `patchctl init --app NAME` and `--data DIR --keys DIR` or `--server URL`)")
        }
    }

    /// `--app` when given, else every app (a server's: those the token may read; hotpatch.json's
    /// app when there is one).
    func apps(_ named: AppName?) throws(CLIError) -> [AppName] {
        if let named { try requireApp(named); return [named] }
        if registry == nil, let project = try ProjectFile.current.get() { return [project.app] }
        return try appNames()
    }

    /// The names of `apps()`.
    private func appNames() throws(CLIError) -> [AppName] {
        try apps().compactMap { $0["app"]?.stringValue }.compactMap { try? AppName($0) }
    }

    /// The patches of one app version as the rollout split needs them.
    func servingEntries(app: AppName, version: AppVersion) throws(CLIError) -> [VersionServing.Entry] {
        try patches(app: app, activeOnly: false).filter { $0["appVersion"]?.stringValue == version.rawValue }
            .compactMap(VersionServing.Entry.init(listing:))
    }
}
