import Foundation
import HTTPTransport
import Locking
import PatchCore
import PatchRegistry
import PatchServer
import HotpatchTestSupport

/// One canned answer of the mirror.
struct CannedResponse: Sendable {
    var status: Int
    var headers: [(String, String)]
    var body: [UInt8]

    static func ok(_ body: [UInt8]) -> CannedResponse { CannedResponse(status: 200, headers: [], body: body) }
}

/// A static mirror over real loopback HTTP (patchd's transport): a mutable map from URL path to
/// the answer, built from `registry.export` output, so a test can tamper with, replay,
/// delay or redirect any file. Every request path is logged; unknown paths are 404.
final class Mirror: @unchecked Sendable {
    // @unchecked: `server` is only set in init and cleared by `stop` (the test, or deinit).
    /// What the mirror serves and what it was asked: the server's threads and the test share it.
    private struct State {
        var routes: [String: CannedResponse] = [:]
        var requests: [String] = []
        /// POST requests in full (device reports), headers and body.
        var posts: [HTTPRequest] = []
        /// Every request in full, whatever its method.
        var received: [HTTPRequest] = []
        /// Bundle downloads (paths under /targets/), with their headers.
        var targetRequests: [HTTPRequest] = []
        var delay: TimeInterval = 0
        /// Per path, instead of `delay`.
        var pathDelays: [String: TimeInterval] = [:]
    }

    /// Set when the mirror goes away: delayed answers stop waiting, so tearing a mirror down
    /// never blocks (its deinit runs on one of Swift concurrency's few threads, and a handler
    /// asleep for 20 s would hold that thread, starving other tests' timers).
    private final class Stopping: @unchecked Sendable {
        // @unchecked: `stopped` is only touched under `wake`, a condition variable rather than
        // `Locked` because delayed answers sleep on it.
        let wake = NSCondition()
        var stopped = false
    }

    private let state = Locked(State())
    private let stopping = Stopping()
    private var server: HTTPServer?
    let port: UInt16
    let host: String
    private let scheme: String

    /// `tls`: serve HTTPS (HTTP/1.1 only, as patchd does) with this certificate and key.
    init(host: String = "127.0.0.1", tls: (certificatePEM: String, keyPEM: String)? = nil) throws {
        var configuration = HTTPServerConfiguration()
        configuration.host = host
        configuration.tlsCertificatePEM = tls?.certificatePEM
        configuration.tlsKeyPEM = tls?.keyPEM
        configuration.port = 0
        configuration.threads = 4
        let state = self.state, stopping = self.stopping
        let server = try HTTPServer(configuration: configuration) { request in
            let (answer, delay) = state.withLock { state in
                state.requests.append(request.path)
                state.received.append(request)
                if request.method == "POST" { state.posts.append(request) }
                if request.path.contains("/targets/") { state.targetRequests.append(request) }
                return (state.routes[request.path], state.pathDelays[request.path] ?? state.delay)
            }
            if delay > 0 {
                let until = Date().addingTimeInterval(delay)
                stopping.wake.lock()
                while !stopping.stopped, stopping.wake.wait(until: until) {}
                stopping.wake.unlock()
            }
            guard let answer else { return HTTPResponse(status: 404, body: Array("not found".utf8)) }
            return HTTPResponse(status: answer.status, headers: answer.headers, body: answer.body)
        }
        self.server = server
        self.port = server.port
        self.host = host
        self.scheme = tls == nil ? "http" : "https"
    }

    var url: URL { URL(string: "\(scheme)://\(host):\(port)")! }

    /// Serves `files` (path → bytes) with status 200, on top of what is served already
    /// (an export never deletes, nor does the mirror).
    func serve(_ files: [String: [UInt8]]) {
        state.withLock { state in
            for (path, bytes) in files { state.routes[path] = .ok(bytes) }
        }
    }

    subscript(path: String) -> CannedResponse? {
        get { state.withLock { $0.routes[path] } }
        set { state.withLock { $0.routes[path] = newValue } }
    }

