import Foundation
import Synchronization
internal import CNetwork

/// Limits and settings of the HTTP transport.
public struct HTTPServerConfiguration: Sendable {
    public var host: String = "127.0.0.1"
    /// 0 picks a free port; `HTTPServer.port` tells which.
    public var port: UInt16 = 8080
    /// Worker threads, each with its own epoll loop.
    public var threads: Int = max(2, ProcessInfo.processInfo.activeProcessorCount)
    /// Open connections in all. At the cap a newcomer is admitted by closing the connection of
    /// the worker that accepts it that has gone longest without progress among those idle or
    /// stalled (`stallTimeout`), whatever their phase; it is refused only if that worker has none.
    public var maxConnections: Int = 10_000
    /// A connection with a request in flight (its head or body arriving, its answer going out)
    /// is stalled once this many seconds have passed since it last made progress: completed a
    /// step (a head, a body, an answer) or moved another `minProgressBytes` in either
    /// direction. Only at the cap does it matter: a stalled connection may then be closed for a
    /// newcomer, as an idle one may. Issue 43, item 3: before, only idle ones could, and 10,000
    /// heads declaring a body never sent kept every newcomer out.
    public var stallTimeout: Double = 2
    public var minProgressBytes: Int = 1024
    /// Open connections per client address (IPv6: per `ipv6Prefix` network, and wider networks
    /// in proportion, see `ConnectionCounter.widerIPv6Networks`); 0 is no limit.
    public var maxConnectionsPerIP: Int = 128
    /// New connections (hence TLS handshakes) per second per client address, bursting to
    /// `newConnectionBurstSeconds` of them; 0 is no limit. Past it a connection is refused
    /// before any byte of it is read.
    public var maxNewConnectionsPerIPPerSecond: Int = 50
    public var newConnectionBurstSeconds: Int = 5
    /// Work one connection may do per wakeup of its event loop before the others get their
    /// turn: requests answered, and bytes read.
    public var maxRequestsPerWakeup: Int = 16
    public var maxReadPerWakeup: Int = 64 * 1024
    /// Bytes of answers one connection may have in the kernel's send queue, not yet sent,
    /// before its answers stop being written, and so its requests read (TCP_NOTSENT_LOWAT):
    /// a client that pipelines and never reads is stopped here, not after megabytes.
    public var maxUnsentOutput: Int = 128 * 1024
    /// Peers not counted against `maxConnectionsPerIP` (the load balancers in front).
    public var connectionLimitExempt: [IPNetwork] = []
    /// How IPv6 clients are grouped for per-address limits.
    public var ipv6Prefix: Int = 64
    /// Seconds a connection may wait between requests, or make no progress reading an answer.
    public var idleTimeout: Double = 30
    /// Seconds from a request's first byte to the end of its head; for a connection's first
    /// request, from its accept (the TLS handshake included), so a socket that sends nothing
    /// is closed after this long, not after `idleTimeout`.
    public var headerTimeout: Double = 10
    /// Seconds from a request's first byte to the end of its body.
    public var requestTimeout: Double = 60
    /// Seconds from the end of an anonymous request's head (`BodyCharge.anonymous`) to the end
    /// of its body, within `requestTimeout`: what a device sends is a few KB, and an anonymous
    /// body that stalls holds its reservation and its connection only this long.
    public var anonymousBodyTimeout: Double = 5
    /// Bytes of a request line, and of a whole head (request line and header fields).
    public var maxRequestLineSize: Int = 8 * 1024
    public var maxHeadSize: Int = 32 * 1024
    /// Header field lines of a head; past it 431, as soon as the next line begins.
    public var maxHeaderFields: Int = 100
    /// The body limit of the closure-based server (a responder sets its own per request).
    public var maxBodySize: Int = 11 << 20
    /// Request-body bytes all requests in flight may reserve together (`BodyBudget`), in two
    /// pools: `tokenBodyBudget` of it for bodies admitted on a credential, the rest for
    /// anonymous ones, so no crowd of anonymous uploads can hold back a publish, a halt or an
    /// approval.
    public var bodyBudget: Int = 64 << 20
    /// The token pool; nil: half of `bodyBudget`.
    public var tokenBodyBudget: Int?
    /// What one holder may reserve of the token pool, so one holder's uploads cannot keep
    /// another's out; nil: half of the pool.
    public var tokenBodyShare: Int?
    /// What one client address (IPv6: its `ipv6Prefix` network) may reserve of the anonymous
    /// pool; nil: a sixteenth of the pool.
    public var addressBodyShare: Int?
    /// What one IPv4 /24 or IPv6 /48 may reserve of the anonymous pool; nil: a quarter of it.
    public var networkBodyShare: Int?
    /// PEM text of a certificate (chain) and key for HTTPS; nil for plain HTTP.
    public var tlsCertificatePEM: String?
    public var tlsKeyPEM: String?

