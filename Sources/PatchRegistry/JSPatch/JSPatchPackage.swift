import Foundation
import PatchCore
import PatchSigning

/// One patch in JSPatch Loader's package format (`vN.zip`), what apps built with the
/// open-source `JPLoader` download from `{rootUrl}/{appVersion}/v{N}.zip` and verify with
/// the RSA public key compiled into them (docs/PROTOCOL.md, "JSPatch Loader compatibility"):
///
/// - `vN.zip` holds two stored entries, `script.zip` then `key`;
/// - `script.zip` holds one deflated entry, `main.js`: the patch's script;
/// - `key` is the RSA PKCS#1 v1.5 type-1 private-key encryption of the 32-character
///   lowercase hex MD5 of the `script.zip` bytes.
///
/// Both zips are reproducible (`ZipArchive`) and the padding is deterministic, so the same
/// script and key always give the same bytes.
public struct JSPatchPackage: Sendable, Equatable {
    public let appVersion: AppVersion
    public let number: Int
    /// The rollout of the patch when the package was built (from the targets listing).
    public let rollout: Int
    /// The whole `vN.zip`.
    public let bytes: [UInt8]
    /// The hex MD5 of `script.zip`: the string the `key` entry carries.
    public let scriptMD5: String

    /// `v{N}.zip`, the last component of the URL and of the exported file.
    public var fileName: String { "v\(number).zip" }

    public static func build(script: [UInt8], appVersion: AppVersion, number: Int, rollout: Int,
                             key: RSAPrivateKey) throws(RegistryError) -> JSPatchPackage {
        do {
            let scriptZip = try ZipArchive.archive([ZipEntry(name: "main.js", bytes: script, deflate: true)])
            let md5 = Digest.md5Hex(scriptZip)
            let signature: [UInt8]
            do { signature = try key.privateEncryptPKCS1(Array(md5.utf8)) } catch { throw RegistryError.crypto(error) }
            let package = try ZipArchive.archive([
                ZipEntry(name: "script.zip", bytes: scriptZip, deflate: false),
                ZipEntry(name: "key", bytes: signature, deflate: false),
            ])
            return JSPatchPackage(appVersion: appVersion, number: number, rollout: rollout, bytes: package, scriptMD5: md5)
        } catch let error as ZipError {
            throw .internalError("building \(appVersion) v\(number).zip: \(error)")
        } catch {
            throw .wrapping(error)
        }
    }
}
