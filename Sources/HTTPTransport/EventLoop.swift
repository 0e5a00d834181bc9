import Foundation
import Locking
import Synchronization
internal import CNetwork

/// What every event loop of a server shares: settings, the application, and the limits that
/// span connections. Immutable apart from the thread-safe counters it holds.
final class ServerShared: Sendable {
    let configuration: HTTPServerConfiguration
    let responder: any HTTPResponder
    let budget: BodyBudget
    let perAddress: ConnectionCounter
    /// New connections per address (`maxNewConnectionsPerIPPerSecond`).
    let connectionRate = IPRateLimiter()
    let tls: TLSContext?
    let listener: Int32
    let open = Atomic<Int>(0)
    let inFlight = Atomic<Int>(0)
    /// Connections closed at the cap for a newcomer (`EventLoop.shedOneStalled`).
    let shed = Atomic<Int>(0)
    /// 0 serving, 1 draining (no new connections, close after the answer), 2 stopping.
    let state = Atomic<Int>(0)

    /// Bytes of input one connection holds at most, parsed or not, whatever it pipelines: a
    /// head at its limit plus room for the start of the next. (A body moves out of this
    /// buffer into its own, reserved from `budget`.)
    var maxBufferedInput: Int { configuration.headLimits.head + 16 * 1024 }

    init(configuration: HTTPServerConfiguration, responder: any HTTPResponder, tls: TLSContext?, listener: Int32) {
        self.configuration = configuration
        self.responder = responder
        self.budget = BodyBudget(limits: configuration.bodyLimits, ipv6Prefix: configuration.ipv6Prefix)
        self.perAddress = ConnectionCounter(limit: configuration.maxConnectionsPerIP, ipv6Prefix: configuration.ipv6Prefix)
        self.tls = tls
        self.listener = listener
    }
}

/// One worker thread: an epoll set with the shared listening socket (EPOLLEXCLUSIVE, so one
/// loop wakes per new connection) and the connections placed on this loop: the loop that
/// accepts one serves it or hands it to the loop with fewest (`place`). Handlers run on
/// this thread; nothing here is touched from another one except through `wake`.
final class EventLoop: @unchecked Sendable {
    let shared: ServerShared
    private let epoll: Int32
    private let wake: Int32
    /// This loop's connections by socket: descriptors are small and reused, so an array
    /// indexed by them finds an event's connection with no hashing (a dictionary and two
    /// sets keyed by descriptor were four hashes per request, issue 23).
    private var slots: [Slot?] = []
    private struct Slot {
        let connection: Connection
        /// What epoll watches the socket for.
        var interest: UInt32
        /// Whether it counts toward `shared.inFlight`.
        var countedInFlight = false
    }
    private var connections: [Connection] { slots.compactMap { $0?.connection } }
    private var listening = true
    private var lastSweep = 0.0
    private(set) var now = 0.0
    /// Counts the loop's turns: a connection's work budget (`Connection.turn`) is per turn.
    private(set) var turn = 0
    /// Connections that used up their budget with work left (bytes buffered, or a socket
    /// or TLS record still readable): resumed on the next turn, after `epoll_wait` has
    /// looked at every other socket, so none waits behind them.
    private var resumeNextTurn: [Connection] = []
    /// Whether the loop is inside a turn's reads, when answers are held (`hold`) rather than
    /// written at once.
    private(set) var holdingAnswers = false
    /// The turn's answers not yet written, in the order they were made. Written once every
    /// socket of the turn has been read: a write wakes the peer waiting for it, and a woken
    /// client on the same cores preempts this thread, so an answer written mid-turn left the
    /// rest of the turn's connections waiting a scheduler slice behind it (half the check
    /// path's p99 at saturation, docs/BENCHMARKS.md). At most one entry per connection
    /// of the turn (a held connection reads nothing more until it is written).
    private var heldAnswers: [Connection] = []
    /// The most answers one turn has held (read by the tests, from another thread).
    let mostAnswersHeld = Atomic<Int>(0)
    /// Numbers the moments connections of this loop make progress, in order
    /// (`Connection.progressOrder`): a clock would tie, since one turn serves many connections
    /// at the same `now`.
    private var progressCount: UInt64 = 0

