import Foundation
internal import CCrypto

/// https://developer.apple.com/documentation/cryptokit/hashfunction — `init()`,
/// `update(bufferPointer:)` (https://developer.apple.com/documentation/cryptokit/insecure/sha1/update(bufferpointer:))
/// and `finalize()` (https://developer.apple.com/documentation/cryptokit/hashfunction/finalize()).
public protocol HashFunction {
    associatedtype Digest: CryptoKit.Digest
    init()
    mutating func update(bufferPointer: UnsafeRawBufferPointer)
    func finalize() -> Digest
}

/// https://developer.apple.com/documentation/cryptokit/digest — here only the sequence of bytes
/// the code reads (`Array(hasher.finalize())`).
public protocol Digest: Sequence where Element == UInt8 {}

/// https://developer.apple.com/documentation/cryptokit/sha256, .../sha384, .../sha512,
/// .../insecure/md5: value types whose `Digest` is a sequence of bytes. Apple declares a struct
/// for each; here one generic struct, named per algorithm by typealiases.
public typealias SHA256 = OpenSSLHash<SHA256Name>
public typealias SHA384 = OpenSSLHash<SHA384Name>
public typealias SHA512 = OpenSSLHash<SHA512Name>

/// https://developer.apple.com/documentation/cryptokit/insecure
public enum Insecure {
    /// https://developer.apple.com/documentation/cryptokit/insecure/md5
    public typealias MD5 = OpenSSLHash<MD5Name>
}

/// A digest as OpenSSL names it.
public protocol OpenSSLDigestName {
    static var name: String { get }
}

public enum SHA256Name: OpenSSLDigestName { public static let name = "SHA256" }
public enum SHA384Name: OpenSSLDigestName { public static let name = "SHA384" }
public enum SHA512Name: OpenSSLDigestName { public static let name = "SHA512" }
public enum MD5Name: OpenSSLDigestName { public static let name = "MD5" }

public struct OpenSSLHash<Algorithm: OpenSSLDigestName>: HashFunction {
    private var state = HashState(Algorithm.name)
    public init() {}
    public mutating func update(bufferPointer: UnsafeRawBufferPointer) { HashState.update(&state, bufferPointer) }
    public func finalize() -> OpenSSLDigest { OpenSSLDigest(bytes: state.finalize()) }
}

public struct OpenSSLDigest: Digest {
    let bytes: [UInt8]
    public func makeIterator() -> IndexingIterator<[UInt8]> { bytes.makeIterator() }
}

/// Owns one `EVP_MD_CTX*`, freed in deinit. The hash functions are values (a copy hashes on
/// from where the original was), so a shared state is copied before it is written to.
final class HashState {
    private let context: OpaquePointer

    init(_ algorithm: String) {
        // Failing to start a digest OpenSSL's default provider has is a broken installation.
        guard let context = EVP_MD_CTX_new(), EVP_DigestInit_ex2(context, EVP_get_digestbyname(algorithm), nil) == 1 else {
            fatalError("OpenSSL cannot start \(algorithm)")
        }
        self.context = context
    }

    private init(copying other: HashState) {
        guard let context = EVP_MD_CTX_new(), EVP_MD_CTX_copy_ex(context, other.context) == 1 else { fatalError("OpenSSL cannot copy a digest") }
        self.context = context
    }

    deinit { EVP_MD_CTX_free(context) }

    static func update(_ state: inout HashState, _ bytes: UnsafeRawBufferPointer) {
        if !isKnownUniquelyReferenced(&state) { state = HashState(copying: state) }
        _ = EVP_DigestUpdate(state.context, bytes.baseAddress, bytes.count)
    }

    /// The digest of what was added so far; this state stays usable (finalize() is non-mutating).
    func finalize() -> [UInt8] {
        let copy = HashState(copying: self)
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        _ = EVP_DigestFinal_ex(copy.context, &digest, &length)
        return Array(digest.prefix(Int(length)))
    }
}
