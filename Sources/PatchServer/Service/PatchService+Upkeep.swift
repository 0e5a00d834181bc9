import Foundation
import HTTPTransport
import Locking
import PatchCore
import PatchRegistry

extension PatchService {
    /// The re-signing pass (patchd's upkeep, every `min(60, --upkeep-lease / 3)` s). Every
    /// instance checks which apps it could not re-sign (a snapshot or timestamp key missing
    /// here) and reads each role's expiry for `/metrics` and `/healthz`; then it takes or
    /// renews the upkeep lease, saying how many apps it cannot re-sign, and only the holder
    /// re-signs the online roles within half their lifetime of expiring (then guards and
    /// pruning run on it too: `reportUpkeep`, `pushUpkeep`). On SQLite every instance holds it.
    /// A failure is logged once per app and message, and counted every pass
    /// (`hotpatch_resign_failures_total`). `shouldContinue` is asked before each app, so a pass
    /// over many apps can be cut short at shutdown.
    public func refreshExpiring(now: Date = Date(), while shouldContinue: () -> Bool = { true }) {
        registry.withLock { registry in
            guard let apps = try? registry.apps() else { return }
            var missingKeys = 0
            for app in apps {
                guard let missing = registry.missingOnlineKey(app: app.name) else { continue }
                missingKeys += 1
                logOnce("cannot re-sign the online roles of \(app.name) here: \(missing)")
            }
            let held = registry.renewUpkeepLease(for: configuration.upkeepLease, missingKeys: missingKeys)
            if upkeepStatus.noteLease(held: held, appsWithoutKeys: missingKeys), let name = registry.upkeepLeaseName {
                log(held ? "holds the upkeep lease as \(name) (re-signing, guards and pruning run here; \(missingKeys) app(s) it cannot re-sign)"
                         : "does not hold the upkeep lease (another instance runs re-signing, guards and pruning)")
            }
            var failures: [AppName: RegistryError] = [:]
            if held {
                for app in apps where shouldContinue() {
                    do throws(RegistryError) {
                        let refresh = try registry.refreshExpiring(app: app.name, now: now)
                        if !refresh.roles.isEmpty {
                            report(try catalog.refresh(from: registry, app: app.name))
                            log("re-signed \(refresh.roles.map(\.rawValue).joined(separator: ", ")) of \(app.name)")
                        }
                        if let failure = refresh.failure { failures[app.name] = failure }
                    } catch {
                        failures[app.name] = error
                    }
                }
                for (app, failure) in failures { resignFailed(app, failure) }
            }
            if let expiries = try? registry.metadataExpiries() {
                upkeepStatus.note(expiries)
                // Told by the holder only, once per state whichever instance saw it first.
                if held { noteWebhookStates(registry, apps: apps.map(\.name), failures: failures, expiries: expiries, now: now) }
            }
        }
    }

    private func resignFailed(_ app: AppName, _ error: RegistryError) {
        upkeepStatus.countFailure(app: app, error)
        logOnce("cannot re-sign metadata of \(app): \(error)")
    }

    /// At shutdown (`Upkeep.stop`): another instance takes the lease at its next pass.
    public func releaseUpkeepLease() {
        registry.withLock { $0.releaseUpkeepLease() }
    }
}

/// What the upkeep passes found, for `/metrics` and `/healthz`: whether this instance holds
/// the lease, each role's expiry per app (apps × 4 series), and re-sign failures per app and
/// kind of error.
final class UpkeepStatus: Sendable {
    private struct State {
        var leaseHeld: Bool?
        var appsWithoutKeys = 0
        var expiries: [(app: AppName, role: Role, expires: Date)] = []
        var failures: [String: [String: Int]] = [:]
    }

    /// `/healthz` is degraded once a timestamp expires within this many seconds.
    let margin: Double
    private let state = Locked(State())

    init(margin: Double) { self.margin = margin }

    /// Records the lease after a pass; true when it changed (the first pass included).
    func noteLease(held: Bool, appsWithoutKeys: Int) -> Bool {
        state.withLock { state in
            state.appsWithoutKeys = appsWithoutKeys
            defer { state.leaseHeld = held }
            return state.leaseHeld != held
        }
    }

    func note(_ expiries: [(app: AppName, role: Role, expires: Date)]) {
        state.withLock { $0.expiries = expiries }
    }

    func countFailure(app: AppName, _ error: RegistryError) {
        let reason = switch error {
        case .keys, .signaturesNeeded: "keys"
        case .storage: "storage"
        case .crypto: "crypto"
        default: "other"
        }
        state.withLock { $0.failures[app.rawValue, default: [:]][reason, default: 0] += 1 }
    }

    /// Why `/healthz` is degraded: each app whose timestamp expires within the margin (or
    /// has expired). Empty before the first pass.
    func expiring(now: Date = Date()) -> [String] {
        state.withLock { $0.expiries }.filter { $0.role == .timestamp }.compactMap { entry in
            let left = Int(entry.expires.timeIntervalSince(now).rounded(.down))
            guard Double(left) < margin else { return nil }
            return left >= 0 ? "timestamp of app \(entry.app) expires in \(left) s" : "timestamp of app \(entry.app) expired \(-left) s ago"
        }
    }

    /// The Prometheus lines (text format 0.0.4).
    func render(now: Date = Date()) -> String {
        let state = state.withLock { $0 }
        var out = "# HELP hotpatch_upkeep_lease_held 1 while this instance holds the upkeep lease (re-signing, guards, pruning run here); always 1 on SQLite.\n# TYPE hotpatch_upkeep_lease_held gauge\n"
        // Absent until the first pass has asked: a 0 before it would say "another instance
        // holds it" when nothing was asked yet (test_upkeep_lease read that 0 once on SQLite).
        if let held = state.leaseHeld { out += "hotpatch_upkeep_lease_held \(held ? 1 : 0)\n" }
        out += "# HELP hotpatch_upkeep_apps_without_keys Apps whose snapshot or timestamp key is missing from this instance's key directory.\n# TYPE hotpatch_upkeep_apps_without_keys gauge\n"
        out += "hotpatch_upkeep_apps_without_keys \(state.appsWithoutKeys)\n"
        out += "# HELP hotpatch_metadata_expires_in_seconds Seconds until the newest metadata of each role expires (negative: expired).\n# TYPE hotpatch_metadata_expires_in_seconds gauge\n"
        for entry in state.expiries {
            out += "hotpatch_metadata_expires_in_seconds{app=\"\(entry.app)\",role=\"\(entry.role.rawValue)\"} \(Int(entry.expires.timeIntervalSince(now).rounded(.down)))\n"
        }
        out += "# HELP hotpatch_resign_failures_total Re-signing passes that could not re-sign a role that was due, by app and reason (keys: a key is missing or unreadable here).\n# TYPE hotpatch_resign_failures_total counter\n"
        for (app, reasons) in state.failures.sorted(by: { $0.key < $1.key }) {
            for (reason, count) in reasons.sorted(by: { $0.key < $1.key }) {
                out += "hotpatch_resign_failures_total{app=\"\(app)\",reason=\"\(reason)\"} \(count)\n"
            }
        }
        return out
    }
}
