import Foundation
import HotpatchCLI
import PatchCore
import PatchPush
import PatchRegistry
import PatchSigning

/// The operations on the registry in this process: the same Registry calls and the same
/// JSON (`.json` of the registry's models) as patchd's routes make and answer.
struct LocalBackend: Backend {
    private let local: Registry
    private let who: Actor
    /// `--key-file`: keys every change of this command may sign with, as well as the key store's.
    private let keys: [SigningKey]
    let place: String
    var registry: Registry? { local }
    var actor: Actor? { who }

    init(registry: Registry, actor: Actor, place: String, keys: [SigningKey] = []) {
        local = registry
        who = actor
        self.place = place
        self.keys = keys
    }

    /// Runs one registry call, its error as the command's; the command's keys sign what it changes.
    private func run<T>(_ body: () throws(RegistryError) -> T) throws(CLIError) -> T {
        do { return try Registry.signing(with: keys, body) } catch { throw error.cliError }
    }

    func requireApp(_ app: AppName) throws(CLIError) { _ = try run { () throws(RegistryError) in try local.app(app) } }

    func apps() throws(CLIError) -> [JSON] { try run { () throws(RegistryError) in try local.apps().map(\.json) } }

    func patches(app: AppName, activeOnly: Bool) throws(CLIError) -> [JSON] {
        try run { () throws(RegistryError) in try local.listing(local.patches(app: app, appVersion: nil, activeOnly: activeOnly)) }
    }

    func status(app: AppName) throws(CLIError) -> JSON {
        try run { () throws(RegistryError) in try local.status(app: app).first?.json ?? .null }
    }

    func stats(app: AppName) throws(CLIError) -> JSON { try run { () throws(RegistryError) in try local.reportStats(app: app, hours: 1).json } }

    func audit(app: AppName?, after: Int, pageSize: Int?, verify: Bool) throws(CLIError) -> [String: JSON] {
        guard pageSize == nil else { throw .usage("--page-size goes with --server") }
        return try run { () throws(RegistryError) in
            if let app { _ = try local.app(app) }
            var result: [String: JSON] = ["events": .array(try local.auditEvents(app: app, after: Int64(after)).map(\.json))]
            if verify { result["chain"] = try local.verifyAudit().json(global: true) }
            return result
        }
    }

    func channels(app: AppName) throws(CLIError) -> [String] {
        try run { () throws(RegistryError) in try local.channels(app: app).map(\.rawValue) }
    }

    /// What patchd instances had added by their last upkeep pass (this process counts no checks).
    func askedVersions(app: AppName) throws(CLIError) -> JSON {
        try run { () throws(RegistryError) in
            ["app": .string(app.rawValue), "days": .int(Int64(Registry.askedVersionsDays)),
             "versions": .array(try local.askedVersions(app: app).map(\.json))]
        }
    }

    func tokens(app: AppName?) throws(CLIError) -> [JSON] { try run { () throws(RegistryError) in try local.tokens(scope: app).map(\.json) } }

    func script(app: AppName, version: AppVersion, patch: Int) throws(CLIError) -> [UInt8] {
        try run { () throws(RegistryError) in
            _ = try local.app(app)
            guard let record = try local.patches(app: app, appVersion: version, activeOnly: false).first(where: { $0.number == patch }) else {
                throw .notFound("\(app) \(version) has no patch \(patch)")
            }
            return try local.plaintext(of: record)
        }
    }

    func throttle(app: AppName) throws(CLIError) -> JSON { try run { () throws(RegistryError) in try local.throttleRules(app: app).json } }

    func webhooks(app: AppName) throws(CLIError) -> [JSON] { try run { () throws(RegistryError) in try local.webhooks(app: app).map(\.json) } }

    func export(app: AppName, to out: URL, layout: ExportLayout, lifetime: TimeInterval?, trustedRoot: [UInt8]?) throws(CLIError) -> ExportSummary {
        guard trustedRoot == nil else { throw .usage("--root goes with --server: a local export is the registry's own repository") }
        return try run { () throws(RegistryError) in try local.export(app: app, to: out, layout: layout, timestampLifetime: lifetime) }
    }

    func perform<Operation: ReleaseOperation>(_ operation: Operation, app: AppName?, _ options: CallOptions) throws(CLIError) -> Performed {
        do { return .done(try Registry.signing(with: keys) { () throws(RegistryError) in try local.perform(operation, options.context(app: app, actor: who)) }) }
        catch .unconfirmed(let message) { return .needsConfirmation(message) }
        catch { throw error.cliError }
    }

    func pushAudience(app: AppName, version: AppVersion?, channel: ChannelName?) throws(CLIError) -> Int {
        let config = try run { () throws(RegistryError) in try local.apnsConfig(app: app) }
        guard config != nil else {
            throw .failed("app \"\(app)\" has no APNs key: set one with `patchctl apps apns \(app) --team-id T --key-id K --key AuthKey.p8 --topic BUNDLE_ID`")
        }
        let endpoint: APNsEndpoint
        do { endpoint = try APNsEndpoint.current() } catch { throw .failed(error.description) }
        do throws(PushError) {
            return try PushRound.prepare(store: local.pushStore(actor: who), app: app, appVersion: version, channel: channel, reason: "notify", endpoint: endpoint).devices.count
        } catch { throw .failed("push: \(error.description)") }
    }

    func notify(app: AppName, version: AppVersion?, channel: ChannelName?, reason: String) throws(CLIError) -> PushSummary {
        try Notify.run(registry: local, app: app, version: version, channel: channel, reason: reason, actor: who)
    }

    func pending(app: AppName, all: Bool) throws(CLIError) -> [JSON] {
        try run { () throws(RegistryError) in
            try local.pendingChanges(app: app, states: all ? [.pending, .approved, .rejected, .superseded] : [.pending]).map(\.json)
        }
    }

    func approve(app: AppName, id: Int64) throws(CLIError) -> JSON {
        guard !keys.isEmpty else { throw .usage("approving needs --key-file with one of the keys the change waits for") }
        return try run { () throws(RegistryError) in try local.approve(app: app, id: id, keys: keys, actor: who).json }
    }

    func reject(app: AppName, id: Int64, reason: String?) throws(CLIError) -> JSON {
        try run { () throws(RegistryError) in try local.reject(app: app, id: id, reason: reason, actor: who).json }
    }

}