    /// The next number for a connection making progress.
    func nextProgressOrder() -> UInt64 {
        progressCount &+= 1
        return progressCount
    }
    var date = DateLine()
    /// Every read of this loop lands here first.
    var scratch = [UInt8](repeating: 0, count: 64 * 1024)
    let finished = DispatchSemaphore(value: 0)
    /// Set by the loop once it no longer watches the listening socket (drain).
    let stoppedAccepting = Atomic<Bool>(false)

    var draining: Bool { shared.state.load(ordering: .relaxed) >= 1 }

    /// The server's other loops, set before any of them runs and cleared once all have
    /// stopped: a new connection is served by whichever loop has fewest (`place`).
    var peers: [EventLoop] = []
    /// Connections placed on this loop, those handed to it and not yet taken included. Read
    /// by the other loops as they place a new connection.
    package let load = Atomic<Int>(0)
    /// A connection accepted and admitted by another loop, for this one to serve.
    private struct Arrival {
        let fd: Int32
        let peer: IPAddress
        let counted: IPAddress?
    }
    /// Connections handed to this loop (`hand`), taken when its `wake` is reported; closed
    /// to new ones once the loop has stopped.
    private let arrivals = Locked<(open: Bool, list: [Arrival])>((true, []))

    /// A promised answer (`HTTPPromise`) for one of this loop's connections, kept on another
    /// thread.
    struct Delivery: Sendable {
        /// The connection, carried to its own loop and touched only there (`deliver`).
        struct Target: @unchecked Sendable {
            let connection: Connection
            init(_ connection: Connection) { self.connection = connection }
        }
        let target: Target
        let response: HTTPResponse
    }
    /// Answers kept for this loop's connections, written when its `wake` is reported, as
    /// arrivals are taken.
    private let deliveries = Locked<[Delivery]>([])

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
            let resuming = resumeNextTurn
            resumeNextTurn.removeAll(keepingCapacity: true)
            // Deadlines are checked a few times a second: their resolution is what a
            // trickling client can gain, at most. With work left over, only a look.
            let n = hp_epoll_wait(epoll, &fds, &events, Int32(fds.count), resuming.isEmpty ? 250 : 0)
            now = IPRateLimiter.monotonicTime()
            turn &+= 1
            // One connection's event alone: no other socket of the turn waits behind its answer.
            holdingAnswers = !(resuming.isEmpty && n == 1 && fds[0] != shared.listener && fds[0] != wake)
            for connection in resuming where !connection.closed {
                connection.resume(self)
                if !connection.closed { watch(connection) }
            }
            let ready = max(0, Int(n))
            // Newcomers first: a request that came with its connection is answered before the
            // busy connections take their turns, so a crowd of them cannot delay it by a turn.
            if listening, fds[..<ready].contains(shared.listener) { accept() }
            for i in 0..<ready {
                let fd = fds[i]
                if fd == wake {
                    var value: UInt64 = 0
                    _ = read(wake, &value, 8)
                    // A loop hands a connection over before it signals: taken on that wake,
                    // not by a lock on every turn.
                    for arrival in arrivals.withLock({ state in defer { state.list.removeAll() }; return state.list }) { serve(arrival) }
                    for delivery in deliveries.withLock({ list in defer { list.removeAll() }; return list }) {
                        let connection = delivery.target.connection
                        connection.deliver(delivery.response, self)
                        if !connection.closed { watch(connection) }
                    }
                } else if fd == shared.listener {
                    continue
                } else if fd >= 0, Int(fd) < slots.count, let connection = slots[Int(fd)]?.connection {
                    let bits = events[i]
                    // Watched for nothing while it waits for its answer: a hang-up ends it. (An
                    // EPOLLIN here was asked before a resumed request of this turn began waiting.)
                    if connection.isWaiting {
                        if bits & (EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 { connection.close(self) }
                        continue
                    }
                    if bits & (EPOLLOUT.rawValue) != 0 { connection.writable(self) }
                    if bits & (EPOLLIN.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 { connection.readable(self) }
                    if !connection.closed { watch(connection) }
                }
            }
            holdingAnswers = false
            writeHeldAnswers()
            if now - lastSweep >= 0.25 { sweep() }
        }
        for connection in connections { connection.close(self) }
        for arrival in arrivals.withLock({ state in state.open = false; return state.list }) { discard(arrival) }
        finished.signal()
    }

    /// Holds an answer until the turn's reads are done (`heldAnswers`).
    func hold(_ connection: Connection) {
        heldAnswers.append(connection)
    }

