#if canImport(CryptoKit)
// NOT COMPILED on the Linux machines hotpatch is built and tested on: written against Apple's
// documented CryptoKit API, kept this small so it can be read against it line by line. Its
// Linux twin passes the vectors in Tests/PatchCoreTests/CryptoSeamTests.swift; on a Mac the
// same tests run through this file.
import CryptoKit
import Foundation

public struct CryptoKitVerification: VerificationCrypto {
    public init() {}

    public func digest(_ algorithm: DigestAlgorithm, _ data: [UInt8]) -> [UInt8] {
        switch algorithm {
        case .md5: return Array(Insecure.MD5.hash(data: data))
        case .sha256: return Array(SHA256.hash(data: data))
        case .sha384: return Array(SHA384.hash(data: data))
        case .sha512: return Array(SHA512.hash(data: data))
        }
    }

    public func isValidEd25519(signature: [UInt8], for message: [UInt8], publicKey: [UInt8]) -> Bool {
        guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: publicKey) else { return false }
        return key.isValidSignature(signature, for: message)
    }

    public func isValidP256(signature: [UInt8], for message: [UInt8], publicKeyDER: [UInt8]) -> Bool {
        guard let key = try? P256.Signing.PublicKey(derRepresentation: publicKeyDER),
            let parsed = try? P256.Signing.ECDSASignature(derRepresentation: signature) else { return false }
        // Hashes `message` with SHA-256 itself.
        return key.isValidSignature(parsed, for: message)
    }

    public func openAESGCM(key: [UInt8], nonce: [UInt8], ciphertext: [UInt8], tag: [UInt8], aad: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard key.count == 32 else { throw .invalidKey("an AES-256 key is 32 bytes, got \(key.count)") }
        do {
            let box = try AES.GCM.SealedBox(nonce: try AES.GCM.Nonce(data: nonce), ciphertext: ciphertext, tag: tag)
            return Array(try AES.GCM.open(box, using: SymmetricKey(data: key), authenticating: aad))
        } catch {
            throw .authenticationFailed
        }
    }
}
#endif
