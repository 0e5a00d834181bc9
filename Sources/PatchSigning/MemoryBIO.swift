import Foundation
internal import CCrypto
import PatchCore

/// Owns one OpenSSL memory `BIO*`: how PEM text goes into and comes out of OpenSSL.
/// Lives inside one function; not Sendable on purpose.
final class MemoryBIO {
    let pointer: OpaquePointer

    /// An empty BIO for OpenSSL to write into.
    init() throws(CryptoError) {
        guard let bio = BIO_new(BIO_s_mem()) else { throw CryptoError.fromOpenSSL("BIO_new") }
        pointer = bio
    }

    /// A BIO holding a copy of `bytes` for OpenSSL to read (`BIO_new_mem_buf` would only
    /// borrow the Swift buffer, which need not outlive the call that made it).
    convenience init(reading bytes: [UInt8]) throws(CryptoError) {
        try self.init()
        guard bytes.count <= Int(Int32.max) else { throw .invalidInput("input too large: \(bytes.count) bytes") }
        if !bytes.isEmpty {
            guard BIO_write(pointer, bytes, Int32(bytes.count)) == Int32(bytes.count) else { throw CryptoError.fromOpenSSL("BIO_write") }
        }
    }

    deinit { BIO_free(pointer) }

    /// Everything written so far.
    func bytes() throws(CryptoError) -> [UInt8] {
        var data: UnsafeMutablePointer<CChar>?
        let count = hp_bio_mem_data(pointer, &data)
        guard count > 0, let data else { throw CryptoError.fromOpenSSL("BIO_get_mem_data") }
        return data.withMemoryRebound(to: UInt8.self, capacity: count) { Array(UnsafeBufferPointer(start: $0, count: count)) }
    }
}