    /// Writes the answers held so far: at the end of the turn's reads, and before a handler
    /// that may take long (a request with a body: a publish or a report is a durable write),
    /// so the answers made before it do not wait for it too.
    func writeHeldAnswers() {
        guard !heldAnswers.isEmpty else { return }
        let holding = holdingAnswers
        // Answers made while these are written (the next pipelined request) go out at once.
        holdingAnswers = false
        defer { holdingAnswers = holding }
        if heldAnswers.count > mostAnswersHeld.load(ordering: .relaxed) { mostAnswersHeld.store(heldAnswers.count, ordering: .relaxed) }
        for connection in heldAnswers {
            connection.writeHeld(self)
            if !connection.closed { watch(connection) }
        }
        heldAnswers.removeAll(keepingCapacity: true)
    }

    private func stopListening() {
        _ = hp_epoll_del(epoll, shared.listener)
        listening = false
        stoppedAccepting.store(true, ordering: .releasing)
        for connection in connections {
            connection.drain(self)
            if !connection.closed { watch(connection) }
        }
    }

    /// Closes connections past their deadline.
    private func sweep() {
        lastSweep = now
        for connection in connections where connection.deadline <= now {
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
        let counted = configuration.connectionLimitExempt.trusts(peer) ? nil : peer
        if let counted, configuration.maxNewConnectionsPerIPPerSecond > 0 {
            let rate = configuration.maxNewConnectionsPerIPPerSecond
            if let wait = shared.connectionRate.take(scope: "connect", ip: counted.limitKey(ipv6Prefix: configuration.ipv6Prefix),
                                                     ratePerMinute: rate * 60, burst: rate * max(1, configuration.newConnectionBurstSeconds)) {
                return reject(fd, .throttled(retryAfter: wait, "too many new connections from this address; retry in \(wait) s"))
            }
        }
        if let counted, !shared.perAddress.open(counted) {
            return reject(fd, .tooManyConnections("too many open connections from this address; retry"))
        }
        // At the cap, the connection that made progress longest ago among those idle or stalled
        // makes room: a crowd of silent sockets, trickled heads or bodies never sent cannot
        // keep out a client that has something to ask.
        if shared.open.load(ordering: .relaxed) >= configuration.maxConnections, !shedOneStalled() {
            if let counted { shared.perAddress.close(counted) }
            return reject(fd, .tooManyConnections("the server has too many open connections; retry"))
        }
        shared.open.add(1, ordering: .relaxed)
        place(Arrival(fd: fd, peer: peer, counted: counted))
    }

    /// Serves an admitted connection here, or hands it to the loop with fewest connections.
    /// Accepting alone does not spread them: with EPOLLEXCLUSIVE the first loop to wake takes
    /// the whole batch waiting, and a client that opened 64 connections at once was seen with
    /// all 64 on one loop while the other core idled (row 1 at 90k req/s instead of 110k).
    private func place(_ arrival: Arrival) {
        var target = self
        for peer in peers where peer.load.load(ordering: .relaxed) < target.load.load(ordering: .relaxed) { target = peer }
        if target !== self, target.hand(arrival) {
            target.signal()
            return
        }
        load.add(1, ordering: .relaxed)
        serve(arrival)
    }

    /// Hands a kept promise's answer to this loop, from the thread that kept it.
    func post(_ delivery: Delivery) {
        deliveries.withLock { $0.append(delivery) }
        signal()
    }

    /// Takes a connection from another loop; false once this loop has stopped.
    private func hand(_ arrival: Arrival) -> Bool {
        arrivals.withLock { state in
            guard state.open else { return false }
            state.list.append(arrival)
            load.add(1, ordering: .relaxed)
            return true
        }
    }

    /// A connection placed here that will not be served (the loop stopped first).
    private func discard(_ arrival: Arrival) {
        if let counted = arrival.counted { shared.perAddress.close(counted) }
        shared.open.subtract(1, ordering: .relaxed)
        load.subtract(1, ordering: .relaxed)
        Foundation.close(arrival.fd)
    }

    private func serve(_ arrival: Arrival) {
        let fd = arrival.fd, peer = arrival.peer, counted = arrival.counted
        let configuration = shared.configuration
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        // A write fails with EAGAIN (and EPOLLOUT waits) while this much is unsent: the
        // kernel's queue counts toward what a connection holds, so backpressure starts there.
        var unsent = Int32(clamping: configuration.maxUnsentOutput)
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NOTSENT_LOWAT, &unsent, socklen_t(MemoryLayout<Int32>.size))
        var tls: TLSSession?
        if let context = shared.tls {
            guard let session = TLSSession(context: context, socket: fd) else { return discard(arrival) }
            tls = session
        }
        // The first head (and TLS handshake) must be in within the header timeout.
        let connection = Connection(fd: fd, peer: peer, countedAs: counted, tls: tls, progressOrder: nextProgressOrder(), now: now,
                                    firstDeadline: now + configuration.headerTimeout)
        if Int(fd) >= slots.count { slots.append(contentsOf: repeatElement(nil, count: Int(fd) + 1 - slots.count)) }
        slots[Int(fd)] = Slot(connection: connection, interest: EPOLLIN.rawValue)
        _ = hp_epoll_set(epoll, EPOLL_CTL_ADD, fd, EPOLLIN.rawValue)
        // Data often arrives with the connection: read it now rather than after a wake-up.
        connection.readable(self)
        if !connection.closed { watch(connection) }
    }

