import Foundation
import PatchCore

/// Private key material on disk: `{keys}/{app}/{role}.{keyid}.pem` (PKCS#8, mode 0600) and
/// `{keys}/{app}/content.key` (64 hex characters). Signing keys are named by keyid so a
/// rotation writes a new file before the registry commits to it: a crash leaves an unused
/// file, never a registry that names a key nobody has.
public struct KeyStore: Sendable {
    public let directory: URL

    public init(directory: URL) { self.directory = directory }

    func appDirectory(_ app: AppName) -> URL { directory.appendingPathComponent(app.rawValue, isDirectory: true) }

    func signingKeyURL(app: AppName, role: Role, keyID: String) -> URL {
        appDirectory(app).appendingPathComponent("\(role.rawValue).\(keyID).pem")
    }

    public func contentKeyURL(app: AppName) -> URL { appDirectory(app).appendingPathComponent("content.key") }

    /// Writes a new signing key; refuses to overwrite anything.
    @discardableResult
    func store(_ key: Ed25519PrivateKey, app: AppName, role: Role) throws(RegistryError) -> URL {
        let url = signingKeyURL(app: app, role: role, keyID: key.tufKey.keyID)
        let pem: [UInt8]
        do { pem = try key.pemRepresentation() } catch { throw .crypto(error) }
        try SecretFile.create(url, contents: pem)
        return url
    }

    func storeContentKey(_ key: [UInt8], app: AppName) throws(RegistryError) {
        let url = contentKeyURL(app: app)
        if FileManager.default.fileExists(atPath: url.path) {
            throw .conflict("\(url.path) already exists from an earlier app; move it away or restore the registry that used it")
        }
        try SecretFile.create(url, contents: Array((Hex.encode(key) + "\n").utf8))
    }

    func signingKey(app: AppName, role: Role, keyID: String) throws(RegistryError) -> Ed25519PrivateKey {
        let url = signingKeyURL(app: app, role: role, keyID: keyID)
        let pem = try SecretFile.read(url, what: "the \(role.rawValue) key of \(app) (keyid \(keyID.prefix(12))…)")
        let key: Ed25519PrivateKey
        do { key = try Ed25519PrivateKey(pem: pem) } catch { throw .keys("\(url.path): \(error)") }
        guard key.tufKey.keyID == keyID else { throw .keys("\(url.path) does not hold the key its name says (keyid \(keyID.prefix(12))…)") }
        return key
    }

    /// The keys that sign `role` according to `root`, all of which must be present here.
    func signingKeys(app: AppName, role: Role, root: RootBody) throws(RegistryError) -> [Ed25519PrivateKey] {
        guard let entry = root.roles[role] else { throw .internalError("root lists no \(role.rawValue) role") }
        var keys: [Ed25519PrivateKey] = []
        for keyID in entry.keyIDs { keys.append(try signingKey(app: app, role: role, keyID: keyID)) }
        return keys
    }

    public func contentKey(app: AppName) throws(RegistryError) -> [UInt8] {
        let url = contentKeyURL(app: app)
        let bytes = try SecretFile.read(url, what: "the content key of \(app)")
        do { return try BundleCipher.parseKeyFile(bytes) } catch { throw .keys("\(url.path): \(error)") }
    }

    /// Removes key files written for an app whose creation then failed.
    func discard(_ urls: [URL]) {
        for url in urls { try? FileManager.default.removeItem(at: url) }
    }
}

/// Files that hold secrets: created 0600 in a 0700 directory, refused when anyone but the
/// owner can read them (as ssh does), never replacing an existing file.
enum SecretFile {
    static func create(_ url: URL, contents: [UInt8]) throws(RegistryError) {
        let dir = url.deletingLastPathComponent()
        do {
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch { throw .io("cannot create \(dir.path): \(error.localizedDescription)") }
        do { try DurableFile.create(url, with: contents, mode: 0o600) } catch { throw .io(error.message) }
    }

    static func read(_ url: URL, what: String) throws(RegistryError) -> [UInt8] {
        var info = stat()
        guard stat(url.path, &info) == 0 else {
            throw .keys("\(what) is missing: \(url.path) (this machine cannot sign for that role)")
        }
        guard info.st_mode & 0o077 == 0 else {
            throw .keys("\(url.path) is readable by group or others (mode \(String(info.st_mode & 0o777, radix: 8))); run chmod 600 on it")
        }
        guard let data = FileManager.default.contents(atPath: url.path) else { throw .io("cannot read \(url.path)") }
        return Array(data)
    }
}
