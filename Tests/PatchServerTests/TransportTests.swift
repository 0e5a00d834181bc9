import Foundation
import Testing
@testable import HTTPTransport
@testable import PatchServer

/// The HTTP transport on a loopback port the test picks, spoken to with raw
/// sockets so keep-alive and limits are seen exactly as a client sees them.
@Suite("HTTP transport on loopback")
struct TransportTests {
    static func server(maxBody: Int = 1024, memory: Int = 8 * 1024) throws -> HTTPServer {
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        configuration.maxBodySize = maxBody
        configuration.maxHeadSize = memory
        let prepared = HTTPResponse(status: 200, headers: [("Content-Type", "text/plain")], body: Array("prepared".utf8), prepared: true)
        return try HTTPServer(configuration: configuration) { request in
            if request.path == "/prepared" { return prepared }
            return .text("\(request.method) \(request.path) body=\(request.body.count) q=\(request.query("q") ?? "-") h=\(request.header("x-test") ?? "-")")
        }
    }

    /// Sends raw bytes on one connection and reads until `responses` complete responses arrived or the peer closed.
    static func exchange(port: UInt16, _ payload: String, responses: Int) throws -> String {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard connected == 0 else { throw POSIXError(.ECONNREFUSED) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        _ = payload.withCString { send(fd, $0, strlen($0), 0) }
        var received = ""
        var buffer = [UInt8](repeating: 0, count: 65536)
        while received.components(separatedBy: "HTTP/1.1 ").count - 1 < responses || !lastResponseComplete(received) {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            received += String(decoding: buffer[0..<n], as: UTF8.self)
        }
        return received
    }

    /// Whether the last response has all the body its Content-Length announces.
    static func lastResponseComplete(_ text: String) -> Bool {
        guard let head = text.range(of: "HTTP/1.1 ", options: .backwards),
            let end = text.range(of: "\r\n\r\n", range: head.upperBound..<text.endIndex) else { return false }
        let headers = text[head.upperBound..<end.lowerBound]
        guard let line = headers.split(separator: "\r\n").first(where: { $0.lowercased().hasPrefix("content-length:") }),
            let length = Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) else { return true }
        return text[end.upperBound...].utf8.count >= length
    }

    @Test("two requests on one connection are both answered and the connection stays open")
    func keepAlive() throws {
        let server = try Self.server()
        let request = "GET /a?q=1 HTTP/1.1\r\nHost: x\r\nX-Test: yes\r\n\r\n"
        let answer = try Self.exchange(port: server.port, request + request.replacingOccurrences(of: "/a", with: "/prepared"), responses: 2)
        #expect(answer.components(separatedBy: "HTTP/1.1 200").count == 3)
        #expect(answer.contains("GET /a body=0 q=1 h=yes"))
        #expect(answer.contains("prepared"))
        #expect(!answer.lowercased().contains("connection: close"))
    }

    @Test("a request body is delivered whole; one over the limit is 413 before it is read")
    func bodies() throws {
        let server = try Self.server(maxBody: 16)
        let ok = try Self.exchange(port: server.port, "POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n0123456789", responses: 1)
        #expect(ok.contains("POST /p body=10"))
        let big = try Self.exchange(port: server.port, "POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n", responses: 1)
        #expect(big.hasPrefix("HTTP/1.1 413"))
        #expect(big.contains("too_large"))
        let chunked = "POST /p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n14\r\n01234567890123456789\r\n0\r\n\r\n"
        #expect(try Self.exchange(port: server.port, chunked, responses: 1).hasPrefix("HTTP/1.1 413"), "a chunked body over the limit too")
    }

    @Test("headers beyond the connection memory limit are refused, not buffered")
    func headerLimit() throws {
        let server = try Self.server(memory: 4 * 1024)
        let huge = "GET / HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "a", count: 16 * 1024))\r\n\r\n"
        let answer = try Self.exchange(port: server.port, huge, responses: 1)
        #expect(answer.hasPrefix("HTTP/1.1 431") || answer.hasPrefix("HTTP/1.1 413") || answer.isEmpty)
        // The server is still healthy afterwards.
        #expect(try Self.exchange(port: server.port, "GET /ok HTTP/1.1\r\nHost: x\r\n\r\n", responses: 1).hasPrefix("HTTP/1.1 200"))
    }

