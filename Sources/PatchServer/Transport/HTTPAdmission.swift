import Synchronization

/// What the application decides from a request's head alone, before the transport keeps a
/// single body byte: route, authentication and limits all run here, so an unauthenticated
/// or unroutable upload costs the server its head and nothing more.
public enum HTTPAdmission: Sendable {
    /// Answer now. A body the request declares is not read: the connection is closed after
    /// the answer, since the unread bytes cannot be told apart from a next request.
    case answer(HTTPResponse)
    /// Read a body of at most `limit` bytes, reserved from the body budget as `charge` says
    /// (`100 Continue` is sent first if the client asked for it), then answer with `finish`
    /// of the whole request. An anonymous body also has the shorter deadline
    /// (`HTTPServerConfiguration.anonymousBodyTimeout`).
    case readBody(limit: Int, charge: BodyCharge, finish: @Sendable (HTTPRequest) -> HTTPResponse)
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

    func admit(_ head: HTTPRequest) -> HTTPAdmission { .readBody(limit: maxBody, charge: .anonymous(client: nil), finish: handler) }
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

    private let counts = Mutex<[Group: Int]>([:])
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
