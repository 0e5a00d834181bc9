import Foundation
internal import CNetwork

/// The server's TLS settings: one OpenSSL `SSL_CTX` with the certificate chain and key,
/// shared by every connection (OpenSSL makes a configured context safe to share).
final class TLSContext: @unchecked Sendable {
    let pointer: OpaquePointer

    init(certificatePEM: String, keyPEM: String) throws(HTTPServerError) {
        guard let context = SSL_CTX_new(TLS_server_method()) else { throw TLSContext.error("cannot create a TLS context") }
        pointer = context
        _ = hp_ssl_ctx_set_min_tls12(context)
        // Partial writes and a moving buffer: a response is written from wherever the last
        // write stopped, which is how the event loop retries after EAGAIN.
        _ = hp_ssl_ctx_set_mode(context, Int(SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER))
        let certificates = try TLSContext.certificates(certificatePEM)
        guard SSL_CTX_use_certificate(context, certificates[0]) == 1 else { throw TLSContext.error("the TLS certificate is not usable") }
        X509_free(certificates[0])
        for extra in certificates.dropFirst() where hp_ssl_ctx_add_extra_chain_cert(context, extra) != 1 {
            X509_free(extra)
            throw TLSContext.error("a certificate of the chain is not usable")
        }
        guard let key = TLSContext.withBIO(keyPEM, { PEM_read_bio_PrivateKey($0, nil, nil, nil) }) else {
            throw TLSContext.error("the TLS key is not a PEM private key")
        }
        defer { EVP_PKEY_free(key) }
        guard SSL_CTX_use_PrivateKey(context, key) == 1, SSL_CTX_check_private_key(context) == 1 else {
            throw TLSContext.error("the TLS key does not match the certificate")
        }
    }

    deinit { SSL_CTX_free(pointer) }

    private static func certificates(_ pem: String) throws(HTTPServerError) -> [OpaquePointer] {
        let all: [OpaquePointer] = withBIO(pem) { bio in
            var found: [OpaquePointer] = []
            while let certificate = PEM_read_bio_X509(bio, nil, nil, nil) { found.append(certificate) }
            return found
        } ?? []
        ERR_clear_error()  // the read that ended the loop
        guard !all.isEmpty else { throw error("the TLS certificate file holds no PEM certificate") }
        return all
    }

    private static func withBIO<T>(_ text: String, _ body: (OpaquePointer) -> T?) -> T? {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { raw -> T? in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return body(bio)
        }
    }

    private static func error(_ message: String) -> HTTPServerError {
        let code = ERR_get_error()
        ERR_clear_error()
        guard code != 0 else { return HTTPServerError(message: message) }
        var text = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &text, text.count)
        let detail = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return HTTPServerError(message: "\(message) (\(detail))")
    }
}

/// One connection's TLS state (`SSL*`), owned by the connection and used only on its loop's
/// thread. The handshake runs inside the first reads.
final class TLSSession {
    private let pointer: OpaquePointer

    init?(context: TLSContext, socket: Int32) {
        guard let ssl = SSL_new(context.pointer) else { return nil }
        pointer = ssl
        SSL_set_fd(ssl, socket)
        SSL_set_accept_state(ssl)
    }

    deinit { SSL_free(pointer) }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> IOResult {
        let n = SSL_read(pointer, buffer.baseAddress, Int32(min(buffer.count, Int(Int32.max))))
        return n > 0 ? .bytes(Int(n)) : outcome(n)
    }

    func write(_ bytes: UnsafeRawBufferPointer) -> IOResult {
        let n = SSL_write(pointer, bytes.baseAddress, Int32(min(bytes.count, Int(Int32.max))))
        return n > 0 ? .bytes(Int(n)) : outcome(n)
    }

    private func outcome(_ result: Int32) -> IOResult {
        let error = SSL_get_error(pointer, result)
        ERR_clear_error()
        switch error {
        case SSL_ERROR_WANT_READ: return .wouldBlock(wantsWrite: false)
        case SSL_ERROR_WANT_WRITE: return .wouldBlock(wantsWrite: true)
        default: return .closed
        }
    }

    /// Sends close_notify, best effort (the socket is closed right after).
    func shutdown() { _ = SSL_shutdown(pointer) }
}

/// What a read or write on a connection did.
enum IOResult {
    case bytes(Int)
    /// Nothing now; wait until the socket is readable (or writable, when `wantsWrite`).
    case wouldBlock(wantsWrite: Bool)
    /// The peer closed, or the connection failed.
    case closed
}