    /// The bytes served at `path` (which must be served).
    func bytes(_ path: String) -> [UInt8] { self[path]!.body }

    /// Seconds every answer waits before it is sent.
    var delay: TimeInterval {
        get { state.withLock { $0.delay } }
        set { state.withLock { $0.delay = newValue } }
    }

    /// Seconds the answers for `path` wait, whatever `delay` says.
    func delay(_ path: String, by seconds: TimeInterval) { state.withLock { $0.pathDelays[path] = seconds } }

    var requests: [String] { state.withLock { $0.requests } }
    var posts: [HTTPRequest] { state.withLock { $0.posts } }
    var received: [HTTPRequest] { state.withLock { $0.received } }
    var targetRequests: [HTTPRequest] { state.withLock { $0.targetRequests } }

    /// Every served path under /targets/.
    var targetPaths: [String] { state.withLock { $0.routes.keys.filter { $0.contains("/targets/") }.sorted() } }

    /// Stops listening: the port refuses connections from now on.
    func stop() {
        stopping.wake.lock()
        stopping.stopped = true
        stopping.wake.broadcast()
        stopping.wake.unlock()
        server = nil
    }

    deinit { stop() }
}

/// The real service (`PatchService` over `HTTPServer`) on a registry opened on the
/// fixture's directories, counting the requests it answers.
final class LiveServer: @unchecked Sendable {
    let service: PatchService
    private let server: HTTPServer
    private let counter = Locked(0)

    init(_ fixture: ClientFixture) throws {
        let registry = try TestBackend.registry(dataDirectory: fixture.dataDirectory, keysDirectory: fixture.keysDirectory)
        let service = try PatchService(registry: registry, log: { _ in })
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        configuration.threads = 4
        server = try HTTPServer(configuration: configuration, responder: Counting(service: service, counter: counter))
        self.service = service
    }

    var url: URL { URL(string: "http://127.0.0.1:\(server.port)")! }
    var requestCount: Int { counter.withLock { $0 } }

    /// The service as patchd serves it (admission from the head), counting requests.
    private struct Counting: HTTPResponder {
        let service: PatchService
        let counter: Locked<Int>

        func admit(_ head: HTTPRequest) -> HTTPAdmission {
            counter.withLock { $0 += 1 }
            return service.admit(head)
        }
    }
}

/// A raw TCP server for what patchd's transport will not do: it answers the paths ending
/// in a key of `files` with those bytes, root versions with 404, and every other path with a
/// chunked body that never ends (no Content-Length), until the client hangs up or `cap` bytes
/// went out on that connection (a stream that reaches the cap was read to the end by the client).
final class EndlessServer: @unchecked Sendable {
    let port: UInt16
    private let listener: Int32
    private let sent = Locked(0)
    private let capped = Locked(0)

    convenience init(timestamp: [UInt8], cap: Int = 64 << 20) throws {
        try self.init(files: ["/timestamp.json": timestamp], cap: cap)
    }

    init(files: [String: [UInt8]], cap: Int = 64 << 20) throws {
        let (fd, port) = try loopbackListener()
        self.port = port
        listener = fd
        let sent = self.sent
        let capped = self.capped
        Thread.detachNewThread {
            while true {
                let connection = accept(fd, nil, nil)
                if connection < 0 { return }
                Thread.detachNewThread { EndlessServer.serve(connection, files: files, cap: cap, sent: sent, capped: capped) }
            }
        }
    }

    deinit {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }
    /// Body bytes pushed into endless responses so far.
    var endlessBytesSent: Int { sent.withLock { $0 } }
    /// Endless responses that went on until the cap: the client never hung up.
    var streamsReadToCap: Int { capped.withLock { $0 } }