    public init() {}

    var headLimits: RequestHead.Limits { RequestHead.Limits(requestLine: maxRequestLineSize, head: maxHeadSize, fields: maxHeaderFields) }

    /// The body budget's pools and shares, the unset ones derived from `bodyBudget`.
    var bodyLimits: BodyBudget.Limits {
        let token = tokenBodyBudget ?? bodyBudget / 2
        let anonymous = bodyBudget - token
        return BodyBudget.Limits(anonymous: anonymous, perAddress: addressBodyShare ?? max(1, anonymous / 16),
                                 perNetwork: networkBodyShare ?? max(1, anonymous / 4), token: token, perHolder: tokenBodyShare ?? max(1, token / 2))
    }

    /// Refuses settings that contradict each other: a token pool larger than the whole
    /// budget, or a share larger than its pool (it would promise what the pool cannot hold).
    public func validate() throws(HTTPServerError) {
        let limits = bodyLimits
        guard bodyBudget > 0, limits.token > 0, limits.anonymous > 0 else {
            throw HTTPServerError(message: "the token body budget (\(limits.token)) must be more than 0 and less than the body budget (\(bodyBudget))")
        }
        for (name, share, pool) in [("per-holder token", limits.perHolder, limits.token), ("per-address", limits.perAddress, limits.anonymous),
                                    ("per-network", limits.perNetwork, limits.anonymous)] where !(1...pool).contains(share) {
            throw HTTPServerError(message: "the \(name) body share (\(share)) must be 1 to its pool's \(pool) bytes")
        }
    }
}

public struct HTTPServerError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}

/// patchd's HTTP/1.1 transport: a listening socket and a pool of epoll event loops, with a
/// strict parser (RequestHead, ChunkedDecoder) and TLS through OpenSSL. It knows nothing of
/// patches: it asks its responder to admit each request from the head, reads the body only
/// if told to, and writes the `HTTPResponse` it gets back.
public final class HTTPServer: Sendable {
    public typealias Handler = @Sendable (HTTPRequest) -> HTTPResponse

    private let shared: ServerShared
    private let loops: [EventLoop]
    private let stopped = Atomic<Bool>(false)
    private let listenerClosed = Atomic<Bool>(false)
    public let port: UInt16
    public let scheme: String

    /// A server whose every request is read (bodies up to `maxBodySize`) and answered by `handler`.
    public convenience init(configuration: HTTPServerConfiguration, handler: @escaping Handler) throws(HTTPServerError) {
        try self.init(configuration: configuration, responder: AcceptingResponder(maxBody: configuration.maxBodySize, handler: handler))
    }

    public init(configuration: HTTPServerConfiguration, responder: any HTTPResponder) throws(HTTPServerError) {
        try configuration.validate()
        var tls: TLSContext?
        switch (configuration.tlsCertificatePEM, configuration.tlsKeyPEM) {
        case (let cert?, let key?): tls = try TLSContext(certificatePEM: cert, keyPEM: key)
        case (nil, nil): break
        default: throw HTTPServerError(message: "a TLS certificate and key go together")
        }
        // A write to a peer that has gone raises SIGPIPE (OpenSSL writes with write(2));
        // the error return is what the loops act on.
        signal(SIGPIPE, SIG_IGN)
        HTTPServer.raiseDescriptorLimit(to: configuration.maxConnections + 256)
        let (listener, port) = try HTTPServer.listen(host: configuration.host, port: configuration.port)
        let shared = ServerShared(configuration: configuration, responder: responder, tls: tls, listener: listener)
        var loops: [EventLoop] = []
        do {
            for _ in 0..<max(1, configuration.threads) { loops.append(try EventLoop(shared: shared)) }
        } catch {
            close(listener)
            throw error
        }
        self.shared = shared
        self.loops = loops
        self.port = port
        self.scheme = tls == nil ? "http" : "https"
        for loop in loops { loop.peers = loops.filter { $0 !== loop } }
        for (index, loop) in loops.enumerated() {
            let name = "patchd-http-\(index)"
            let thread = Thread {
                ThreadTuning.name(name)
                loop.run()
            }
            thread.name = name
            thread.start()
        }
    }

