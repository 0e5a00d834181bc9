import Foundation
import HTTPTransport
import PatchCore
import PatchRegistry

/// The app versions devices check for (issue 44): counted on the check path
/// (`AskedVersions`), added to the registry here, off the request path, and read back by
/// `GET /v1/apps/{app}/versions` (`patchctl apps versions`, the console's app page).
extension PatchService {
    /// Adds what this instance counted since the last pass to the registry (each instance adds
    /// its own; on PostgreSQL they sum), prunes days past the window once a day, and reloads
    /// which versions each app that was asked about has on record (`AskedVersions.establish`),
    /// every app's on the first pass. Run by the upkeep pass every minute and at shutdown. A
    /// pass that cannot write loses its counts, logged once: they are advisory, and holding
    /// them would let a registry outage grow memory.
    public func flushAskedVersions(now: Date = Date()) {
        let counts = askedVersions.take()
        var byApp: [AppName: [String: Int]] = [:]
        for (app, versions) in counts { if let name = try? AppName(app) { byApp[name] = versions } }
        let firstPass = askedVersions.firstFlush()
        registry.withLock { registry in
            do throws(RegistryError) {
                try registry.addVersionChecks(byApp, now: now)
                if askedVersions.pruneDue(today: String(TUFTime.format(now).prefix(10))) { try registry.pruneVersionChecks(now: now) }
                let apps = firstPass ? try registry.apps().map(\.name) : Array(byApp.keys)
                for app in apps {
                    askedVersions.establish(app: app.rawValue, versions: try registry.establishedVersions(app: app, limit: AskedVersions.establishedLimit, now: now))
                }
            } catch {
                logOnce("the app versions devices checked for could not be recorded: \(error)")
            }
        }
    }

    /// `GET /v1/apps/{app}/versions`: the versions the app's devices checked for in the last
    /// `Registry.askedVersionsDays` days, the most asked first (what instances had added by
    /// their last upkeep pass).
    func askedVersionList(_ request: HTTPRequest, _ p: PathParameters) throws(HTTPError) -> HTTPResponse {
        let app = try appCatalog(p["app"]).app
        let versions = try read { registry throws(RegistryError) in try registry.askedVersions(app: app) }
        return .json(["app": .string(app.rawValue), "days": .int(Int64(Registry.askedVersionsDays)), "versions": .array(versions.map(\.json))])
    }
}
