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
}

public enum Digest {
    /// Through the verification seam: OpenSSL on Linux, CryptoKit on Apple platforms.
    public static func hash<Bytes: ContiguousBytes>(_ algorithm: DigestAlgorithm, _ data: Bytes) -> [UInt8] {
        data.withUnsafeBytes { Verification.crypto.digest(algorithm, $0) }
    }

    public static func sha256<Bytes: ContiguousBytes>(_ data: Bytes) -> [UInt8] { hash(.sha256, data) }
    public static func md5<Bytes: ContiguousBytes>(_ data: Bytes) -> [UInt8] { hash(.md5, data) }
    public static func sha256Hex<Bytes: ContiguousBytes>(_ data: Bytes) -> String { Hex.encode(sha256(data)) }
    public static func md5Hex<Bytes: ContiguousBytes>(_ data: Bytes) -> String { Hex.encode(md5(data)) }
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
        self.sha256 = Digest.sha256Hex(bytes)
        self.md5 = Digest.md5Hex(bytes)
    }

    public init(length: Int, sha256: String, md5: String) {
        self.length = length
        self.sha256 = sha256
        self.md5 = md5
    }
}