    /// Closes this loop's connection that made progress longest ago among those that may be
    /// shed (`Connection.mayBeShed`: idle, or stalled in any phase); false if it has none. An
    /// O(n) scan, run only at the cap. Closed without an answer: the peer of a stalled
    /// request is not reading, or not sending, and an idle one asked nothing.
    private func shedOneStalled() -> Bool {
        guard let oldest = slots.lazy.compactMap({ $0?.connection }).filter({ $0.mayBeShed(self) })
            .min(by: { $0.progressOrder < $1.progressOrder }) else { return false }
        oldest.shed(self)
        shared.shed.add(1, ordering: .relaxed)
        return true
    }

    /// Asks for `connection.resume` on the next turn.
    func resumeLater(_ connection: Connection) {
        resumeNextTurn.append(connection)
    }

    /// The error in JSON, best effort, then close: for connections over a limit, refused
    /// before a byte of them is read. Never blocks; a TLS connection is closed unanswered.
    private func reject(_ fd: Int32, _ error: HTTPError) {
        if shared.tls == nil {
            let response = error.response
            var bytes = ResponseHead(response).bytes + date.refresh() + Array("Connection: close\r\n\r\n".utf8)
            bytes += response.body
            _ = send(fd, &bytes, bytes.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
        }
        Foundation.close(fd)
    }

    /// Watches the socket for what the connection waits on: writability while an answer is
    /// pending, readability otherwise.
    func watch(_ connection: Connection) {
        // Held: watched once written, for what it then waits on.
        guard !connection.answerHeld else { return }
        // Waiting for a promised answer: nothing is read (a pipelined request stays in the
        // kernel), and EPOLLHUP and EPOLLERR are reported whatever is asked.
        let wanted: UInt32 = connection.wantsWrite ? EPOLLOUT.rawValue : connection.isWaiting ? 0 : EPOLLIN.rawValue
        let fd = Int(connection.fd)
        guard fd < slots.count, slots[fd] != nil else { return }
        if slots[fd]!.interest != wanted {
            slots[fd]!.interest = wanted
            _ = hp_epoll_set(epoll, EPOLL_CTL_MOD, connection.fd, wanted)
        }
        updateInFlight(connection)
    }

    /// Keeps `shared.inFlight` (what a drain waits for) in step with this loop's connections.
    private func updateInFlight(_ connection: Connection) {
        let fd = Int(connection.fd)
        guard fd < slots.count, slots[fd] != nil else { return }
        let busy = connection.inFlight && !connection.closed
        if busy != slots[fd]!.countedInFlight {
            slots[fd]!.countedInFlight = busy
            if busy { shared.inFlight.add(1, ordering: .relaxed) } else { shared.inFlight.subtract(1, ordering: .relaxed) }
        }
    }

    /// Called by a connection as it closes.
    func forget(_ connection: Connection) {
        updateInFlight(connection)
        _ = hp_epoll_del(epoll, connection.fd)
        Foundation.close(connection.fd)
        slots[Int(connection.fd)] = nil
        shared.open.subtract(1, ordering: .relaxed)
        load.subtract(1, ordering: .relaxed)
        if let counted = connection.countedAs { shared.perAddress.close(counted) }
    }
}
