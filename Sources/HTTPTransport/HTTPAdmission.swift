import Dispatch
import Locking

/// What the application decides from a request's head alone, before the transport keeps a
/// single body byte: route, authentication and limits all run here, so an unauthenticated
/// or unroutable upload costs the server its head and nothing more.
public enum HTTPAdmission: Sendable {
    /// Answer now. A body the request declares is not read: the connection is closed after
    /// the answer, since the unread bytes cannot be told apart from a next request.
    case answer(HTTPResponse)
    /// Answer when `promise` is kept (`HTTPPromise`). As with `answer`, a body the request
    /// declares is not read, and the connection is closed after the answer.
    case later(HTTPPromise)
    /// Read a body of at most `limit` bytes, reserved from the body budget as `charge` says
    /// (`100 Continue` is sent first if the client asked for it), then answer with `finish`
    /// of the whole request, now or promised. An anonymous body also has the shorter deadline
    /// (`HTTPServerConfiguration.anonymousBodyTimeout`).
    case readBody(limit: Int, charge: BodyCharge, finish: @Sendable (HTTPRequest) -> HTTPReply)
}

/// A handler's answer: made on the spot, or promised by work handed to another thread.
public enum HTTPReply: Sendable {
    case now(HTTPResponse)
    case later(HTTPPromise)

    /// The answer, waited for when promised: outside the event loops only (`HTTPPromise.wait`).
    public func wait() -> HTTPResponse {
        switch self {
        case .now(let response): response
        case .later(let promise): promise.wait()
        }
    }
}

/// An answer another thread gives: a handler whose work blocks (a durable write) hands it to
/// a bounded queue of its own with one of these, and the event loop goes on serving other
/// connections meanwhile, as NIO's `NIOThreadPool` does; the one waiting reads nothing more
/// until its answer is written. Kept once: a second answer is ignored.
public final class HTTPPromise: Sendable {
    private enum State {
        case waiting([@Sendable (HTTPResponse) -> Void])
        case kept(HTTPResponse)
    }
    private let state = Locked(State.waiting([]))

    public init() {}

    /// Gives the answer, from any thread.
    public func keep(_ response: HTTPResponse) {
        let waiting: [@Sendable (HTTPResponse) -> Void] = state.withLock { state in
            guard case .waiting(let waiting) = state else { return [] }
            state = .kept(response)
            return waiting
        }
        for deliver in waiting { deliver(response) }
    }

    /// Runs `deliver` with the answer: at once when it is given already, else on the thread
    /// that gives it (so `deliver` must only hand it on, never block).
    func whenKept(_ deliver: @escaping @Sendable (HTTPResponse) -> Void) {
        let kept: HTTPResponse? = state.withLock { state in
            switch state {
            case .kept(let response): return response
            case .waiting(let waiting):
                state = .waiting(waiting + [deliver])
                return nil
            }
        }
        if let kept { deliver(kept) }
    }

    /// A promise of `transform` of this one's answer (the service records its metrics so).
    public func map(_ transform: @escaping @Sendable (HTTPResponse) -> HTTPResponse) -> HTTPPromise {
        let mapped = HTTPPromise()
        whenKept { mapped.keep(transform($0)) }
        return mapped
    }

    /// Blocks until the answer is given: for callers outside the event loops (a whole request
    /// answered in process, in tests), never on a loop.
    public func wait() -> HTTPResponse {
        let done = DispatchSemaphore(value: 0)
        let answer = Locked<HTTPResponse?>(nil)
        whenKept { response in
            answer.withLock { $0 = response }
            done.signal()
        }
        done.wait()
        return answer.withLock { $0! }
    }
}

/// The application side of the transport.
public protocol HTTPResponder: Sendable {
    func admit(_ head: HTTPRequest) -> HTTPAdmission
    /// The transport refused a request from `peer` before any route saw it (malformed
    /// framing, a head too large, a deadline): the application may charge it to the peer's
    /// limits, so refusals are not free to repeat.
    func refused(peer: IPAddress)
}

extension HTTPResponder {
    public func refused(peer: IPAddress) {}
}

/// A responder that takes every request with a body up to `maxBody`: for tests and small
/// servers that need no admission rules. Nothing is vouched for here, so every body is
/// anonymous; with no rules there are no shares either, only the anonymous pool.
struct AcceptingResponder: HTTPResponder {
    let maxBody: Int
    let handler: HTTPServer.Handler

    func admit(_ head: HTTPRequest) -> HTTPAdmission { .readBody(limit: maxBody, charge: .anonymous(client: nil)) { [handler] in .now(handler($0)) } }
}

/// Open connections per client address, so one address cannot take every connection slot.
/// IPv4 addresses count one each; IPv6 ones by their `ipv6Prefix` network and also by the
/// wider networks one holder is usually given (a subscriber's /56, a site's /48), each with
/// a proportionally larger limit: otherwise one /48 would hold 65,536 × the limit. A
/// connection is counted under every group or none. Peers the server trusts as proxies are
/// not counted at all (the caller does not ask).
final class ConnectionCounter: Sendable {
    /// One counted network: its masked address and its prefix length (a /56 and a /64 can
    /// mask to the same bits, so the length is part of the key).
    private struct Group: Hashable {
        let network: IPAddress
        let bits: Int
    }

    /// IPv6 networks wider than the per-address one, and how many times `limit` each holds.
    static let widerIPv6Networks: [(bits: Int, factor: Int)] = [(56, 2), (48, 8)]

    private let counts = Locked<[Group: Int]>([:])
    let limit: Int
    let ipv6Prefix: Int

    init(limit: Int, ipv6Prefix: Int = 64) {
        self.limit = limit
        self.ipv6Prefix = ipv6Prefix
    }

    private func groups(_ peer: IPAddress) -> [(group: Group, limit: Int)] {
        if peer.isIPv4 { return [(Group(network: peer, bits: 32), limit)] }
        var groups = [(Group(network: peer.limitKey(ipv6Prefix: ipv6Prefix), bits: ipv6Prefix), limit)]
        for wider in ConnectionCounter.widerIPv6Networks where wider.bits < ipv6Prefix {
            groups.append((Group(network: peer.limitKey(ipv6Prefix: wider.bits), bits: wider.bits), limit * wider.factor))
        }
        return groups
    }

    /// Counts a new connection from `peer`; false (and nothing counted) when any of its
    /// groups is at its limit.
    func open(_ peer: IPAddress) -> Bool {
        guard limit > 0 else { return true }
        let groups = groups(peer)
        return counts.withLock { counts in
            guard groups.allSatisfy({ counts[$0.group, default: 0] < $0.limit }) else { return false }
            for (group, _) in groups { counts[group, default: 0] += 1 }
            return true
        }
    }

    func close(_ peer: IPAddress) {
        guard limit > 0 else { return }
        let groups = groups(peer)
        counts.withLock { counts in
            for (group, _) in groups {
                let n = counts[group, default: 1] - 1
                counts[group] = n > 0 ? n : nil
            }
        }
    }

    /// Connections counted for `peer`'s own group (its address, or its `ipv6Prefix` network).
    func count(_ peer: IPAddress) -> Int {
        let group = groups(peer)[0].group
        return counts.withLock { $0[group, default: 0] }
    }
}
