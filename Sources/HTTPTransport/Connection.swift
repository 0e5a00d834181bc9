import Foundation
internal import CNetwork

/// One client connection, owned by one event loop and touched only on its thread. A state
/// machine: wait for a request → read its head → admit it → read its body → write the
/// answer → wait again (keep-alive) or close. Every phase has a deadline that trickled
/// bytes cannot extend.
final class Connection {
    enum Phase {
        /// Between requests: nothing of the next one has arrived.
        case idle
        /// Bytes of a head have arrived.
        case head
        /// An admitted request whose body is being read.
        case body(Body)
        /// The answer is promised by another thread (`HTTPPromise`); nothing more is read
        /// until it is written. `head`: the request was a HEAD.
        case waiting(head: Bool)
        /// An answer is being written.
        case writing
        /// The last answer is out and our side is shut; what the client still sends is read
        /// and dropped until it closes or the linger time ends, so the answer is not lost to
        /// a reset (closing with unread bytes makes the kernel send RST, which can discard
        /// the answer before the client reads it).
        case lingering
    }

    struct Body {
        var request: HTTPRequest
        var finish: @Sendable (HTTPRequest) -> HTTPReply
        var framing: BodyFraming
        var decoder: ChunkedDecoder?
        var data: [UInt8]
    }

    /// What to do once the answer is written.
    enum After { case keepAlive, close }

    let fd: Int32
    let peer: IPAddress
    /// The address this connection is counted under (`ConnectionCounter`), nil when the peer
    /// is exempt.
    let countedAs: IPAddress?
    let tls: TLSSession?
    private(set) var phase = Phase.idle
    /// Monotonic seconds by which the current phase must end.
    private(set) var deadline: Double
    private var requestStarted = 0.0
    private var input: [UInt8] = []
    private var inputStart = 0
    private var output: Output?
    private var after = After.keepAlive
    private var reservation: BodyBudget.Reservation?
    private(set) var closed = false
    /// When the connection last made progress (`madeProgress`), as the loop orders such
    /// moments (`EventLoop.nextProgressOrder`: a clock would tie, one turn serves many
    /// connections at the same `now`) and by its clock: at the connection cap the one idle or
    /// stalled that made progress longest ago is shed first.
    private(set) var progressOrder: UInt64
    private(set) var progressAt: Double
    /// Bytes moved since the last progress, fewer than `minProgressBytes`.
    private var unmarkedBytes = 0
    /// No head has been completed yet: the first one's deadline runs from the accept.
    private var fresh = true
    /// The work done in the loop's current turn (`EventLoop.turn`), bounded by
    /// `maxRequestsPerWakeup` and `maxReadPerWakeup`.
    private var turn = (number: -1, requests: 0, bytes: 0)
    /// On the loop's list of connections to resume next turn.
    private var awaitingResume = false

    /// A response being written, in the parts it goes out in, and how much has gone out: the
    /// prepared status line and fields (shared with every answer of that response), `Date`,
    /// the head's end (with `Connection: close` when closing), the body. A plain socket writes
    /// them with one writev from where they are; for TLS `head` is the three joined, so a
    /// small answer is one record.
    private struct Output {
        let head: [UInt8]
        var date: [UInt8] = []
        var end: StaticString = ""
        let response: HTTPResponse?
        var sent = 0
        var total: Int { head.count + date.count + end.utf8CodeUnitCount + (response?.body.count ?? 0) }
    }

    init(fd: Int32, peer: IPAddress, countedAs: IPAddress?, tls: TLSSession?, progressOrder: UInt64, now: Double, firstDeadline: Double) {
        self.fd = fd
        self.peer = peer
        self.countedAs = countedAs
        self.tls = tls
        deadline = firstDeadline
        self.progressOrder = progressOrder
        progressAt = now
    }

    /// Whether a request is between its first byte and its answer being written (what a
    /// drain waits for).
    var inFlight: Bool {
        switch phase {
        case .idle, .lingering: return false
        case .head, .body, .waiting, .writing: return true
        }
    }

    var wantsWrite: Bool { if case .writing = phase { return true } else { return false } }

    // MARK: Progress

