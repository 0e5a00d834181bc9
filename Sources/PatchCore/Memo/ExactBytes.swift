import Foundation

/// A byte string as a memo's key: equal only when every byte is equal, hashed in one call
/// over the whole buffer. `[UInt8]`'s own `Hashable` feeds the hasher one byte at a time,
/// which cost a no-change sync more than a tenth of its instructions once the memos
/// (`ParsedMetadata`, `VerifiedSignatures`) answered instead of the parser and the curve
/// arithmetic (issue 23). The hash only picks the bucket; `==` still compares every byte.
/// It covers the length and at most the first and the last `hashedEnds` bytes: metadata
/// files differ there (signatures first; `version` and `expires` at the ends of `signed`),
/// and a collision costs one `memcmp`, never a wrong answer. The memos hold a few dozen
/// entries, so even bytes made to collide cost a few dozen comparisons.
public struct ExactBytes: Hashable, Sendable {
    public let bytes: [UInt8]
    static let hashedEnds = 256

    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(bytes.count)
        bytes.withUnsafeBytes { raw in
            let ends = Self.hashedEnds
            if raw.count <= 2 * ends {
                hasher.combine(bytes: raw)
            } else {
                hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: raw[..<ends]))
                hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: raw[(raw.count - ends)...]))
            }
        }
    }

    public static func == (lhs: ExactBytes, rhs: ExactBytes) -> Bool {
        guard lhs.bytes.count == rhs.bytes.count else { return false }
        return lhs.bytes.withUnsafeBytes { l in
            rhs.bytes.withUnsafeBytes { r in l.count == 0 || memcmp(l.baseAddress!, r.baseAddress!, l.count) == 0 }
        }
    }
}
