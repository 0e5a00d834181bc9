import Foundation
import Testing
@testable import HTTPTransport
@testable import PatchServer

/// One raw TCP connection to a loopback server, from a chosen source address (anything in
/// 127.0.0.0/8), for what an HTTP client library would hide: half-sent heads, trickled
/// bytes, bodies the server must not wait for.
final class RawConnection {
    let fd: Int32

    /// `receiveBuffer`: a small receive window, set before connecting (a client that reads slowly).
    init(port: UInt16, from source: String = "127.0.0.1", timeout: Int = 5, receiveBuffer: Int32? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if var window = receiveBuffer { setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &window, socklen_t(MemoryLayout<Int32>.size)) }
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        local.sin_addr.s_addr = inet_addr(source)
        _ = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard connected == 0 else {
            close(fd)
            throw POSIXError(.ECONNREFUSED)
        }
        var time = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    func send(_ text: String) { _ = text.withCString { Glibc.send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) } }

    /// Sends `piece(i)` every 0.2 s (up to 20 times) until the server answers or closes: the
    /// answer and the seconds it took from the first piece.
    func trickle(_ piece: (Int) -> String) -> (answer: String, seconds: Double) {
        let started = Date()
        for i in 0..<20 {
            usleep(200_000)
            send(piece(i))
            var probe = [UInt8](repeating: 0, count: 4096)
            let n = recv(fd, &probe, probe.count, Int32(MSG_DONTWAIT))
            if n > 0 { return (String(decoding: probe[0..<n], as: UTF8.self), Date().timeIntervalSince(started)) }
            if n == 0 { break }
        }
        return ("", Date().timeIntervalSince(started))
    }

    /// What arrives until `until` is seen, the peer closes, or the receive timeout passes.
    func read(until marker: String? = nil) -> (text: String, closed: Bool) {
        var received = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            if let marker, String(decoding: received, as: UTF8.self).contains(marker) { return (String(decoding: received, as: UTF8.self), false) }
            let n = recv(fd, &buffer, buffer.count, 0)
            if n == 0 { return (String(decoding: received, as: UTF8.self), true) }
            if n < 0 { return (String(decoding: received, as: UTF8.self), false) }
            received += buffer[0..<n]
        }
    }
}

/// The front door on loopback: admission from the head, 100 Continue, the body budget,
/// deadlines and the per-address connection limit, with a responder that stands in for the
/// service (a token "ok" admits an upload of up to 1,000 bytes).
@Suite("HTTP front door on loopback", .serialized)
struct FrontDoorTests {
    struct GatedResponder: HTTPResponder {
        func admit(_ head: HTTPRequest) -> HTTPAdmission {
            if head.path == "/healthz" { return .answer(.text("ok")) }
            guard head.header("Authorization") == "ok" else { return .answer(HTTPError.unauthorized.response) }
            return .readBody(limit: 1000, charge: .token(holder: "ok")) { .now(.text("got \($0.body.count)")) }
        }
    }

    static func server(_ change: (inout HTTPServerConfiguration) -> Void = { _ in }) throws -> HTTPServer {
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        configuration.threads = 2
        change(&configuration)
        return try HTTPServer(configuration: configuration, responder: GatedResponder())
    }