    @Test("drain finishes promptly with no requests in flight")
    func drain() throws {
        let server = try Self.server()
        _ = try Self.exchange(port: server.port, "GET /x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", responses: 1)
        let started = Date()
        server.drain(timeout: 5)
        #expect(Date().timeIntervalSince(started) < 5)
    }

    @Test("stop lets the request in flight finish, joins the workers, then refuses connections; twice is harmless")
    func stopJoins() throws {
        let started = AtomicCounter(), finished = AtomicCounter(), answered = AtomicCounter()
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        let server = try HTTPServer(configuration: configuration) { _ in
            started.store(1)
            usleep(300_000)
            finished.store(1)
            return .text("late")
        }
        let port = server.port
        let client = Thread {
            let answer = try? Self.exchange(port: port, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n", responses: 1)
            answered.store(answer?.hasPrefix("HTTP/1.1 200") == true ? 1 : 0)
        }
        client.start()
        while started.load == 0 { usleep(1_000) }
        server.stop(drainTimeout: 5)
        // Returned only after the handler did: nothing of the server runs past stop().
        #expect(finished.load == 1)
        #expect(server.openConnections == 0)
        #expect(throws: POSIXError.self) { try Self.exchange(port: port, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", responses: 1) }
        server.stop()
        for _ in 0..<500 where answered.load == 0 { usleep(10_000) }
        #expect(answered.load == 1)
    }

    @Test("a header sent on several lines is read whole: X-Forwarded-For lines joined in order, case-insensitively")
    func joinedHeader() throws {
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        let server = try HTTPServer(configuration: configuration) { request in
            .text("first=\(request.header("X-Forwarded-For") ?? "-") all=\(request.joinedHeader("X-Forwarded-For") ?? "-")")
        }
        let long = (1...400).map { "10.0.\($0 / 250).\($0 % 250)" }.joined(separator: ", ")
        let two = try Self.exchange(port: server.port, "GET / HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 9.9.9.9\r\nx-forwarded-for: 203.0.113.1, 10.0.0.2\r\n\r\n", responses: 1)
        #expect(two.hasSuffix("first=9.9.9.9 all=9.9.9.9, 203.0.113.1, 10.0.0.2"))
        // Longer than the first buffer the transport tries (1 KiB): read in a second pass.
        let big = try Self.exchange(port: server.port, "GET / HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: \(long)\r\nX-Forwarded-For: 203.0.113.1\r\n\r\n", responses: 1)
        #expect(big.hasSuffix("all=\(long), 203.0.113.1"))
        let none = try Self.exchange(port: server.port, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", responses: 1)
        #expect(none.hasSuffix("first=- all=-"))
    }

    /// Whether this machine can bind ::1 (a container may run without IPv6).
    static var hasIPv6Loopback: Bool {
        let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_addr = in6addr_loopback
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) == 0 }
        }
    }

    @Test("listens on IPv4 or IPv6 addresses; anything else is refused before listening")
    func listenAddresses() throws {
        for host in ["127.0.0.1"] + (Self.hasIPv6Loopback ? ["::1"] : []) {
            var configuration = HTTPServerConfiguration()
            configuration.host = host
            configuration.port = 0
            let server = try HTTPServer(configuration: configuration) { _ in .text("ok") }
            #expect(server.port > 0, "\(host)")
        }
        for host in ["localhost", "[::1]", "1.2.3", ""] {
            var configuration = HTTPServerConfiguration()
            configuration.host = host
            configuration.port = 0
            #expect(throws: HTTPServerError.self, "\(host)") { try HTTPServer(configuration: configuration) { _ in .text("ok") } }
        }
    }
}