    /// A step completed (a head parsed, a body read whole, an answer written out), or
    /// `moved` more bytes reached `minProgressBytes` since the last progress.
    private func madeProgress(_ loop: EventLoop, moved: Int? = nil) {
        if let moved {
            unmarkedBytes += moved
            guard unmarkedBytes >= loop.shared.configuration.minProgressBytes else { return }
        }
        unmarkedBytes = 0
        progressAt = loop.now
        progressOrder = loop.nextProgressOrder()
    }

    /// Whether closing this connection to admit a newcomer at the cap is fair: it waits for
    /// its peer with nothing owed (idle, or lingering after its last answer), or its request
    /// in flight is stalled: no progress for `stallTimeout`, whatever its phase (a head or
    /// body trickled or never sent, an answer the peer does not read).
    func mayBeShed(_ loop: EventLoop) -> Bool {
        guard !closed else { return false }
        switch phase {
        case .idle, .lingering: return true
        case .head, .body, .writing: return loop.now - progressAt >= loop.shared.configuration.stallTimeout
        // The server owes it an answer it is working on (a queued durable write): the client
        // is not the one stalling, and the queue that holds it is bounded.
        case .waiting: return false
        }
    }

    /// Waiting for a promised answer: the loop watches the socket for nothing but a hang-up.
    var isWaiting: Bool { if case .waiting = phase { return true } else { return false } }

    // MARK: Work per turn

    /// Starts the counts afresh when the loop is on a new turn.
    private func countTurn(_ loop: EventLoop) {
        if turn.number != loop.turn { turn = (loop.turn, 0, 0) }
    }

    /// Whether this turn's budget allows another request or read; when it does not, the
    /// connection is resumed on the next turn (its bytes may be buffered here, where epoll
    /// cannot see them).
    private func mayWork(_ loop: EventLoop) -> Bool {
        countTurn(loop)
        let limits = loop.shared.configuration
        if turn.requests < limits.maxRequestsPerWakeup, turn.bytes < limits.maxReadPerWakeup { return true }
        if !awaitingResume {
            awaitingResume = true
            loop.resumeLater(self)
        }
        return false
    }

    /// Goes on where the last turn's budget stopped: buffered requests, then the socket.
    func resume(_ loop: EventLoop) {
        awaitingResume = false
        guard !closed, !wantsWrite, !isWaiting else { return }
        process(loop)
        if !closed, !wantsWrite, !isWaiting { readable(loop) }
    }

    // MARK: Reading

    /// Reads what the socket has and acts on it. Called when epoll reports the socket readable
    /// (and after a write finishes, for bytes of a pipelined request already buffered).
    func readable(_ loop: EventLoop) {
        guard !closed, !wantsWrite, !isWaiting else { return }
        if case .lingering = phase { return discard(loop) }
        while !closed, !wantsWrite, !isWaiting, mayWork(loop) {
            // What was parsed goes before more is read, so the buffer holds at most
            // `maxBufferedInput` bytes, parsed or not, however many requests are pipelined.
            compactInput()
            let room = loop.shared.maxBufferedInput - input.count
            // Full: only while this turn's requests are used up (a full head is refused).
            guard room > 0 else { return }
            // Into the loop's scratch buffer, then only the bytes received are kept: no
            // per-read allocation or zero-filling.
            let asked = min(room, loop.scratch.count)
            let result = loop.scratch.withUnsafeMutableBytes { receive(into: UnsafeMutableRawBufferPointer(rebasing: $0[..<asked])) }
            switch result {
            case .bytes(let n):
                turn.bytes += n
                madeProgress(loop, moved: n)
                loop.scratch.withUnsafeBytes { input.append(contentsOf: $0[..<n]) }
                process(loop)
                // Fewer bytes than asked for: the socket was empty when read. The loop's epoll
                // set is level-triggered, so bytes arriving later (or a FIN) report it readable
                // again; reading on would be one more recv per request that only says EAGAIN.
                // Not for TLS: OpenSSL may hold decrypted bytes the socket will not signal.
                if tls == nil, n < asked { return }
            case .wouldBlock:
                return
            case .closed:
                close(loop)
                return
            }
        }
    }

    private var unreadBytes: Int { input.count - inputStart }

    /// Drops the bytes already parsed.
    private func compactInput() {
        guard inputStart > 0 else { return }
        if inputStart == input.count { input.removeAll(keepingCapacity: true) } else { input.removeFirst(inputStart) }
        inputStart = 0
    }

