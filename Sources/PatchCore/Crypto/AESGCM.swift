/// AES-256-GCM in the "combined" layout `nonce(12) || ciphertext || tag(16)`, the form
/// CryptoKit's `AES.GCM.SealedBox(combined:)` opens, so iOS apps decrypt natively.
public enum AESGCM {
    public static let keyByteCount = 32
    public static let nonceByteCount = 12
    public static let tagByteCount = 16
    public static let overhead = nonceByteCount + tagByteCount

    /// Through the verification seam (CryptoKit on Apple platforms).
    public static func open(_ combined: [UInt8], key: [UInt8], aad: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard key.count == keyByteCount else { throw .invalidKey("an AES-256 key is 32 bytes, got \(key.count)") }
        guard combined.count >= overhead else { throw .invalidInput("an encrypted bundle is at least \(overhead) bytes, got \(combined.count)") }
        let body = combined.count - tagByteCount
        return try Verification.crypto.openAESGCM(key: key, nonce: Array(combined[..<nonceByteCount]), ciphertext: Array(combined[nonceByteCount..<body]),
                                                  tag: Array(combined[body...]), aad: aad)
    }
}
