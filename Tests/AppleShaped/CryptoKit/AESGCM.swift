import Foundation
internal import CCrypto

/// https://developer.apple.com/documentation/cryptokit/symmetrickey
public struct SymmetricKey: Sendable {
    let bytes: [UInt8]

    /// `init<D>(data: D) where D : ContiguousBytes`
    /// https://developer.apple.com/documentation/cryptokit/symmetrickey/init(data:)
    public init<D: ContiguousBytes>(data: D) { bytes = data.withUnsafeBytes { Array($0) } }
}

/// https://developer.apple.com/documentation/cryptokit/aes
public enum AES {
    /// https://developer.apple.com/documentation/cryptokit/aes/gcm
    public enum GCM {
        /// https://developer.apple.com/documentation/cryptokit/aes/gcm/nonce
        public struct Nonce: Sendable {
            let bytes: [UInt8]

            /// `init<D>(data: D) throws where D : DataProtocol` — refuses fewer than 12 bytes
            /// (https://developer.apple.com/documentation/cryptokit/aes/gcm/nonce/init(copying:)
            /// states the same rule for the newer initialiser).
            public init<D: DataProtocol>(data: D) throws {
                guard data.count >= 12 else { throw CryptoKitError.incorrectParameterSize }
                bytes = Array(data)
            }
        }

        /// https://developer.apple.com/documentation/cryptokit/aes/gcm/sealedbox
        public struct SealedBox: Sendable {
            let nonce: Nonce
            let ciphertext: [UInt8]
            let tag: [UInt8]

            /// `init<C, T>(nonce: AES.GCM.Nonce, ciphertext: C, tag: T) throws where C : DataProtocol, T : DataProtocol`
            /// https://developer.apple.com/documentation/cryptokit/aes/gcm/sealedbox/init(nonce:ciphertext:tag:)
            public init<C: DataProtocol, T: DataProtocol>(nonce: Nonce, ciphertext: C, tag: T) throws {
                guard tag.count == 16 else { throw CryptoKitError.incorrectParameterSize }
                self.nonce = nonce
                self.ciphertext = Array(ciphertext)
                self.tag = Array(tag)
            }
        }

        /// `static func open<AuthenticatedData>(_ sealedBox: AES.GCM.SealedBox, using key: SymmetricKey, authenticating authenticatedData: AuthenticatedData) throws -> Data where AuthenticatedData : DataProtocol`
        /// https://developer.apple.com/documentation/cryptokit/aes/gcm/open(_:using:authenticating:)
        public static func open<AuthenticatedData: DataProtocol>(_ sealedBox: SealedBox, using key: SymmetricKey,
                                                                  authenticating authenticatedData: AuthenticatedData) throws -> Data {
            let cipher: String
            switch key.bytes.count {
            case 16: cipher = "AES-128-GCM"
            case 24: cipher = "AES-192-GCM"
            case 32: cipher = "AES-256-GCM"
            default: throw CryptoKitError.incorrectKeySize
            }
            return try Data(CipherContext().open(cipher, key: key.bytes, box: sealedBox, aad: Array(authenticatedData)))
        }
    }
}

/// Owns one `EVP_CIPHER_CTX*`, freed in deinit: one decryption.
private final class CipherContext {
    private let context: OpaquePointer

    init() throws(CryptoKitError) {
        guard let context = EVP_CIPHER_CTX_new() else { throw .failure() }
        self.context = context
    }

    deinit { EVP_CIPHER_CTX_free(context) }

    func open(_ cipher: String, key: [UInt8], box: AES.GCM.SealedBox, aad: [UInt8]) throws(CryptoKitError) -> [UInt8] {
        var tag = box.tag
        // GCM writes no more than it reads; the slack keeps a pointer valid for an empty message.
        var plaintext = [UInt8](repeating: 0, count: box.ciphertext.count + 16)
        var written: Int32 = 0, aadWritten: Int32 = 0, final: Int32 = 0
        guard EVP_DecryptInit_ex2(context, EVP_get_cipherbyname(cipher), nil, nil, nil) == 1,
              EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_IVLEN, Int32(box.nonce.bytes.count), nil) == 1,
              EVP_DecryptInit_ex2(context, nil, key, box.nonce.bytes, nil) == 1,
              aad.isEmpty || EVP_DecryptUpdate(context, nil, &aadWritten, aad, Int32(aad.count)) == 1,
              EVP_DecryptUpdate(context, &plaintext, &written, box.ciphertext, Int32(box.ciphertext.count)) == 1,
              EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, 16, &tag) == 1 else { throw .failure() }
        let verified = plaintext.withUnsafeMutableBufferPointer { EVP_DecryptFinal_ex(context, $0.baseAddress! + Int(written), &final) }
        guard verified == 1 else {
            ERR_clear_error()
            throw .authenticationFailure
        }
        return Array(plaintext.prefix(Int(written + final)))
    }
}
