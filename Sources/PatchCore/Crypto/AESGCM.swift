internal import CCrypto

/// AES-256-GCM in the "combined" layout `nonce(12) || ciphertext || tag(16)`, the form
/// CryptoKit's `AES.GCM.SealedBox(combined:)` opens, so iOS apps decrypt natively.
public enum AESGCM {
    public static let keyByteCount = 32
    public static let nonceByteCount = 12
    public static let tagByteCount = 16
    public static let overhead = nonceByteCount + tagByteCount

    public static func seal(_ plaintext: [UInt8], key: [UInt8], aad: [UInt8], nonce givenNonce: [UInt8]? = nil) throws(CryptoError) -> [UInt8] {
        guard key.count == keyByteCount else { throw .invalidKey("an AES-256 key is 32 bytes, got \(key.count)") }
        let nonce: [UInt8]
        if let givenNonce { nonce = givenNonce } else { nonce = try SecureRandom.bytes(nonceByteCount) }
        guard nonce.count == nonceByteCount else { throw .invalidInput("a GCM nonce is 12 bytes, got \(nonce.count)") }
        guard let ctx = EVP_CIPHER_CTX_new() else { throw CryptoError.fromOpenSSL("EVP_CIPHER_CTX_new") }
        defer { EVP_CIPHER_CTX_free(ctx) }
        guard EVP_EncryptInit_ex2(ctx, FetchedDigests.shared.aes256gcm, key, nonce, nil) == 1 else { throw CryptoError.fromOpenSSL("encrypt init") }

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

    public static func open(_ combined: [UInt8], key: [UInt8], aad: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard key.count == keyByteCount else { throw .invalidKey("an AES-256 key is 32 bytes, got \(key.count)") }
        guard combined.count >= overhead else { throw .invalidInput("an encrypted bundle is at least \(overhead) bytes, got \(combined.count)") }
        guard let ctx = EVP_CIPHER_CTX_new() else { throw CryptoError.fromOpenSSL("EVP_CIPHER_CTX_new") }
        defer { EVP_CIPHER_CTX_free(ctx) }
        let bodyCount = combined.count - overhead
        var plaintext = [UInt8](repeating: 0, count: bodyCount)
        let ok = combined.withUnsafeBufferPointer { input -> Bool in
            let base = input.baseAddress!
            guard EVP_DecryptInit_ex2(ctx, FetchedDigests.shared.aes256gcm, key, base, nil) == 1 else { return false }
            var length: Int32 = 0
            if !aad.isEmpty {
                guard EVP_DecryptUpdate(ctx, nil, &length, aad, Int32(aad.count)) == 1 else { return false }
            }
            var written: Int32 = 0
            let decrypted = plaintext.withUnsafeMutableBufferPointer { out -> Bool in
                if bodyCount > 0 {
                    guard EVP_DecryptUpdate(ctx, out.baseAddress, &written, base + nonceByteCount, Int32(bodyCount)) == 1 else { return false }
                }
                let tag = UnsafeMutableRawPointer(mutating: base + nonceByteCount + bodyCount)
                guard EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, Int32(tagByteCount), tag) == 1 else { return false }
                var final: Int32 = 0
                var scratch = [UInt8](repeating: 0, count: 16)
                return EVP_DecryptFinal_ex(ctx, &scratch, &final) == 1
            }
            return decrypted
        }
        guard ok else {
            ERR_clear_error()
            // Wipe what was decrypted before authentication failed: unauthenticated
            // plaintext must never reach a caller.
            for i in plaintext.indices { plaintext[i] = 0 }
            throw .authenticationFailed
        }
        return plaintext
    }
}
