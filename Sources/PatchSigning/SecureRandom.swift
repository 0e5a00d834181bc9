internal import CCrypto
import PatchCore

public enum SecureRandom {
    /// Bytes from OpenSSL's CSPRNG (seeded from the OS). A failure here means the process
    /// cannot produce keys or nonces safely, so it is an error, never a fallback.
    public static func bytes(_ count: Int) throws(CryptoError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        guard count == 0 || RAND_bytes(&out, Int32(count)) == 1 else { throw CryptoError.fromOpenSSL("RAND_bytes") }
        return out
    }
}
