import Foundation
import Synchronization
internal import CNetwork

/// What every event loop of a server shares: settings, the application, and the limits that
/// span connections. Immutable apart from the thread-safe counters it holds.
final class ServerShared: Sendable {
    let configuration: HTTPServerConfiguration
    let responder: any HTTPResponder
    let budget: BodyBudget
    let perAddress: ConnectionCounter
    let tls: TLSContext?
    let listener: Int32
    let open = Atomic<Int>(0)
    let inFlight = Atomic<Int>(0)
    /// 0 serving, 1 draining (no new connections, close after the answer), 2 stopping.
    let state = Atomic<Int>(0)

    /// Bytes of a request (or of pipelined requests) held unparsed at most.
    var maxBufferedInput: Int { configuration.headLimits.head + 16 * 1024 }

    init(configuration: HTTPServerConfiguration, responder: any HTTPResponder, tls: TLSContext?, listener: Int32) {
        self.configuration = configuration
        self.responder = responder
        self.budget = BodyBudget(capacity: configuration.bodyBudget)
        self.perAddress = ConnectionCounter(limit: configuration.maxConnectionsPerIP)
        self.tls = tls
        self.listener = listener
    }
}

/// One worker thread: an epoll set with the shared listening socket (EPOLLEXCLUSIVE, so one
/// loop wakes per new connection) and the connections this loop accepted. Handlers run on
/// this thread; nothing here is touched from another one except through `wake`.
final class EventLoop: @unchecked Sendable {
    let shared: ServerShared
    private let epoll: Int32
    private let wake: Int32
    private var connections: [Int32: Connection] = [:]
    private var interest: [Int32: UInt32] = [:]
    private var listening = true
    private var lastSweep = 0.0
    private(set) var now = 0.0
    var date = DateLine()
    /// Every read of this loop lands here first.
    var scratch = [UInt8](repeating: 0, count: 64 * 1024)
    let finished = DispatchSemaphore(value: 0)
    /// Set by the loop once it no longer watches the listening socket (drain).
    let stoppedAccepting = Atomic<Bool>(false)

    var draining: Bool { shared.state.load(ordering: .relaxed) >= 1 }

    init(shared: ServerShared) throws(HTTPServerError) {
        self.shared = shared
        epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        wake = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        guard epoll >= 0, wake >= 0 else { throw HTTPServerError(message: "cannot create an event loop (epoll/eventfd)") }
        _ = hp_epoll_set(epoll, EPOLL_CTL_ADD, wake, EPOLLIN.rawValue)
        _ = hp_epoll_set(epoll, EPOLL_CTL_ADD, shared.listener, EPOLLIN.rawValue | EPOLLEXCLUSIVE.rawValue)
    }

    deinit {
        Foundation.close(epoll)
        Foundation.close(wake)
    }

    /// Interrupts `epoll_wait` so the loop sees a change of `shared.state`.
    func signal() {
        var one: UInt64 = 1
        _ = write(wake, &one, 8)
    }

    func run() {
        var fds = [Int32](repeating: 0, count: 256)
        var events = [UInt32](repeating: 0, count: 256)
        now = IPRateLimiter.monotonicTime()
        while shared.state.load(ordering: .acquiring) < 2 {
            if draining, listening { stopListening() }
            // Deadlines are checked a few times a second: their resolution is what a
            // trickling client can gain, at most.
            let n = hp_epoll_wait(epoll, &fds, &events, Int32(fds.count), 250)
            now = IPRateLimiter.monotonicTime()
            for i in 0..<max(0, Int(n)) {
                let fd = fds[i]
                if fd == wake {
                    var value: UInt64 = 0
                    _ = read(wake, &value, 8)
                } else if fd == shared.listener {
                    if listening { accept() }
                } else if let connection = connections[fd] {
                    let bits = events[i]
                    if bits & (EPOLLOUT.rawValue) != 0 { connection.writable(self) }
                    if bits & (EPOLLIN.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 { connection.readable(self) }
                    if !connection.closed { watch(connection) }
                }
            }
            if now - lastSweep >= 0.25 { sweep() }
        }
        for connection in Array(connections.values) { connection.close(self) }
        finished.signal()
    }

    private func stopListening() {
        _ = hp_epoll_del(epoll, shared.listener)
        listening = false
        stoppedAccepting.store(true, ordering: .releasing)
        for connection in Array(connections.values) {
            connection.drain(self)
            if !connection.closed { watch(connection) }
        }
    }

    /// Closes connections past their deadline.
    private func sweep() {
        lastSweep = now
        for connection in Array(connections.values) where connection.deadline <= now {
            connection.expire(self)
            if !connection.closed { watch(connection) }
        }
    }

    private func accept() {
        // A bounded batch per wake, so one loop does not starve its own connections.
        for _ in 0..<64 {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let fd = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { hp_accept(shared.listener, $0, &length) }
            }
            if fd < 0 {
                let error = hp_errno()
                if error == EMFILE || error == ENFILE {
                    // Out of descriptors: the listening socket stays readable, so accepting
                    // again at once would spin. Wait for the next wake-up.
                    usleep(10_000)
                }
                return
            }
            admit(fd, peer: IPAddress(socketAddress: storage) ?? .loopback)
        }
    }

