import Foundation
import Synchronization
internal import CMicroHTTPD

/// Limits and settings of the HTTP transport.
public struct HTTPServerConfiguration: Sendable {
    public var host: String = "127.0.0.1"
    /// 0 picks a free port; `HTTPServer.port` tells which.
    public var port: UInt16 = 8080
    /// Worker threads, each with its own epoll loop.
    public var threads: Int = max(2, ProcessInfo.processInfo.activeProcessorCount)
    public var maxConnections: Int = 10_000
    public var maxConnectionsPerIP: Int = 0
    /// Seconds an idle or stalled connection is kept (slowloris protection).
    public var connectionTimeout: Int = 30
    /// Per-connection buffer for the request line and headers: bounds header size.
    public var connectionMemoryLimit: Int = 32 * 1024
    public var maxBodySize: Int = 11 << 20
    /// PEM text of a certificate and key for HTTPS; nil for plain HTTP.
    public var tlsCertificatePEM: String?
    public var tlsKeyPEM: String?

    public init() {}
}

public struct HTTPServerError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}

/// The libmicrohttpd transport. It owns the daemon and knows nothing of patches: it turns
/// each request into an `HTTPRequest`, calls the handler and sends the `HTTPResponse`.
public final class HTTPServer: @unchecked Sendable {
    // The daemon pointer is only used by MHD calls that are thread-safe (quiesce, info, stop),
    // and not at all once `stopped` is set.

    public typealias Handler = @Sendable (HTTPRequest) -> HTTPResponse

    private let daemon: OpaquePointer
    private let context: Unmanaged<ServerContext>
    private let stopped = Atomic<Bool>(false)
    /// The listening socket MHD hands back when draining; ours to close, but only once the
    /// daemon is stopped (its threads may still hold it until then).
    private let quiescedSocket = Atomic<Int32>(-1)
    public let port: UInt16
    public let scheme: String

    public init(configuration: HTTPServerConfiguration, handler: @escaping Handler) throws(HTTPServerError) {
        // An IPv4 or IPv6 address, built in a sockaddr_storage that outlives the start call.
        var address = sockaddr_storage()
        var ipv6 = false
        var v4 = in_addr(), v6 = in6_addr()
        if inet_pton(AF_INET, configuration.host, &v4) == 1 {
            withUnsafeMutableBytes(of: &address) { raw in
                var sin = sockaddr_in()
                sin.sin_family = sa_family_t(AF_INET)
                sin.sin_port = configuration.port.bigEndian
                sin.sin_addr = v4
                raw.storeBytes(of: sin, as: sockaddr_in.self)
            }
        } else if inet_pton(AF_INET6, configuration.host, &v6) == 1 {
            ipv6 = true
            withUnsafeMutableBytes(of: &address) { raw in
                var sin6 = sockaddr_in6()
                sin6.sin6_family = sa_family_t(AF_INET6)
                sin6.sin6_port = configuration.port.bigEndian
                sin6.sin6_addr = v6
                raw.storeBytes(of: sin6, as: sockaddr_in6.self)
            }
        } else {
            throw HTTPServerError(message: "listen address must be an IPv4 or IPv6 address, got \(configuration.host)")
        }
        let context = Unmanaged.passRetained(ServerContext(handler: handler, maxBodySize: configuration.maxBodySize))
        // Epoll with a pool of internal threads: each thread accepts and serves its own
        // connections, so no request waits on a dispatcher thread.
        // ITC (an inter-thread pipe) lets MHD_quiesce_daemon wake the workers when draining.
        var flags = UInt32(MHD_USE_EPOLL_INTERNAL_THREAD.rawValue) | UInt32(MHD_USE_ERROR_LOG.rawValue) | UInt32(MHD_USE_ITC.rawValue)
        // "::" also accepts IPv4 (dual stack), as "0.0.0.0" does for IPv4 alone; a specific
        // IPv6 address only that address.
        if ipv6 { flags |= UInt32(configuration.host == "::" ? MHD_USE_DUAL_STACK.rawValue : MHD_USE_IPv6.rawValue) }
        let started: OpaquePointer? = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                configuration.tlsKeyPEM.withOptionalCString { key in
                    configuration.tlsCertificatePEM.withOptionalCString { cert in
                        var c = hp_mhd_config(
                            flags: flags, address: sa, thread_pool_size: UInt32(configuration.threads),
                            connection_limit: UInt32(configuration.maxConnections),
                            connection_timeout: UInt32(configuration.connectionTimeout),
                            connection_memory_limit: configuration.connectionMemoryLimit,
                            per_ip_connection_limit: UInt32(configuration.maxConnectionsPerIP),
                            tls_key_pem: key, tls_cert_pem: cert, unescape: unescapeKeepingNUL)
                        return hp_mhd_start(&c, accessHandler, context.toOpaque(), requestCompleted, context.toOpaque())
                    }
                }
            }
        }
        guard let started else {
            context.release()
            throw HTTPServerError(message: "cannot listen on \(configuration.host):\(configuration.port) (address in use, or a bad TLS certificate/key)")
        }
        self.daemon = started
        self.context = context
        self.port = hp_mhd_bound_port(started)
        self.scheme = configuration.tlsKeyPEM == nil ? "http" : "https"
    }

    /// Stops accepting new connections, waits up to `timeout` for open ones to finish their
    /// requests, then stops. In-flight requests complete; idle keep-alive connections close.
    public func drain(timeout: TimeInterval = 10) {
        let socket = MHD_quiesce_daemon(daemon)
        if socket >= 0 { quiescedSocket.store(socket, ordering: .releasing) }
        let deadline = Date().addingTimeInterval(timeout)
        while context.takeUnretainedValue().inFlight.load(ordering: .acquiring) > 0, Date() < deadline {
            usleep(10_000)
        }
    }

    /// Drains (see `drain`), then stops the daemon: closes every connection and joins the
    /// worker threads, so no handler runs once this returns. A process must do this before
    /// `exit`, whose clean-up handlers free library state a worker could still be using.
    /// Idempotent.
    public func stop(drainTimeout: TimeInterval = 10) {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        drain(timeout: drainTimeout)
        MHD_stop_daemon(daemon)
        // Closing the handed-back socket is what makes new connections fail at once
        // instead of waiting in the kernel's backlog for an accept that never comes.
        let socket = quiescedSocket.exchange(-1, ordering: .acquiringAndReleasing)
        if socket >= 0 { close(socket) }
    }

    /// Open connections; 0 once stopped.
    public var openConnections: Int { stopped.load(ordering: .acquiring) ? 0 : Int(hp_mhd_current_connections(daemon)) }

    deinit {
        if !stopped.load(ordering: .acquiring) { MHD_stop_daemon(daemon) }
        let socket = quiescedSocket.load(ordering: .acquiring)
        if socket >= 0 { close(socket) }
        context.release()
    }
}

extension Optional where Wrapped == String {
    fileprivate func withOptionalCString<R>(_ body: (UnsafePointer<CChar>?) -> R) -> R {
        switch self {
        case .some(let s): return s.withCString { body($0) }
        case .none: return body(nil)
        }
    }
}
