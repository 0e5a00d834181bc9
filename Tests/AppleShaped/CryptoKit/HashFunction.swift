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

/// https://developer.apple.com/documentation/cryptokit/sha256 (and sha384, sha512,
/// insecure/md5): each a value type whose `Digest` is its own `…Digest` struct.
public struct SHA256: HashFunction {
    public typealias Digest = SHA256Digest
    private var state = HashState("SHA256")
    public init() {}
    public mutating func update(bufferPointer: UnsafeRawBufferPointer) { HashState.update(&state, bufferPointer) }
    public func finalize() -> SHA256Digest { SHA256Digest(bytes: state.finalize()) }
}

public struct SHA384: HashFunction {
    public typealias Digest = SHA384Digest
    private var state = HashState("SHA384")
    public init() {}
    public mutating func update(bufferPointer: UnsafeRawBufferPointer) { HashState.update(&state, bufferPointer) }
    public func finalize() -> SHA384Digest { SHA384Digest(bytes: state.finalize()) }
}

public struct SHA512: HashFunction {
    public typealias Digest = SHA512Digest
    private var state = HashState("SHA512")
    public init() {}
    public mutating func update(bufferPointer: UnsafeRawBufferPointer) { HashState.update(&state, bufferPointer) }
    public func finalize() -> SHA512Digest { SHA512Digest(bytes: state.finalize()) }
}

/// https://developer.apple.com/documentation/cryptokit/insecure
public enum Insecure {
    /// https://developer.apple.com/documentation/cryptokit/insecure/md5
    public struct MD5: HashFunction {
        public typealias Digest = MD5Digest
        private var state = HashState("MD5")
        public init() {}
        public mutating func update(bufferPointer: UnsafeRawBufferPointer) { HashState.update(&state, bufferPointer) }
        public func finalize() -> MD5Digest { MD5Digest(bytes: state.finalize()) }
    }

    public struct MD5Digest: CryptoKit.Digest {
        let bytes: [UInt8]
        public func makeIterator() -> IndexingIterator<[UInt8]> { bytes.makeIterator() }
    }
}

public struct SHA256Digest: Digest {
    let bytes: [UInt8]
    public func makeIterator() -> IndexingIterator<[UInt8]> { bytes.makeIterator() }
}

public struct SHA384Digest: Digest {
    let bytes: [UInt8]
    public func makeIterator() -> IndexingIterator<[UInt8]> { bytes.makeIterator() }
}

public struct SHA512Digest: Digest {
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
