import Synchronization

/// What the application decides from a request's head alone, before the transport keeps a
/// single body byte: route, authentication and limits all run here, so an unauthenticated
/// or unroutable upload costs the server its head and nothing more.
public enum HTTPAdmission: Sendable {
    /// Answer now. A body the request declares is not read: the connection is closed after
    /// the answer, since the unread bytes cannot be told apart from a next request.
    case answer(HTTPResponse)
    /// Read a body of at most `limit` bytes (`100 Continue` is sent first if the client
    /// asked for it), then answer with `finish` of the whole request.
    case readBody(limit: Int, finish: @Sendable (HTTPRequest) -> HTTPResponse)
}

/// The application side of the transport.
public protocol HTTPResponder: Sendable {
    func admit(_ head: HTTPRequest) -> HTTPAdmission
}

/// A responder that takes every request with a body up to `maxBody`: for tests and small
/// servers that need no admission rules.
struct AcceptingResponder: HTTPResponder {
    let maxBody: Int
    let handler: HTTPServer.Handler

    func admit(_ head: HTTPRequest) -> HTTPAdmission { .readBody(limit: maxBody, finish: handler) }
}

/// Request-body bytes reserved by every request in flight, across all connections: an upload
/// reserves its declared length (or its route's limit, when chunked) before a byte is read,
/// so a crowd of large uploads meets a 503, never an out-of-memory kill.
final class BodyBudget: Sendable {
    private let reserved = Atomic<Int>(0)
    let capacity: Int

    init(capacity: Int) { self.capacity = capacity }

    func reserve(_ bytes: Int) -> Bool {
        var current = reserved.load(ordering: .relaxed)
        while true {
            guard current + bytes <= capacity else { return false }
            let (done, actual) = reserved.compareExchange(expected: current, desired: current + bytes, ordering: .acquiringAndReleasing)
            if done { return true }
            current = actual
        }
    }

    func release(_ bytes: Int) { reserved.subtract(bytes, ordering: .relaxed) }

    var inUse: Int { reserved.load(ordering: .relaxed) }
}

/// Open connections per client address (IPv6 grouped by prefix), so one address cannot take
/// every connection slot. Addresses the server trusts as proxies are not counted.
final class ConnectionCounter: Sendable {
    private let counts = Mutex<[IPAddress: Int]>([:])
    let limit: Int

    init(limit: Int) { self.limit = limit }

    /// Counts a new connection from `key`; false (and nothing counted) past the limit.
    func open(_ key: IPAddress) -> Bool {
        counts.withLock { counts in
            let n = counts[key, default: 0]
            guard limit <= 0 || n < limit else { return false }
            counts[key] = n + 1
            return true
        }
    }

    func close(_ key: IPAddress) {
        counts.withLock { counts in
            let n = counts[key, default: 1] - 1
            counts[key] = n > 0 ? n : nil
        }
    }

    func count(_ key: IPAddress) -> Int { counts.withLock { $0[key, default: 0] } }
}