    @Test("answers a full socket cuts anywhere (head, Date, the head's end, body) go on from the cut: 2,000 pipelined arrive whole")
    func answersCutByAFullSocket() throws {
        let server = try Self.server { $0.maxNewConnectionsPerIPPerSecond = 0 }
        let c = try RawConnection(port: server.port, timeout: 10)
        // A small receive window: the server's writes are cut short wherever the socket fills.
        var window: Int32 = 16384
        setsockopt(c.fd, SOL_SOCKET, SO_RCVBUF, &window, socklen_t(MemoryLayout<Int32>.size))
        let count = 2_000
        c.send(String(repeating: "GET /healthz HTTP/1.1\r\nHost: h\r\n\r\n", count: count))
        usleep(200_000)  // let the answers fill both buffers before any is read
        var received = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 1024)
        let started = Date()
        // Every answer has the same length (Date's format is fixed-width): read that many.
        var size: Int?
        while received.count < (size ?? 1) * count, Date().timeIntervalSince(started) < 10 {
            let n = recv(c.fd, &buffer, buffer.count, 0)
            guard n > 0 else { break }
            received += buffer[0..<n]
            if size == nil, let end = String(decoding: received, as: UTF8.self).range(of: "\r\n\r\nok") {
                size = String(decoding: received, as: UTF8.self)[..<end.upperBound].utf8.count
            }
        }
        let answers = String(decoding: received, as: UTF8.self).components(separatedBy: "\r\n\r\nok").count - 1
        // Every answer the same bytes but its Date: one answer, repeated.
        let text = String(decoding: received, as: UTF8.self).components(separatedBy: "\r\n").filter { !$0.hasPrefix("Date: ") }.joined(separator: "\r\n")
        let one = try #require(text.range(of: "\r\n\r\nok")).upperBound
        #expect(text.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(answers == count, "\(received.count) bytes")
        #expect(text == String(repeating: String(text[..<one]), count: count))
    }

    @Test("an unauthenticated upload with Expect: 100-continue gets 401 and no 100 Continue; an admitted one gets 100, then its answer")
    func expectContinue() throws {
        let server = try Self.server()
        let refused = try RawConnection(port: server.port)
        refused.send("POST /up HTTP/1.1\r\nHost: h\r\nContent-Length: 900\r\nExpect: 100-continue\r\n\r\n")
        let answer = refused.read()
        #expect(answer.text.hasPrefix("HTTP/1.1 401"))
        #expect(!answer.text.contains("100 Continue"))
        #expect(answer.text.contains("Content-Type: application/json"))
        #expect(answer.closed, "the unread body is not taken for a next request")

        let admitted = try RawConnection(port: server.port)
        admitted.send("POST /up HTTP/1.1\r\nHost: h\r\nAuthorization: ok\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
        #expect(admitted.read(until: "\r\n\r\n").text == "HTTP/1.1 100 Continue\r\n\r\n")
        admitted.send("hello")
        #expect(admitted.read(until: "got 5").text.hasPrefix("HTTP/1.1 200"))
    }

    @Test("a body larger than the route takes is refused from the head, before it is sent")
    func tooLarge() throws {
        let server = try Self.server()
        let c = try RawConnection(port: server.port)
        c.send("POST /up HTTP/1.1\r\nHost: h\r\nAuthorization: ok\r\nContent-Length: 10000000\r\n\r\n")
        let answer = c.read()
        #expect(answer.text.hasPrefix("HTTP/1.1 413"))
        #expect(answer.closed)
    }

    @Test("uploads past the server-wide body budget get 503 with Retry-After while the first is in flight; the budget is given back")
    func budget() throws {
        let server = try Self.server {
            $0.bodyBudget = 3000
            $0.tokenBodyBudget = 1500  // the pool of these uploads (a token, "ok"), all of it for one holder
            $0.tokenBodyShare = 1500
        }
        let first = try RawConnection(port: server.port)
        first.send("POST /up HTTP/1.1\r\nHost: h\r\nAuthorization: ok\r\nContent-Length: 900\r\n\r\npartial")
        for _ in 0..<200 where server.bodyBytesReserved == 0 { usleep(5_000) }
        #expect(server.bodyBytesReserved == 900)
        let second = try RawConnection(port: server.port)
        second.send("POST /up HTTP/1.1\r\nHost: h\r\nAuthorization: ok\r\nContent-Length: 900\r\n\r\n")
        let busy = second.read()
        #expect(busy.text.hasPrefix("HTTP/1.1 503"))
        #expect(busy.text.contains("Retry-After: 1"))
        first.send(String(repeating: "x", count: 893))
        #expect(first.read(until: "got 900").text.hasPrefix("HTTP/1.1 200"))
        for _ in 0..<200 where server.bodyBytesReserved != 0 { usleep(5_000) }
        #expect(server.bodyBytesReserved == 0)
    }

    @Test("a head trickled past the header deadline gets 408 and is closed; trickling does not extend it")
    func headDeadline() throws {
        let server = try Self.server { $0.headerTimeout = 1 }
        let c = try RawConnection(port: server.port)
        c.send("GET /healthz HTTP/1.1\r\n")
        let (answer, elapsed) = c.trickle { "X-\($0): y\r\n" }
        #expect(answer.hasPrefix("HTTP/1.1 408"))
        #expect(elapsed < 2.5, "cut at \(elapsed) s")
    }

    @Test("a body trickled past the request deadline gets 408 and is closed")
    func bodyDeadline() throws {
        let server = try Self.server { $0.requestTimeout = 1 }
        let c = try RawConnection(port: server.port)
        c.send("POST /up HTTP/1.1\r\nHost: h\r\nAuthorization: ok\r\nContent-Length: 100\r\n\r\n")
        let (answer, elapsed) = c.trickle { _ in "x" }
        #expect(answer.hasPrefix("HTTP/1.1 408"))
        #expect(elapsed < 2.5, "cut at \(elapsed) s")
    }

    @Test("one address holding hundreds of half-sent connections cannot keep another address from being served")
    func perAddress() throws {
        let server = try Self.server {
            $0.maxConnectionsPerIP = 20
            $0.maxNewConnectionsPerIPPerSecond = 0  // 300 connections at once: the count, not the rate, is tested here
        }
        var held: [RawConnection] = []
        for _ in 0..<300 {
            let c = try RawConnection(port: server.port, timeout: 1)
            c.send("GET /healthz HTTP/1.1\r\n")
            held.append(c)
        }
        for _ in 0..<400 where server.openConnections != 20 { usleep(5_000) }
        usleep(100_000)  // the rest of the backlog is accepted and turned away meanwhile
        #expect(server.openConnections == 20, "the server kept only the limit of one address's connections")
        let refused = try RawConnection(port: server.port)
        refused.send("GET /healthz HTTP/1.1\r\nHost: h\r\n\r\n")
        let over = refused.read()
        #expect(over.text.hasPrefix("HTTP/1.1 503") || over.text.isEmpty)
        let other = try RawConnection(port: server.port, from: "127.0.0.2")
        other.send("GET /healthz HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(other.read(until: "ok").text.hasPrefix("HTTP/1.1 200"))
        held.removeAll()
    }

    @Test("after a refused head nothing more on the connection is served (no smuggled second request)")
    func noSmuggling() throws {
        let server = try Self.server()
        let c = try RawConnection(port: server.port)
        c.send("POST /healthz HTTP/1.1\r\nHost: h\r\nContent-Length: 44\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /healthz HTTP/1.1\r\nHost: h\r\n\r\n")
        let answer = c.read()
        #expect(answer.text.hasPrefix("HTTP/1.1 400"))
        #expect(answer.text.components(separatedBy: "HTTP/1.1 ").count == 2, "one answer")
        #expect(answer.closed)
    }

    @Test("an absolute-form target is served; the configured header-line limit refuses the next line with 431 before the head ends")
    func absoluteFormAndFieldLimit() throws {
        let server = try Self.server { $0.maxHeaderFields = 5 }
        let c = try RawConnection(port: server.port)
        c.send("GET http://127.0.0.1/healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        #expect(c.read(until: "\r\n\r\nok").text.hasPrefix("HTTP/1.1 200 OK\r\n"))
        // Host and five more: the sixth line is refused although the head has not ended.
        c.send("GET /healthz HTTP/1.1\r\nHost: h\r\n" + (1...5).map { "X-\($0): v\r\n" }.joined())
        let answer = c.read()
        #expect(answer.text.hasPrefix("HTTP/1.1 431 Request Header Fields Too Large\r\n"), "\(answer.text)")
        #expect(answer.text.contains("headers_too_large"))
        #expect(answer.closed)
    }

    @Test("pipelined requests are answered in order on one connection; HEAD gets headers only")
    func pipelined() throws {
        let server = try Self.server()
        let c = try RawConnection(port: server.port)
        c.send("GET /healthz HTTP/1.1\r\nHost: h\r\n\r\nHEAD /healthz HTTP/1.1\r\nHost: h\r\n\r\nPOST /up HTTP/1.1\r\nHost: h\r\nAuthorization: ok\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nGET /healthz HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
        let answer = c.read()
        #expect(answer.closed)
        let statuses = answer.text.components(separatedBy: "HTTP/1.1 ").dropFirst().map { $0.prefix(3) }
        #expect(statuses == ["200", "200", "200", "200"])
        #expect(answer.text.contains("got 3"))
        #expect(answer.text.components(separatedBy: "\r\n\r\nok").count == 3, "HEAD's answer has no body")
    }
}
