import Foundation
import PatchCore

/// What a server needs to run the background passes (re-signing the online roles, guards,
/// staged rollouts, pruning) and to say how close each app's metadata is to expiring.
///
/// On PostgreSQL several patchd share the registry and one at a time holds the upkeep lease
/// (PostgresStore+Lease.swift): a row with a deadline, renewed every pass, taken over when
/// its holder stops renewing or cannot re-sign more apps than another instance.
///
/// On SQLite there is no lease: every patchd on the file runs the passes. They are on one box
/// and normally share one key directory; a hung instance then cannot hold the work from the
/// others (a lease could only be held by it), and every pass re-checks what it changes inside
/// its own BEGIN IMMEDIATE write, so a role due is re-signed once, by whichever comes first.
extension Registry {
    /// True when this process runs the background passes: always on SQLite; on PostgreSQL
    /// while its last `renewUpkeepLease` holds (no database round trip), else when a renewal
    /// on the same terms succeeds now.
    public func holdsUpkeepLease() -> Bool {
        guard let store = db as? PostgresStore else { return true }
        return store.holdsUpkeepLease()
    }

    /// Takes or renews the upkeep lease for `seconds` (PostgreSQL), saying how many apps
    /// this process cannot re-sign (`missingOnlineKey`): an instance that can re-sign more of
    /// them takes the lease over at once. True when this process holds it; always on SQLite.
    /// On SQLite it marks the registry served instead (Registry+Serving.swift).
    public func renewUpkeepLease(for seconds: Double, missingKeys: Int) -> Bool {
        guard let store = db as? PostgresStore else { markServing(); return true }
        return store.renewUpkeepLease(seconds: seconds, missingKeys: missingKeys)
    }

    /// Gives the lease up at shutdown, so another instance takes it at its next pass (on
    /// SQLite: the serving mark, so nothing takes this registry as served any more).
    public func releaseUpkeepLease() {
        (db as? PostgresStore)?.releaseUpkeepLease()
        servingMarker = nil
    }

    /// This process in the lease row (PostgreSQL), for its log lines; nil on SQLite.
    public var upkeepLeaseName: String? { (db as? PostgresStore)?.leaseHolder }

    /// Why this machine cannot re-sign the online roles (snapshot, timestamp) of `app`
    /// under its current root: the first key missing (or unreadable) in the key directory,
    /// or nil when every key is here. A read of the root and a stat per key (parsed keys
    /// are kept), cheap enough for every pass.
    public func missingOnlineKey(app: AppName) -> RegistryError? {
        do throws(RegistryError) {
            let root = try currentRoot(app: app).body
            for role in [Role.snapshot, .timestamp] { _ = try keys.signingKeys(app: app, role: role, root: root) }
            return nil
        } catch {
            return error
        }
    }

    /// When the newest metadata of each role of every app expires, as signed.
    public func metadataExpiries() throws(RegistryError) -> [(app: AppName, role: Role, expires: Date)] {
        try newestMetadata(app: nil).compactMap { row in
            guard let app = try? AppName(row.app), let role = Role(rawValue: row.role), let expires = TUFTime.parse(row.expires) else { return nil }
            return (app, role, expires)
        }
    }
}