    private func receive(into buffer: UnsafeMutableRawBufferPointer) -> IOResult {
        if let tls { return tls.read(into: buffer) }
        let n = recv(fd, buffer.baseAddress, buffer.count, 0)
        if n > 0 { return .bytes(n) }
        if n < 0, hp_errno() == EAGAIN || hp_errno() == EWOULDBLOCK || hp_errno() == EINTR { return .wouldBlock(wantsWrite: false) }
        return .closed
    }

    /// Acts on the buffered bytes: parses a head, admits it, collects a body, answers.
    private func process(_ loop: EventLoop) {
        while !closed {
            switch phase {
            case .writing, .waiting, .lingering:
                return
            case .idle:
                guard unreadBytes > 0, mayWork(loop) else { return }
                phase = .head
                headScan = (0, false)
                requestStarted = loop.now
                // A first request keeps the deadline its accept set.
                if !fresh { deadline = requestStarted + loop.shared.configuration.headerTimeout }
            case .head:
                guard let head = parseHead(loop) else { return }
                admit(head, loop)
            case .body(var body):
                // Out of `phase` while it grows, so its buffer has one owner and appending
                // never copies it (copy-on-write would copy the whole body on every read).
                phase = .head
                let done: Bool
                do throws(FramingError) { done = try collect(&body) } catch {
                    fail(error, loop)
                    return
                }
                guard done else {
                    phase = .body(body)
                    return
                }
                // The reservation is kept while the handler runs (respond gives it back): a
                // body being published is still in memory, with the handler's copies.
                madeProgress(loop)
                body.request.body = body.data
                phase = .head  // not idle: the answer is still owed
                if loop.holdingAnswers { loop.writeHeldAnswers() }
                reply(body.finish(body.request), loop, head: body.request.method == "HEAD")
            }
        }
    }

    /// How many unread bytes the last incomplete parse of a head saw, and whether a line had
    /// ended in them. A head is parsed again only once a line may have ended (a CR or LF
    /// arrived) or a limit is passed, so bytes trickled one at a time cost a scan of
    /// themselves, not a rescan of everything before them.
    private var headScan = (seen: 0, lineEnded: false)

    private func parseHead(_ loop: EventLoop) -> RequestHead? {
        let limits = loop.shared.configuration.headLimits
        let unread = unreadBytes
        // A head's first look parses at once (most heads arrive whole); a later one only if
        // the new bytes hold a CR or LF, looking from one byte back: a CR that ended the last
        // look may be followed by a non-LF now.
        if headScan.seen > 0 {
            let lineEnd = input.withUnsafeBytes { raw in
                raw[(inputStart + headScan.seen - 1)...].contains { $0 == cr || $0 == lf }
            }
            if !lineEnd, unread <= limits.head, headScan.lineEnded || unread <= limits.requestLine {
                headScan.seen = unread
                return nil
            }
            headScan.lineEnded = headScan.lineEnded || lineEnd
        }
        do throws(FramingError) {
            let parsed = try input.withUnsafeBytes { raw in
                Result { () throws(FramingError) in try RequestHead.parse(UnsafeRawBufferPointer(rebasing: raw[inputStart...]), limits: limits) }
            }.get()
            guard let head = parsed else {
                if headScan.seen == 0 {
                    // An incomplete first look: whether a line has ended decides which limit a
                    // later look waits for (paid only by heads that did not arrive whole).
                    headScan.lineEnded = input.withUnsafeBytes { $0[inputStart...].contains { $0 == cr || $0 == lf } }
                }
                headScan.seen = unread
                return nil
            }
            headScan = (0, false)
            inputStart += head.size
            return head
        } catch {
            fail(error, loop)
            return nil
        }
    }

