internal import CCrypto
import PatchCore

extension AESGCM {
    public static func seal(_ plaintext: [UInt8], key: [UInt8], aad: [UInt8], nonce givenNonce: [UInt8]? = nil) throws(CryptoError) -> [UInt8] {
        guard key.count == keyByteCount else { throw .invalidKey("an AES-256 key is 32 bytes, got \(key.count)") }
        let nonce: [UInt8]
        if let givenNonce { nonce = givenNonce } else { nonce = try SecureRandom.bytes(nonceByteCount) }
        guard nonce.count == nonceByteCount else { throw .invalidInput("a GCM nonce is 12 bytes, got \(nonce.count)") }
        guard let ctx = EVP_CIPHER_CTX_new() else { throw CryptoError.fromOpenSSL("EVP_CIPHER_CTX_new") }
        defer { EVP_CIPHER_CTX_free(ctx) }
        guard EVP_EncryptInit_ex2(ctx, FetchedAlgorithm.aes256gcm.pointer, key, nonce, nil) == 1 else { throw CryptoError.fromOpenSSL("encrypt init") }

        var length: Int32 = 0
        if !aad.isEmpty {
            guard EVP_EncryptUpdate(ctx, nil, &length, aad, Int32(aad.count)) == 1 else { throw CryptoError.fromOpenSSL("encrypt AAD") }
        }
        var ok = false
        // Uninitialised: every byte is written below, and zeroing a large bundle first
        // would cost as much as encrypting it.
        let out = [UInt8](unsafeUninitializedCapacity: nonceByteCount + plaintext.count + tagByteCount) { buffer, count in
            let base = buffer.baseAddress!
            nonce.withUnsafeBufferPointer { base.initialize(from: $0.baseAddress!, count: nonceByteCount) }
            let body = base + nonceByteCount
            var written: Int32 = 0
            var final: Int32 = 0
            ok = (plaintext.isEmpty || EVP_EncryptUpdate(ctx, body, &written, plaintext, Int32(plaintext.count)) == 1)
                && EVP_EncryptFinal_ex(ctx, body + Int(written), &final) == 1
                && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, Int32(tagByteCount), body + plaintext.count) == 1
            count = ok ? buffer.count : 0
        }
        guard ok else { throw CryptoError.fromOpenSSL("AES-256-GCM seal") }
        return out
    }
}

extension BundleCipher {
    public static func seal(_ plaintext: [UInt8], key: [UInt8], app: String, appVersion: String, patch: Int, nonce: [UInt8]? = nil) throws(CryptoError) -> [UInt8] {
        try AESGCM.seal(plaintext, key: key, aad: associatedData(app: app, appVersion: appVersion, patch: patch), nonce: nonce)
    }
}
