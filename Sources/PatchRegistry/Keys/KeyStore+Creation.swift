import Foundation
import PatchCore
import PatchSigning

/// Putting a new app's key directory in place so that `apps create` killed at any point can
/// simply be run again, and the keys of an app that exists are never touched.
///
/// Everything here runs inside the create's write transaction, which serializes every create
/// on one registry, so no other create of this registry is ever half way through:
/// 1. `{keys}/{app}` must be absent or empty, or be an install of this registry whose
///    transaction never committed (its marker names this registry, and no app of that name
///    exists): its keys never signed anything the registry kept, so it is removed. Anything
///    else is refused with a message: those are keys of an app this registry does not know
///    (another registry, a restored backup), which a shipped app may trust.
/// 2. The keys and the marker (the registry and this install) are written to
///    `{keys}/.staging.{registry}.{app}.{random}/`, then the directory takes its name in one
///    rename(2).
/// 3. After the commit the marker is removed. (Killed in between, the marker stays, and the
///    next create finds the app committed and only removes the stale marker.)
extension KeyStore {
    static let uncommittedMarker = ".uncommitted"
    static let contentKeyFileName = "content.key"
    static let jspatchKeyFileName = "jspatch-rsa.pem"

    static func signingKeyFileName(role: Role, keyID: String) -> String { "\(role.rawValue).\(keyID).pem" }

    /// Writes the app's key directory; inside the create's transaction only. Returns what
    /// names this install in its marker, for `removeUncommitted`.
    func install(_ new: NewAppKeys, app: AppName, registryID: String) throws(RegistryError) -> String {
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch { throw .io("cannot create \(directory.path): \(error.localizedDescription)") }
        removeStaging(of: registryID)
        try makeRoom(app: app, registryID: registryID)
        let random = (try? SecureRandom.bytes(6)).map(Hex.encode) ?? String(UInt64.random(in: 0...UInt64.max), radix: 16)
        let staging = directory.appendingPathComponent(".staging.\(registryID).\(app.rawValue).\(random)", isDirectory: true)
        let install = "\(registryID) \(random)"
        do throws(RegistryError) {
            for (role, key) in new.roles {
                let pem: [UInt8]
                do { pem = try key.pemRepresentation() } catch { throw .crypto(error) }
                try SecretFile.create(staging.appendingPathComponent(KeyStore.signingKeyFileName(role: role, keyID: key.tufKey.keyID)), contents: pem)
            }
            if let contentKey = new.contentKey {
                try SecretFile.create(staging.appendingPathComponent(KeyStore.contentKeyFileName), contents: Array((Hex.encode(contentKey) + "\n").utf8))
            }
            if let jspatch = new.jspatch {
                try SecretFile.create(staging.appendingPathComponent(KeyStore.jspatchKeyFileName), contents: jspatch.privatePEM)
            }
            try SecretFile.create(staging.appendingPathComponent(KeyStore.uncommittedMarker), contents: Array(install.utf8))
            CrashPoint.hit("create.staged")
            guard rename(staging.path, appDirectory(app).path) == 0 else {
                throw .io("cannot move the new keys to \(appDirectory(app).path): \(String(cString: strerror(errno)))")
            }
            DurableFile.sync(directory: directory)
        } catch {
            try? FileManager.default.removeItem(at: staging)
            throw error
        }
        return install
    }

    /// After the commit: the keys belong to a committed app from now on.
    func markCommitted(app: AppName) {
        let marker = appDirectory(app).appendingPathComponent(KeyStore.uncommittedMarker)
        if unlink(marker.path) == 0 { DurableFile.sync(directory: appDirectory(app)) }
    }

    /// When the create fails after `install`: removes the directory if it is still that
    /// install's (never one another create has put there since).
    func removeUncommitted(app: AppName, install: String) {
        if marker(of: app) == install {
            try? FileManager.default.removeItem(at: appDirectory(app))
            DurableFile.sync(directory: directory)
        }
    }

    private func marker(of app: AppName) -> String? {
        let url = appDirectory(app).appendingPathComponent(KeyStore.uncommittedMarker)
        return FileManager.default.contents(atPath: url.path).map { String(decoding: $0, as: UTF8.self) }
    }

    private func makeRoom(app: AppName, registryID: String) throws(RegistryError) {
        let url = appDirectory(app)
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: url.path) else { return }
        if entries.isEmpty || marker(of: app)?.hasPrefix("\(registryID) ") == true {
            do { try FileManager.default.removeItem(at: url) } catch { throw .io("cannot remove \(url.path): \(error.localizedDescription)") }
            DurableFile.sync(directory: directory)
            return
        }
        throw .conflict("""
            \(url.path) holds keys no app of this registry uses (\(entries.filter { !$0.hasPrefix(".") }.sorted().joined(separator: ", "))): \
            keys of an app created by another registry or lost with a restored backup, or left by a create interrupted \
            before patchctl made creation crash-safe. They are never overwritten, since a shipped app may trust them: \
            if none does, move the directory away and run `apps create` again; otherwise restore the registry that used them
            """)
    }

    /// Staging directories of this registry's creates that were killed before their rename:
    /// none is live, since this runs under the registry's write lock.
    private func removeStaging(of registryID: String) {
        let prefix = ".staging.\(registryID)."
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [] where entry.hasPrefix(prefix) {
            try? FileManager.default.removeItem(at: directory.appendingPathComponent(entry))
        }
    }
}
