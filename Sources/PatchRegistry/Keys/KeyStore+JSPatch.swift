import Foundation
import PatchCore
import PatchSigning

/// The JSPatch Loader RSA key of an app: `{keys}/{app}/jspatch-rsa.pem`, PKCS#8 PEM, mode
/// 0600, under the same rules as every other key file (`SecretFile`).
extension KeyStore {
    public func jspatchKeyURL(app: AppName) -> URL { appDirectory(app).appendingPathComponent(KeyStore.jspatchKeyFileName) }

    /// Writes the key; refuses to replace a file left by an earlier app of the same name.
    func storeJSPatchKey(_ material: JSPatchKeyMaterial, app: AppName) throws(RegistryError) -> URL {
        let url = jspatchKeyURL(app: app)
        if FileManager.default.fileExists(atPath: url.path) {
            throw .conflict("\(url.path) already exists from an earlier app; move it away or restore the registry that used it")
        }
        try SecretFile.create(url, contents: material.privatePEM)
        return url
    }

    /// The key, checked against the public key the registry recorded for the app.
    func jspatchKey(app: AppName, publicKeySHA256: String) throws(RegistryError) -> RSAPrivateKey {
        let url = jspatchKeyURL(app: app)
        let pem = try SecretFile.read(url, what: "the JSPatch RSA key of \(app)")
        let key: RSAPrivateKey
        let der: [UInt8]
        do {
            key = try RSAPrivateKey(pem: pem)
            der = try key.publicKeyDER()
        } catch { throw .keys("\(url.path): \(error)") }
        guard Digest.sha256Hex(der) == publicKeySHA256 else {
            throw .keys("\(url.path) is not the JSPatch key this app's apps embed (public key sha256 \(publicKeySHA256.prefix(12))…)")
        }
        return key
    }
}
