#if canImport(CryptoKit) && canImport(Security)
// NOT COMPILED on the Linux machines hotpatch is built and tested on: written against Apple's
// documented Security.framework API (SecKeyCreateWithData, SecKeyVerifySignature), checked by
// the RSA vectors of Tests/PatchCoreTests/Fixtures/seam.json on a Mac.
import Foundation
import Security

/// An RSA public key, which CryptoKit does not verify: Security.framework does.
struct SecKeyVerifier: SignatureVerifier, @unchecked Sendable {
    // A SecKey is immutable and documented as safe to use from several threads.
    let key: SecKey

    /// `pkcs1` is the DER `RSAPublicKey { n, e }`, the form SecKeyCreateWithData takes for RSA.
    init(pkcs1: [UInt8]) throws(CryptoError) {
        let attributes: [CFString: Any] = [kSecAttrKeyType: kSecAttrKeyTypeRSA, kSecAttrKeyClass: kSecAttrKeyClassPublic]
        var error: Unmanaged<CFError>?
        guard let key = SecKeyCreateWithData(Data(pkcs1) as CFData, attributes as CFDictionary, &error) else {
            throw .invalidKey("Security.framework refuses the RSA key: \(error.map { String(describing: $0.takeRetainedValue()) } ?? "unknown")")
        }
        self.key = key
    }

    /// Security.framework's PSS checks a salt as long as the digest — what securesystemslib
    /// signs with. (OpenSSL on Linux reads any salt length from the signature.)
    func isValidSignature(_ signature: [UInt8], for message: [UInt8], algorithm: SignatureAlgorithm) -> Bool {
        let secAlgorithm: SecKeyAlgorithm
        switch algorithm {
        case .rsaPSS(.sha256): secAlgorithm = .rsaSignatureMessagePSSSHA256
        case .rsaPSS(.sha384): secAlgorithm = .rsaSignatureMessagePSSSHA384
        case .rsaPSS(.sha512): secAlgorithm = .rsaSignatureMessagePSSSHA512
        case .rsaPKCS1v15(.sha256): secAlgorithm = .rsaSignatureMessagePKCS1v15SHA256
        case .rsaPKCS1v15(.sha384): secAlgorithm = .rsaSignatureMessagePKCS1v15SHA384
        case .rsaPKCS1v15(.sha512): secAlgorithm = .rsaSignatureMessagePKCS1v15SHA512
        default: return false
        }
        return SecKeyVerifySignature(key, secAlgorithm, Data(message) as CFData, Data(signature) as CFData, nil)
    }
}
#endif
