#if canImport(CCrypto)
internal import CCrypto

/// The Linux backend of the verification seam, on libcrypto.
public struct OpenSSLVerification: VerificationCrypto {
    public init() {}

    public func digest(_ algorithm: DigestAlgorithm, _ data: UnsafeRawBufferPointer) -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { fatalError("EVP_MD_CTX_new failed: \(CryptoError.fromOpenSSL("digest"))") }
        defer { EVP_MD_CTX_free(context) }
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        // With a fetched digest and valid memory only a failed allocation makes these fail;
        // a digest of nothing would pass for a hash, so that is fatal, never an empty answer.
        guard EVP_DigestInit_ex2(context, algorithm.md, nil) == 1, EVP_DigestUpdate(context, data.baseAddress, data.count) == 1,
            EVP_DigestFinal_ex(context, &out, &length) == 1 else {
            fatalError("\(algorithm) failed: \(CryptoError.fromOpenSSL("digest"))")
        }
        return Array(out.prefix(Int(length)))
    }

    public func verifier(for key: SubjectPublicKeyInfo) throws(CryptoError) -> any SignatureVerifier {
        // Ed25519 (every key patchctl makes) from its raw bytes; other keys through the DER.
        OpenSSLVerifier(box: key.algorithm == .ed25519 ? try PKeyBox(ed25519: key.publicKeyBytes) : try PKeyBox(spki: key.der))
    }

    public func openAESGCM(key: [UInt8], nonce: [UInt8], ciphertext: [UInt8], tag: [UInt8], aad: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard key.count == AESGCM.keyByteCount else { throw .invalidKey("an AES-256 key is 32 bytes, got \(key.count)") }
        guard nonce.count == AESGCM.nonceByteCount, tag.count == AESGCM.tagByteCount else { throw .authenticationFailed }
        guard let ctx = EVP_CIPHER_CTX_new() else { throw CryptoError.fromOpenSSL("EVP_CIPHER_CTX_new") }
        defer { EVP_CIPHER_CTX_free(ctx) }
        var plaintext = [UInt8](repeating: 0, count: ciphertext.count)
        var length: Int32 = 0
        var final: Int32 = 0
        var scratch = [UInt8](repeating: 0, count: 16)
        var tag = tag
        let ok = EVP_DecryptInit_ex2(ctx, FetchedAlgorithm.aes256gcm.pointer, key, nonce, nil) == 1
            && (aad.isEmpty || EVP_DecryptUpdate(ctx, nil, &length, aad, Int32(aad.count)) == 1)
            && (ciphertext.isEmpty || EVP_DecryptUpdate(ctx, &plaintext, &length, ciphertext, Int32(ciphertext.count)) == 1)
            && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, Int32(AESGCM.tagByteCount), &tag) == 1
            && EVP_DecryptFinal_ex(ctx, &scratch, &final) == 1
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

/// A public key parsed once by OpenSSL.
struct OpenSSLVerifier: SignatureVerifier {
    let box: PKeyBox

    func isValidSignature(_ signature: [UInt8], for message: [UInt8], algorithm: SignatureAlgorithm) -> Bool {
        guard let ctx = EVP_MD_CTX_new() else { return false }
        defer {
            EVP_MD_CTX_free(ctx)
            // A refusal leaves reasons on the thread's queue; a later failure must not report them.
            ERR_clear_error()
        }
        var pctx: OpaquePointer?
        let type = box.baseID
        switch algorithm {
        case .ed25519:
            guard type == EVP_PKEY_ED25519, signature.count == 64, EVP_DigestVerifyInit(ctx, nil, nil, nil, box.pointer) == 1 else { return false }
        case .ecdsa(let digest):
            guard type == EVP_PKEY_EC, EVP_DigestVerifyInit(ctx, nil, digest.md, nil, box.pointer) == 1 else { return false }
        case .rsaPSS(let digest):
            guard type == EVP_PKEY_RSA, EVP_DigestVerifyInit(ctx, &pctx, digest.md, nil, box.pointer) == 1, let pctx,
                EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) == 1,
                EVP_PKEY_CTX_set_rsa_mgf1_md(pctx, digest.md) == 1,
                EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_AUTO) == 1 else { return false }
        case .rsaPKCS1v15(let digest):
            guard type == EVP_PKEY_RSA, EVP_DigestVerifyInit(ctx, &pctx, digest.md, nil, box.pointer) == 1, let pctx,
                EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PADDING) == 1 else { return false }
        }
        return EVP_DigestVerify(ctx, signature, signature.count, message, message.count) == 1
    }
}
#endif
