internal import CCrypto
import Foundation

/// The hash algorithms hotpatch computes: what it lists in TUF `hashes` and patch headers
/// (md5, sha256), what it accepts from other TUF tools' `hashes` (also sha384, sha512), and
/// the digests of the signature schemes it verifies (section 3 of docs/PROTOCOL.md).
public enum DigestAlgorithm: String, Sendable, CaseIterable {
    case md5
    case sha256
    case sha384
    case sha512

    public var byteCount: Int {
        switch self {
        case .md5: return 16
        case .sha256: return 32
        case .sha384: return 48
        case .sha512: return 64
        }
    }

    /// A collision-resistant hash: at least one of these must be listed for a file to be
    /// accepted (md5 alone binds nothing an attacker cannot forge).
    public var isStrong: Bool { self != .md5 }

    /// Fetched once: OpenSSL 3 otherwise performs an implicit provider fetch on every init,
    /// which dominates the cost of hashing small metadata files (and of sealing small bundles).
    var md: OpaquePointer {
        switch self {
        case .md5: return FetchedDigests.shared.md5
        case .sha256: return FetchedDigests.shared.sha256
        case .sha384: return FetchedDigests.shared.sha384
        case .sha512: return FetchedDigests.shared.sha512
        }
    }
}

/// Owns the fetched `EVP_MD` / `EVP_CIPHER` objects for the life of the process.
final class FetchedDigests: @unchecked Sendable {
    static let shared = FetchedDigests()
    let md5: OpaquePointer
    let sha256: OpaquePointer
    let sha384: OpaquePointer
    let sha512: OpaquePointer
    let aes256gcm: OpaquePointer

    private init() {
        // All are in OpenSSL 3's default provider; failing to fetch them means a broken
        // installation, not bad input.
        guard let md5 = EVP_MD_fetch(nil, "MD5", nil), let sha256 = EVP_MD_fetch(nil, "SHA256", nil),
            let sha384 = EVP_MD_fetch(nil, "SHA384", nil), let sha512 = EVP_MD_fetch(nil, "SHA512", nil),
            let gcm = EVP_CIPHER_fetch(nil, "AES-256-GCM", nil) else {
            fatalError("OpenSSL default provider lacks MD5/SHA-2/AES-256-GCM: \(CryptoError.fromOpenSSL("fetch"))")
        }
        self.md5 = md5
        self.sha256 = sha256
        self.sha384 = sha384
        self.sha512 = sha512
        self.aes256gcm = gcm
    }

    deinit {
        EVP_MD_free(md5)
        EVP_MD_free(sha256)
        EVP_MD_free(sha384)
        EVP_MD_free(sha512)
        EVP_CIPHER_free(aes256gcm)
    }
}

public enum Digest {
    public static func hash<Bytes: ContiguousBytes>(_ algorithm: DigestAlgorithm, _ data: Bytes) -> [UInt8] {
        var hasher = Hasher(algorithm)
        hasher.update(data)
        return hasher.finalize()
    }

    public static func sha256<Bytes: ContiguousBytes>(_ data: Bytes) -> [UInt8] { hash(.sha256, data) }
    public static func md5<Bytes: ContiguousBytes>(_ data: Bytes) -> [UInt8] { hash(.md5, data) }
    public static func sha256Hex<Bytes: ContiguousBytes>(_ data: Bytes) -> String { Hex.encode(sha256(data)) }
    public static func md5Hex<Bytes: ContiguousBytes>(_ data: Bytes) -> String { Hex.encode(md5(data)) }

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

    /// Incremental hashing for data that arrives in pieces (downloads, large files).
    public struct Hasher: ~Copyable {
        private let context: OpaquePointer
        private let algorithm: DigestAlgorithm

        public init(_ algorithm: DigestAlgorithm) {
            guard let context = EVP_MD_CTX_new(), EVP_DigestInit_ex2(context, algorithm.md, nil) == 1 else {
                fatalError("EVP_DigestInit_ex2 failed: \(CryptoError.fromOpenSSL("digest init"))")
            }
            self.context = context
            self.algorithm = algorithm
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

/// The digests recorded for every bundle: what `hashes` in TUF metadata and the
/// `X-Patch-*` headers carry.
public struct BundleDigests: Sendable, Equatable, Codable {
    public let length: Int
    public let sha256: String
    public let md5: String

    public init<Bytes: ContiguousBytes>(of bytes: Bytes) {
        var count = 0
        bytes.withUnsafeBytes { count = $0.count }
        self.length = count
        // Through the verification seam: a device checks every bundle with these.
        let array = bytes.withUnsafeBytes { Array($0) }
        self.sha256 = Hex.encode(Verification.crypto.digest(.sha256, array))
        self.md5 = Hex.encode(Verification.crypto.digest(.md5, array))
    }

    public init(length: Int, sha256: String, md5: String) {
        self.length = length
        self.sha256 = sha256
        self.md5 = md5
    }
}