    private static func serve(_ fd: Int32, files: [String: [UInt8]], cap: Int, sent: Locked<Int>, capped: Locked<Int>) {
        defer { close(fd) }
        var request: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        // The head may come with a body in the same segment (a POST of reports): read up to its end.
        while !request.holdsHead {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { return }
            request += buffer[0..<n]
        }
        let line = String(decoding: request.prefix { $0 != 0x0D }, as: UTF8.self)
        let path = line.split(separator: " ").dropFirst().first.map(String.init) ?? "/"
        func send(_ bytes: [UInt8]) -> Bool {
            var offset = 0
            while offset < bytes.count {
                let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
                if n <= 0 { return false }
                offset += n
            }
            return true
        }
        if let fixed = files.first(where: { path.hasSuffix($0.key) })?.value {
            _ = send(Array("HTTP/1.1 200 OK\r\nContent-Length: \(fixed.count)\r\nConnection: close\r\n\r\n".utf8) + fixed)
            return
        }
        if path.hasSuffix(".root.json") {
            _ = send(Array("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8))
            return
        }
        guard send(Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n".utf8)) else { return }
        let chunk = [UInt8](repeating: 0x41, count: 16 * 1024)
        let framed = Array(String(chunk.count, radix: 16).utf8) + [0x0D, 0x0A] + chunk + [0x0D, 0x0A]
        var mine = 0
        while mine < cap, send(framed) {
            mine += chunk.count
            sent.withLock { $0 += chunk.count }
        }
        if mine >= cap { capped.withLock { $0 += 1 } }
    }
}

/// A loopback TCP forwarder to `port` that counts the connections it accepts: what a client
/// reuses (one accepted connection for many requests) shows here. Bytes pass through as they
/// come, both ways, until either side closes.
final class CountingProxy: @unchecked Sendable {
    let port: UInt16
    private let listener: Int32
    private let accepted = Locked(0)

    init(to target: UInt16) throws {
        let (fd, port) = try loopbackListener()
        self.port = port
        listener = fd
        let accepted = self.accepted
        Thread.detachNewThread {
            while true {
                let client = accept(fd, nil, nil)
                if client < 0 { return }
                accepted.withLock { $0 += 1 }
                let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
                var backend = sockaddr_in()
                backend.sin_family = sa_family_t(AF_INET)
                backend.sin_port = target.bigEndian
                backend.sin_addr.s_addr = inet_addr("127.0.0.1")
                let connected = withUnsafePointer(to: &backend) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
                guard connected == 0 else { close(server); close(client); continue }
                // Each direction on its own thread; the one that sees its side close shuts the
                // other side's writing down, and the second to finish closes both.
                let done = Locked(0)
                for (from, to) in [(client, server), (server, client)] {
                    Thread.detachNewThread {
                        CountingProxy.pump(from, to)
                        if done.withLock({ $0 += 1; return $0 }) == 2 { close(client); close(server) }
                    }
                }
            }
        }
    }

    deinit {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }
    /// TCP connections accepted so far.
    var acceptedConnections: Int { accepted.withLock { $0 } }

    private static func pump(_ from: Int32, _ to: Int32) {
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let n = recv(from, &buffer, buffer.count, 0)
            if n <= 0 { break }
            var offset = 0
            while offset < n {
                let sent = buffer.withUnsafeBytes { Glibc.send(to, $0.baseAddress! + offset, n - offset, Int32(MSG_NOSIGNAL)) }
                if sent <= 0 { shutdown(from, Int32(SHUT_RD)); return }
                offset += sent
            }
        }
        shutdown(to, Int32(SHUT_WR))
    }
}

extension Array where Element == UInt8 {
    fileprivate var holdsHead: Bool {
        let end: [UInt8] = [0x0D, 0x0A, 0x0D, 0x0A]
        return count >= end.count && (0...(count - end.count)).contains { Array(self[$0..<($0 + end.count)]) == end }
    }
}

/// A socket listening on 127.0.0.1 at a port the kernel picked, and that port.
func loopbackListener() throws -> (fd: Int32, port: UInt16) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var yes: Int32 = 1
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    guard bound == 0, listen(fd, 16) == 0 else { close(fd); throw POSIXError(.EADDRINUSE) }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
    return (fd, UInt16(bigEndian: address.sin_port))
}

/// A loopback port nothing listens on: bound then closed, so it was free a moment ago.
func unusedPort() -> UInt16 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
    return UInt16(bigEndian: address.sin_port)
}
