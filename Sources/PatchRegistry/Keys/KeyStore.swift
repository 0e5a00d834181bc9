import Foundation
import Locking
import PatchCore
import PatchSigning

/// Private key material on disk: `{keys}/{app}/{role}.{keyid}.pem` (PKCS#8, mode 0600; an
/// Ed25519 key, or the ECDSA P-256 root key imported with `apps create --root-key`) and
/// `{keys}/{app}/content.key` (64 hex characters). Signing keys are named by keyid so a
/// rotation writes a new file before the registry commits to it: a crash leaves an unused
/// file, never a registry that names a key nobody has.
public struct KeyStore: Sendable {
    public let directory: URL
    /// Keys already parsed, by keyid and the file they came from: OpenSSL's PEM decoding
    /// costs more than the rest of a publish.
    private let loaded = LoadedKeys()

    public init(directory: URL) { self.directory = directory }

    func appDirectory(_ app: AppName) -> URL { directory.appendingPathComponent(app.rawValue, isDirectory: true) }

    func signingKeyURL(app: AppName, role: Role, keyID: String) -> URL {
        appDirectory(app).appendingPathComponent(KeyStore.signingKeyFileName(role: role, keyID: keyID))
    }

    public func contentKeyURL(app: AppName) -> URL { appDirectory(app).appendingPathComponent(KeyStore.contentKeyFileName) }

    /// Writes a new signing key; refuses to overwrite anything.
    @discardableResult
    func store(_ key: SigningKey, app: AppName, role: Role) throws(RegistryError) -> URL {
        let url = signingKeyURL(app: app, role: role, keyID: key.tufKey.keyID)
        let pem: [UInt8]
        do { pem = try key.pemRepresentation() } catch { throw .crypto(error) }
        try SecretFile.create(url, contents: pem)
        return url
    }

    func signingKey(app: AppName, role: Role, keyID: String) throws(RegistryError) -> SigningKey {
        let url = signingKeyURL(app: app, role: role, keyID: keyID)
        let what = "the \(role.rawValue) key of \(app) (keyid \(keyID.prefix(12))…)"
        // Checked on every use (a key moved offline or opened up to others is refused at once);
        // parsed again only when the file changed.
        let identity = try SecretFile.check(url, what: what)
        if let key = loaded.key(keyID, identity: identity) { return key }
        let pem = try SecretFile.read(url, what: what)
        let key: SigningKey
        do { key = try SigningKey(pem: pem) } catch { throw .keys("\(url.path): \(error)") }
        guard key.tufKey.keyID == keyID else { throw .keys("\(url.path) does not hold the key its name says (keyid \(keyID.prefix(12))…)") }
        loaded.store(key, keyID, identity: identity)
        return key
    }

    /// The keys that sign `role` according to `root`, all of which must be present here.
    func signingKeys(app: AppName, role: Role, root: RootBody) throws(RegistryError) -> [SigningKey] {
        guard let entry = root.roles[role] else { throw .internalError("root lists no \(role.rawValue) role") }
        var keys: [SigningKey] = []
        for keyID in entry.keyIDs { keys.append(try signingKey(app: app, role: role, keyID: keyID)) }
        return keys
    }

    public func contentKey(app: AppName) throws(RegistryError) -> [UInt8] {
        let url = contentKeyURL(app: app)
        let bytes = try SecretFile.read(url, what: "the content key of \(app)")
        do { return try BundleCipher.parseKeyFile(bytes) } catch { throw .keys("\(url.path): \(error)") }
    }

    /// Removes key files written for a change that then failed, or replaced by one that committed.
    func discard(_ urls: [URL]) {
        for url in urls { try? FileManager.default.removeItem(at: url) }
    }
}

/// Which file a key was parsed from: device, inode, size and modification time.
struct FileIdentity: Equatable {
    let device: UInt64
    let inode: UInt64
    let size: Int64
    let modified: Int64
    let modifiedNanoseconds: Int
}

private final class LoadedKeys: Sendable {
    private let keys = Locked<[String: (FileIdentity, SigningKey)]>([:])

    func key(_ keyID: String, identity: FileIdentity) -> SigningKey? {
        keys.withLock { keys in
            guard let (stored, key) = keys[keyID], stored == identity else { return nil }
            return key
        }
    }

    func store(_ key: SigningKey, _ keyID: String, identity: FileIdentity) {
        keys.withLock { $0[keyID] = (identity, key) }
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

    /// The file must exist and be private to its owner.
    @discardableResult
    static func check(_ url: URL, what: String) throws(RegistryError) -> FileIdentity {
        var info = stat()
        guard stat(url.path, &info) == 0 else {
            throw .keys("\(what) is missing: \(url.path) (this machine cannot sign for that role)")
        }
        guard info.st_mode & 0o077 == 0 else {
            throw .keys("\(url.path) is readable by group or others (mode \(String(info.st_mode & 0o777, radix: 8))); run chmod 600 on it")
        }
        return FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size),
                            modified: Int64(info.st_mtim.tv_sec), modifiedNanoseconds: Int(info.st_mtim.tv_nsec))
    }

    static func read(_ url: URL, what: String) throws(RegistryError) -> [UInt8] {
        try check(url, what: what)
        guard let data = FileManager.default.contents(atPath: url.path) else { throw .io("cannot read \(url.path)") }
        return Array(data)
    }
}
