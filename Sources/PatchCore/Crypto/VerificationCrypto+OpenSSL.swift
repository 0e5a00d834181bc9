#if canImport(CCrypto)
import Foundation

/// The Linux twin of the verification seam, on the OpenSSL wrappers the rest of PatchCore uses.
public struct OpenSSLVerification: VerificationCrypto {
    public init() {}

    public func digest(_ algorithm: DigestAlgorithm, _ data: [UInt8]) -> [UInt8] { Digest.hash(algorithm, data) }

    public func isValidEd25519(signature: [UInt8], for message: [UInt8], publicKey: [UInt8]) -> Bool {
        guard let key = try? PublicKey(ed25519: publicKey) else { return false }
        return key.isValidSignature(signature, for: message, algorithm: .ed25519)
    }

    public func isValidP256(signature: [UInt8], for message: [UInt8], publicKeyDER: [UInt8]) -> Bool {
        let pem = "-----BEGIN PUBLIC KEY-----\n\(Data(publicKeyDER).base64EncodedString(options: .lineLength64Characters))\n-----END PUBLIC KEY-----\n"
        guard let key = try? PublicKey(pem: Array(pem.utf8)), key.ecCurve == "prime256v1" else { return false }
        return key.isValidSignature(signature, for: message, algorithm: .ecdsa(.sha256))
    }

    public func openAESGCM(key: [UInt8], nonce: [UInt8], ciphertext: [UInt8], tag: [UInt8], aad: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard nonce.count == AESGCM.nonceByteCount, tag.count == AESGCM.tagByteCount else { throw .authenticationFailed }
        return try AESGCM.open(nonce + ciphertext + tag, key: key, aad: aad)
    }
}
#endif