    /// Stops accepting (new connections are refused at once), lets requests in flight get
    /// their answers for up to `timeout` seconds, and closes idle keep-alive connections.
    public func drain(timeout: TimeInterval = 10) {
        _ = shared.state.compareExchange(expected: 0, desired: 1, ordering: .acquiringAndReleasing)
        for loop in loops { loop.signal() }
        // The listening socket is closed only once no loop can be inside accept on it, so
        // its descriptor number cannot be reused under a loop.
        let deadline = Date().addingTimeInterval(max(timeout, 1))
        while loops.contains(where: { !$0.stoppedAccepting.load(ordering: .acquiring) }), Date() < deadline { usleep(1_000) }
        if !listenerClosed.exchange(true, ordering: .acquiringAndReleasing) { close(shared.listener) }
        let answerDeadline = Date().addingTimeInterval(timeout)
        while shared.inFlight.load(ordering: .acquiring) > 0, Date() < answerDeadline { usleep(5_000) }
    }

    /// Drains (see `drain`), then stops every loop, closing their connections, and joins the
    /// worker threads, so no handler runs once this returns. A process must do this before
    /// `exit`, whose clean-up handlers free library state a worker could still be using.
    /// Idempotent.
    public func stop(drainTimeout: TimeInterval = 10) {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        drain(timeout: drainTimeout)
        shared.state.store(2, ordering: .releasing)
        for loop in loops { loop.signal() }
        for loop in loops { loop.finished.wait() }
        // The loops refer to each other (`peers`): no longer, so they can be freed.
        for loop in loops { loop.peers = [] }
    }

    /// Open connections; 0 once stopped.
    public var openConnections: Int { shared.open.load(ordering: .relaxed) }

    /// Connections placed on each event loop (`EventLoop.place`), for tests.
    var connectionsPerLoop: [Int] { loops.map { $0.load.load(ordering: .relaxed) } }
    /// The most answers one turn of a loop held until its reads were done.
    var mostAnswersHeldInATurn: Int { loops.map { $0.mostAnswersHeld.load(ordering: .relaxed) }.max() ?? 0 }

    /// Request-body bytes reserved right now, in both pools.
    public var bodyBytesReserved: Int { shared.budget.inUse }
    /// Of them, those reserved by anonymous bodies.
    var anonymousBodyBytesReserved: Int { shared.budget.inUse(.anonymous) }
    /// Connections closed at the cap to admit a newcomer.
    public var connectionsShed: Int { shared.shed.load(ordering: .relaxed) }

    deinit { stop(drainTimeout: 0) }

    private static func listen(host: String, port: UInt16) throws(HTTPServerError) -> (Int32, UInt16) {
        var storage = sockaddr_storage()
        var size = socklen_t(0)
        let family = hp_socket_address(host, port, &storage, &size)
        guard family >= 0 else { throw HTTPServerError(message: "listen address must be an IPv4 or IPv6 address, got \(host)") }
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw HTTPServerError(message: "cannot create a socket") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        if family == AF_INET6 {
            // "::" also accepts IPv4 (dual stack), as "0.0.0.0" does for IPv4 alone; a
            // specific IPv6 address only that address.
            var only: Int32 = host == "::" ? 0 : 1
            setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &only, socklen_t(MemoryLayout<Int32>.size))
        }
        let bound = withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, size) } }
        guard bound == 0, Foundation.listen(fd, 4096) == 0 else {
            close(fd)
            throw HTTPServerError(message: "cannot listen on \(host):\(port) (address in use?)")
        }
        var actual = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &actual) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        let boundPort: UInt16 = withUnsafeBytes(of: &actual) { raw in
            family == AF_INET ? UInt16(bigEndian: raw.load(as: sockaddr_in.self).sin_port) : UInt16(bigEndian: raw.load(as: sockaddr_in6.self).sin6_port)
        }
        return (fd, boundPort)
    }

    /// Each connection is a descriptor: lift the soft limit toward the hard one so
    /// `maxConnections` can be reached (the default soft limit is often 1,024).
    private static func raiseDescriptorLimit(to wanted: Int) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
        let target = min(rlim_t(wanted), limit.rlim_max)
        if limit.rlim_cur < target {
            limit.rlim_cur = target
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
    }
}