    private func admit(_ head: RequestHead, _ loop: EventLoop) {
        fresh = false
        madeProgress(loop)
        let framing: BodyFraming
        let expectsContinue: Bool
        let request: HTTPRequest
        do throws(FramingError) {
            try head.checkHost()
            framing = try head.framing()
            expectsContinue = try head.expectsContinue()
            request = try head.request(peer: peer, declaredBody: HTTPRequest.DeclaredBody(framing))
        } catch {
            fail(error, loop)
            return
        }
        if !head.keepAlive || loop.draining { after = .close }
        switch loop.shared.responder.admit(request) {
        case .answer(let response):
            // An unread body cannot be skipped safely: close after answering.
            if framing != .none { after = .close }
            respond(response, loop, head: head.method == "HEAD")
        case .later(let promise):
            if framing != .none { after = .close }
            reply(.later(promise), loop, head: head.method == "HEAD")
        case .readBody(let limit, let charge, let finish):
            let reserve: Int
            switch framing {
            case .none:
                reply(finish(request), loop, head: head.method == "HEAD")
                return
            case .length(let n):
                guard n <= limit else { return refuse(.tooLarge(limit), loop) }
                reserve = n
            case .chunked:
                reserve = limit
            }
            switch loop.shared.budget.reserve(reserve, for: charge) {
            case .success(let held): reservation = held
            case .failure(let refusal): return refuse(Connection.busy(refusal), loop)
            }
            if expectsContinue, !sendInterim() { return close(loop) }
            var data: [UInt8] = []
            if case .length(let n) = framing { data.reserveCapacity(n) }
            let decoder = framing == .chunked ? ChunkedDecoder(limit: limit) : nil
            phase = .body(Body(request: request, finish: finish, framing: framing, decoder: decoder, data: data))
            let limits = loop.shared.configuration
            deadline = requestStarted + limits.requestTimeout
            if charge.pool == .anonymous { deadline = min(deadline, loop.now + limits.anonymousBodyTimeout) }
        }
    }

    /// The 503 of a body the budget cannot hold now: which limit it met, so a client behind
    /// a crowded network is told it is its network, not the server, that is full.
    private static func busy(_ refusal: BodyBudget.Refusal) -> HTTPError {
        let message = switch refusal {
        case .pool(.anonymous): "too many uploads in progress; retry"
        case .pool(.token): "too many authenticated uploads in progress; retry"
        case .share(.anonymous): "too many uploads in progress from this address or network; retry"
        case .share(.token): "too many uploads in progress with this credential; retry"
        }
        return HTTPError(503, "busy", message, headers: [("Retry-After", "1")])
    }

    /// Moves buffered bytes into the body; true once it is complete.
    private func collect(_ body: inout Body) throws(FramingError) -> Bool {
        switch body.framing {
        case .none:
            return true
        case .length(let total):
            let n = min(total - body.data.count, unreadBytes)
            body.data.append(contentsOf: input[inputStart..<(inputStart + n)])
            inputStart += n
            return body.data.count == total
        case .chunked:
            var decoder = body.decoder!
            var data = body.data
            body.data = []  // moved out: one owner, so appending does not copy
            let used = input.withUnsafeBytes { raw in
                Result { () throws(FramingError) in try decoder.feed(UnsafeRawBufferPointer(rebasing: raw[inputStart...]), into: &data) }
            }
            body.data = data
            inputStart += try used.get()
            body.decoder = decoder
            return decoder.isDone
        }
    }