    private func admit(_ fd: Int32, peer: IPAddress) {
        let configuration = shared.configuration
        let exempt = configuration.connectionLimitExempt.trusts(peer)
        let key = exempt ? nil : peer.limitKey(ipv6Prefix: configuration.ipv6Prefix)
        if shared.open.load(ordering: .relaxed) >= configuration.maxConnections {
            return reject(fd, "the server has too many open connections; retry")
        }
        if let key, !shared.perAddress.open(key) {
            return reject(fd, "too many open connections from this address; retry")
        }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var tls: TLSSession?
        if let context = shared.tls {
            guard let session = TLSSession(context: context, socket: fd) else {
                if let key { shared.perAddress.close(key) }
                Foundation.close(fd)
                return
            }
            tls = session
        }
        shared.open.add(1, ordering: .relaxed)
        let connection = Connection(fd: fd, peer: peer, countedAs: key, tls: tls, now: now, idleTimeout: configuration.idleTimeout)
        connections[fd] = connection
        interest[fd] = EPOLLIN.rawValue
        _ = hp_epoll_set(epoll, EPOLL_CTL_ADD, fd, EPOLLIN.rawValue)
        // Data often arrives with the connection: read it now rather than after a wake-up.
        connection.readable(self)
        if !connection.closed { watch(connection) }
    }

    /// 503 in JSON, best effort, then close: for connections over a limit. Never blocks.
    private func reject(_ fd: Int32, _ message: String) {
        if shared.tls == nil {
            let response = HTTPError(503, "too_many_connections", message, headers: [("Retry-After", "1")]).response
            var bytes = ResponseHead(response).bytes + date.refresh() + Array("Connection: close\r\n\r\n".utf8)
            bytes += response.body
            _ = send(fd, &bytes, bytes.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
        }
        Foundation.close(fd)
    }

    /// Watches the socket for what the connection waits on: writability while an answer is
    /// pending, readability otherwise.
    func watch(_ connection: Connection) {
        let wanted = connection.wantsWrite ? EPOLLOUT.rawValue : EPOLLIN.rawValue
        if interest[connection.fd] != wanted {
            interest[connection.fd] = wanted
            _ = hp_epoll_set(epoll, EPOLL_CTL_MOD, connection.fd, wanted)
        }
        updateInFlight(connection)
    }

    private var counted = Set<Int32>()

    /// Keeps `shared.inFlight` (what a drain waits for) in step with this loop's connections.
    private func updateInFlight(_ connection: Connection) {
        let busy = connection.inFlight && !connection.closed
        if busy, counted.insert(connection.fd).inserted { shared.inFlight.add(1, ordering: .relaxed) }
        if !busy, counted.remove(connection.fd) != nil { shared.inFlight.subtract(1, ordering: .relaxed) }
    }

    /// Called by a connection as it closes.
    func forget(_ connection: Connection) {
        updateInFlight(connection)
        _ = hp_epoll_del(epoll, connection.fd)
        Foundation.close(connection.fd)
        connections[connection.fd] = nil
        interest[connection.fd] = nil
        shared.open.subtract(1, ordering: .relaxed)
        if let key = connection.countedAs { shared.perAddress.close(key) }
    }
}
