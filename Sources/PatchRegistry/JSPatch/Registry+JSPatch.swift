import Foundation
import PatchCore
import PatchSigning

/// JSPatch Loader compatibility: an opt-in RSA key per plaintext app, and the `vN.zip`
/// packages of its listed patches (docs/PROTOCOL.md, "JSPatch Loader compatibility").
extension Registry {
    /// The app's JSPatch key as recorded, or nil when the app serves no JSPatch packages.
    public func jspatchKey(app name: AppName) throws(RegistryError) -> JSPatchKeyInfo? {
        _ = try app(name)
        return try read { () throws(StorageError) in
            try db.query("""
                SELECT bits, public_key_pem, public_key_sha256, created_at, created_by FROM jspatch_keys WHERE app = ?
                """, [.text(name.rawValue)]) { s in
                JSPatchKeyInfo(app: name, bits: Int(s.int(0)), publicKeyPEM: s.text(1), publicKeySHA256: s.text(2),
                               createdAt: s.text(3), createdBy: s.text(4))
            }.first
        }
    }

    /// Gives an existing plaintext app its JSPatch key: the key file first, then the record
    /// and an `app.jspatch` audit event in one transaction. A key, once given, is never
    /// replaced: apps in the field embed its public key.
    @discardableResult
    public func enableJSPatch(app name: AppName, key: RSAPrivateKey, actor: Actor, now: Date = Date()) throws(RegistryError) -> JSPatchKeyInfo {
        let material = try JSPatchKeyMaterial(key)
        var written: URL?
        do {
            return try write { () throws -> JSPatchKeyInfo in
                let app = try self.app(name)
                try JSPatchKeyMaterial.checkApp(encrypted: app.encrypted, app: name)
                if try jspatchKey(app: name) != nil {
                    throw RegistryError.conflict("app \"\(name)\" already has a JSPatch key, and apps embed its public key: it cannot be replaced (print it with `patchctl apps jspatch-key \(name)`)")
                }
                written = try keys.storeJSPatchKey(material, app: name)
                let info = try recordJSPatchKey(material, app: name, actor: actor, at: now)
                try AuditLog.append(db, app: name.rawValue, actor: actor, action: "app.jspatch", details: material.auditDetails, at: now)
                return info
            }
        } catch {
            // Only the file this call wrote: never one that belongs to the app already.
            if let written { keys.discard([written]) }
            throw error
        }
    }

    /// Inserts the key's record inside the caller's transaction (`createApp`, `enableJSPatch`).
    @discardableResult
    func recordJSPatchKey(_ material: JSPatchKeyMaterial, app: AppName, actor: Actor, at now: Date) throws(StorageError) -> JSPatchKeyInfo {
        let time = TUFTime.format(now)
        try db.run("""
            INSERT INTO jspatch_keys(app, bits, public_key_pem, public_key_sha256, created_at, created_by) VALUES (?,?,?,?,?,?)
            """, [.text(app.rawValue), .int(Int64(material.key.bitCount)), .text(material.publicPEM),
                  .text(material.publicKeySHA256), .text(time), .text(actor.name)])
        return JSPatchKeyInfo(app: app, bits: material.key.bitCount, publicKeyPEM: material.publicPEM,
                              publicKeySHA256: material.publicKeySHA256, createdAt: time, createdBy: actor.name)
    }

    /// The package of every patch the current targets metadata lists (the same patches the
    /// TUF targets and the simple check serve), sorted by app version and number, signed with
    /// the app's key; nil when the app has no JSPatch key. Needs the key file.
    public func jspatchPackages(app name: AppName) throws(RegistryError) -> [JSPatchPackage]? {
        guard let info = try jspatchKey(app: name) else { return nil }
        guard !(try app(name)).encrypted else { throw .internalError("app \(name) is encrypted but has a JSPatch key") }
        let key = try keys.jspatchKey(app: name, publicKeySHA256: info.publicKeySHA256)
        let body: TargetsBody
        do { body = try SignedTargets(bytes: try latestMetadata(app: name, role: .targets).bytes).body } catch {
            throw .internalError("stored targets of \(name) do not parse: \(error)")
        }
        var packages: [JSPatchPackage] = []
        for (path, file) in body.targets {
            // The JSPatch Loader has no notion of channels or conditions: its routes serve
            // unconditional production patches only.
            guard let target = PatchTargetInfo(path: path, file: file), target.encryption == nil, target.channel == .production,
                  target.conditions == nil,
                  let version = try? AppVersion(target.appVersion), let sha256 = file.hashes["sha256"] else { continue }
            packages.append(try JSPatchPackage.build(script: try servedBytes(sha256: sha256), appVersion: version,
                                                     number: target.patch, rollout: target.rollout, key: key))
        }
        return packages.sorted { ($0.appVersion, $0.number) < ($1.appVersion, $1.number) }
    }
}