    /// `100 Continue`, sent only once the request is admitted. 25 bytes on a connection whose
    /// send buffer is empty: written at once or the connection is given up.
    private func sendInterim() -> Bool {
        let line = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)
        return line.withUnsafeBytes { raw in
            if case .bytes(let n) = transmit(raw), n == raw.count { return true }
            return false
        }
    }

    // MARK: Answering

    /// Answers a request the transport itself refuses, then closes. The refusal is charged
    /// to the peer (`HTTPResponder.refused`), so malformed requests cost their sender.
    private func fail(_ error: FramingError, _ loop: EventLoop) {
        loop.shared.responder.refused(peer: peer)
        refuse(error.httpError, loop)
    }

    private func refuse(_ error: HTTPError, _ loop: EventLoop) {
        after = .close
        respond(error.response, loop)
    }

    /// Answers now, or waits for the promise: its answer reaches this loop through `EventLoop.post`
    /// and is written by `deliver`. Until then the socket is watched for a hang-up only, and
    /// the request's own deadline still runs (`expire`).
    private func reply(_ reply: HTTPReply, _ loop: EventLoop, head isHead: Bool) {
        switch reply {
        case .now(let response):
            respond(response, loop, head: isHead)
        case .later(let promise):
            // The body's reservation is given back now: the handler took what it needs.
            if let reservation {
                loop.shared.budget.release(reservation)
                self.reservation = nil
            }
            phase = .waiting(head: isHead)
            deadline = requestStarted + loop.shared.configuration.requestTimeout
            let target = EventLoop.Delivery.Target(self)
            promise.whenKept { [loop] response in loop.post(EventLoop.Delivery(target: target, response: response)) }
        }
    }

    /// The promised answer, on this connection's loop; then on with what the client pipelined
    /// meanwhile, as `writable` does.
    func deliver(_ response: HTTPResponse, _ loop: EventLoop) {
        guard !closed, case .waiting(let isHead) = phase else { return }  // answered already (the deadline's 503), or closed
        phase = .head  // the answer is still owed until `respond` starts it
        respond(response, loop, head: isHead)
        guard !closed, !answerHeld, !wantsWrite else { return }
        process(loop)
        if tls != nil, !closed, !wantsWrite, !isWaiting { readable(loop) }
    }

    private func respond(_ response: HTTPResponse, _ loop: EventLoop, head isHead: Bool = false) {
        releaseBody(loop)
        if loop.draining { after = .close }
        turn.requests += 1
        let prepared = ResponseHead.of(response).bytes
        let date = loop.date.refresh()
        let end: StaticString = after == .close ? "Connection: close\r\n\r\n" : "\r\n"
        let body = isHead || response.body.isEmpty ? nil : response
        if tls != nil {
            // Sized once: appending to the shared prepared bytes would copy them and then
            // grow the copy again for Date and Connection.
            var head: [UInt8] = []
            head.reserveCapacity(prepared.count + date.count + end.utf8CodeUnitCount)
            head += prepared
            head += date
            head += UnsafeBufferPointer(start: end.utf8Start, count: end.utf8CodeUnitCount)
            output = Output(head: head, response: body)
        } else {
            output = Output(head: prepared, date: date, end: end, response: body)
        }
        phase = .writing
        deadline = loop.now + loop.shared.configuration.idleTimeout
        if loop.holdingAnswers {
            answerHeld = true
            loop.hold(self)
        } else {
            flush(loop)
        }
    }

    /// Answered during a turn's reads; written when they are done (`EventLoop.heldAnswers`).
    private(set) var answerHeld = false

    /// Writes the answer held during the turn, and goes on as a write that became possible.
    func writeHeld(_ loop: EventLoop) {
        answerHeld = false
        writable(loop)
    }

    /// The socket is writable again: write more of the answer, and once it is out, go on
    /// with the next request (bytes of it may be buffered already).
    func writable(_ loop: EventLoop) {
        guard !closed, output != nil else { return }
        guard flush(loop) else { return }
        // Buffered bytes of a pipelined request; for TLS also what OpenSSL already
        // decrypted, which the socket will never signal again.
        process(loop)
        if tls != nil, !closed, !wantsWrite, !isWaiting { readable(loop) }
    }

    /// Writes what it can of the pending answer; true once it is all out and the connection
    /// waits for its next request (false: still writing, or closed).
    @discardableResult
    private func flush(_ loop: EventLoop) -> Bool {
        guard !closed, var out = output else { return false }
        while out.sent < out.total {
            switch write(&out) {
            case .bytes(let n):
                out.sent += n
                madeProgress(loop, moved: n)
                deadline = loop.now + loop.shared.configuration.idleTimeout
            case .wouldBlock:
                output = out
                return false
            case .closed:
                close(loop)
                return false
            }
        }
        output = nil
        if after == .close {
            linger(loop)
            return false
        }
        phase = .idle
        madeProgress(loop)
        deadline = loop.now + loop.shared.configuration.idleTimeout
        return true
    }

    private func write(_ out: inout Output) -> IOResult {
        let body = out.response?.body ?? []
        if let tls {
            // The head is one part here (`respond`): one record for it, then the body.
            let headLeft = out.head.count - out.sent
            if headLeft > 0 { return out.head.withUnsafeBytes { tls.write(UnsafeRawBufferPointer(rebasing: $0[out.sent...])) } }
            return body.withUnsafeBytes { tls.write(UnsafeRawBufferPointer(rebasing: $0[(out.sent - out.head.count)...])) }
        }
        // Every part in one writev, from where it is: one segment on the wire for a small
        // answer, with neither the prepared head nor a large body copied. The vectors are on
        // the stack (an array of them was an allocation per answer).
        let end = UnsafeRawBufferPointer(start: out.end.utf8Start, count: out.end.utf8CodeUnitCount)
        let sent = out.sent
        return out.head.withUnsafeBytes { head in
            out.date.withUnsafeBytes { date in
                body.withUnsafeBytes { body in
                    var vectors = (iovec(), iovec(), iovec(), iovec())
                    return withUnsafeMutableBytes(of: &vectors) { raw in
                        let v = raw.bindMemory(to: iovec.self)
                        var count = 0, skip = sent
                        for part in [head, date, end, body] {
                            if skip >= part.count {
                                skip -= part.count  // out already, or empty
                                continue
                            }
                            v[count] = iovec(iov_base: UnsafeMutableRawPointer(mutating: part.baseAddress! + skip), iov_len: part.count - skip)
                            count += 1
                            skip = 0
                        }
                        var message = msghdr()
                        message.msg_iov = v.baseAddress
                        message.msg_iovlen = count
                        return Connection.outcome(sendmsg(fd, &message, Int32(MSG_NOSIGNAL)))
                    }
                }
            }
        }
    }

    private func transmit(_ bytes: UnsafeRawBufferPointer) -> IOResult {
        if let tls { return tls.write(bytes) }
        return Connection.outcome(send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL)))
    }

    private static func outcome(_ n: Int) -> IOResult {
        if n >= 0 { return .bytes(n) }
        let error = hp_errno()
        return error == EAGAIN || error == EWOULDBLOCK || error == EINTR ? .wouldBlock(wantsWrite: true) : .closed
    }

    // MARK: Deadlines and closing

    /// Bytes a lingering connection may still send before it is closed regardless.
    private static let lingerBytes = 1 << 20
    private var discarded = 0

    private func linger(_ loop: EventLoop) {
        if tls != nil { return close(loop) }
        Foundation.shutdown(fd, Int32(SHUT_WR))
        phase = .lingering
        input = []
        inputStart = 0
        deadline = loop.now + 2
        discard(loop)
    }

    private func discard(_ loop: EventLoop) {
        var scratch = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let n = recv(fd, &scratch, scratch.count, 0)
            if n > 0 {
                discarded += n
                if discarded > Connection.lingerBytes { return close(loop) }
                continue
            }
            if n < 0, hp_errno() == EAGAIN || hp_errno() == EWOULDBLOCK || hp_errno() == EINTR { return }
            return close(loop)
        }
    }

    /// Called by the loop when `deadline` has passed: a request that is late gets 408 (if no
    /// answer has begun), anything else is closed.
    func expire(_ loop: EventLoop) {
        switch phase {
        case .head, .body:
            fail(.timeout, loop)
            // The 408 is best effort: a client that stopped reading does not get to hold the
            // connection for another write timeout.
            if !closed, wantsWrite { close(loop) }
        case .waiting:
            // The server's delay, not the client's: not charged to it. The answer, should it
            // still come, finds the connection no longer waiting and is dropped.
            phase = .head
            refuse(HTTPError(503, "busy", "no answer in time; retry", headers: [("Retry-After", "5")]), loop)
            if !closed, wantsWrite { close(loop) }
        case .idle, .writing, .lingering:
            close(loop)
        }
    }

    /// Drain: an idle connection closes now; one mid-request closes after its answer.
    func drain(_ loop: EventLoop) {
        switch phase {
        case .idle, .lingering: close(loop)
        case .head, .body, .waiting, .writing: after = .close
        }
    }

    /// Closes a connection shed at the cap (`EventLoop.shedOneStalled`). One whose answer the
    /// peer does not read is reset: closed gracefully, the unsent rest of the answer would stay
    /// in the kernel's queue of an orphaned socket, retried against a closed window for
    /// minutes, and the peer would never see the end of the stream.
    func shed(_ loop: EventLoop) {
        if wantsWrite {
            var abort = CNetwork.linger(l_onoff: 1, l_linger: 0)
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort, socklen_t(MemoryLayout<CNetwork.linger>.size))
        }
        close(loop)
    }

    func close(_ loop: EventLoop) {
        guard !closed else { return }
        closed = true
        releaseBody(loop)
        tls?.shutdown()
        loop.forget(self)
    }

    private func releaseBody(_ loop: EventLoop) {
        if let reservation { loop.shared.budget.release(reservation) }
        reservation = nil
    }
}

extension HTTPRequest.DeclaredBody {
    /// What the router is told of a body the head declared.
    init(_ framing: BodyFraming) {
        switch framing {
        case .none: self = .none
        case .length(let n): self = .length(n)
        case .chunked: self = .chunked
        }
    }
}
