internal import CCrypto
import Foundation
import PatchCore

/// The registry's digests that no device computes: HMAC (report receipts) and hashing in
/// pieces.
extension Digest {
    /// HMAC-SHA256 (RFC 2104) of `data` under `key`, through OpenSSL's one-shot HMAC.
    public static func hmacSHA256(key: [UInt8], _ data: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let done = key.withUnsafeBytes { k in
            data.withUnsafeBytes { d in
                HMAC(DigestAlgorithm.sha256.md, k.baseAddress, Int32(k.count), d.baseAddress?.assumingMemoryBound(to: UInt8.self), d.count, &out, &length)
            }
        }
        // Only a failed allocation makes the one-shot HMAC fail; a hash of nothing would pass as a MAC.
        guard done != nil, length == 32 else { fatalError("HMAC-SHA256 failed: \(CryptoError.fromOpenSSL("hmac"))") }
        return Array(out.prefix(32))
    }

    /// Incremental hashing for data that arrives in pieces (large files).
    public struct Hasher: ~Copyable {
        private let context: OpaquePointer

        public init(_ algorithm: DigestAlgorithm) {
            guard let context = EVP_MD_CTX_new(), EVP_DigestInit_ex2(context, algorithm.md, nil) == 1 else {
                fatalError("EVP_DigestInit_ex2 failed: \(CryptoError.fromOpenSSL("digest init"))")
            }
            self.context = context
        }

        public mutating func update<Bytes: ContiguousBytes>(_ data: Bytes) {
            data.withUnsafeBytes { raw in
                // Updating an initialised context with valid memory cannot fail.
                _ = EVP_DigestUpdate(context, raw.baseAddress, raw.count)
            }
        }

        public consuming func finalize() -> [UInt8] {
            var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
            var length: UInt32 = 0
            _ = EVP_DigestFinal_ex(context, &out, &length)
            return Array(out.prefix(Int(length)))
        }

        deinit { EVP_MD_CTX_free(context) }
    }
}
