import Foundation
import Testing
@testable import HTTPTransport
@testable import PatchServer

/// Issue 43, items 2 and 3, through a server on loopback: the body budget's pools and shares
/// as the transport applies them, the anonymous body deadline, and shedding at the connection
/// cap the connection that made progress longest ago whatever its phase.
@Suite("HTTP front door: fair shares of the body budget and of the connection cap", .serialized)
struct FrontDoorShareTests {
    /// Stands in for the service: a POST with `Authorization: NAME` is a token body of holder
    /// NAME, any other POST an anonymous one of its peer (bodies up to 100,000 bytes);
    /// `GET /big` answers 4 MiB; anything else "ok PATH".
    struct ChargingResponder: HTTPResponder {
        static let big = HTTPResponse(status: 200, headers: [("Content-Type", "text/plain")], body: [UInt8](repeating: 98, count: 4 << 20))

        func admit(_ head: HTTPRequest) -> HTTPAdmission {
            if head.method == "POST" {
                let charge: BodyCharge = head.header("Authorization").map { .token(holder: $0) } ?? .anonymous(client: head.peer)
                return .readBody(limit: 100_000, charge: charge) { .now(.text("got \($0.body.count)")) }
            }
            return .answer(head.path == "/big" ? Self.big : .text("ok \(head.path)"))
        }
    }

    static func server(_ change: (inout HTTPServerConfiguration) -> Void) throws -> HTTPServer {
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        configuration.threads = 1
        configuration.maxNewConnectionsPerIPPerSecond = 0
        change(&configuration)
        return try HTTPServer(configuration: configuration, responder: ChargingResponder())
    }

    /// Whether the server has closed `c`: an end of stream or a reset once what it sent is
    /// read (a shed connection that was being answered has unread bytes), not a would-block.
    static func closedByServer(_ c: RawConnection, within seconds: Double = 2) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while Date() < deadline {
            let n = recv(c.fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if n == 0 || (n < 0 && errno == ECONNRESET) { return true }
            if n < 0 { usleep(10_000) }
        }
        return false
    }

    /// Whether `c` is still open: nothing more than what it was sent is waiting, and no close.
    static func stillOpen(_ c: RawConnection) -> Bool {
        var byte: UInt8 = 0
        let n = recv(c.fd, &byte, 1, Int32(MSG_DONTWAIT | MSG_PEEK))
        return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)
    }

    @Test("anonymous heads declaring bodies never sent, from 12 addresses in 4 networks, fill only the anonymous pool, each address and network its share; a token body is still read and answered")
    func anonymousCrowdLeavesTokenPool() throws {
        let server = try Self.server {
            $0.bodyBudget = 64_000
            $0.tokenBodyBudget = 32_000
            $0.addressBodyShare = 4_000
            $0.networkBodyShare = 12_000
            $0.anonymousBodyTimeout = 30
        }
        var crowd: [(RawConnection, String)] = []
        for network in 0..<4 {
            for host in 1...3 {
                for _ in 0..<6 {
                    let source = "127.0.\(10 + network).\(host)"
                    let c = try RawConnection(port: server.port, from: source, timeout: 1)
                    c.send("POST /v1/apps/demo/reports HTTP/1.1\r\nHost: h\r\nContent-Length: 1000\r\n\r\n")
                    crowd.append((c, source))
                }
            }
        }
        // Admitted or refused, in whatever order the heads are read, 32 fit: the fourth network
        // finds only the pool's last 8,000 (any other order leaves some share unspent and a
        // head that fits it admitted). The 40 refused have their 503 waiting.
        for _ in 0..<1_000 where crowd.filter({ !Self.stillOpen($0.0) }).count < 40 { usleep(5_000) }
        for _ in 0..<400 where server.anonymousBodyBytesReserved < 32_000 { usleep(5_000) }
        var refused: [String: Int] = [:]
        for (c, source) in crowd where !Self.stillOpen(c) {
            let answer = c.read()
            #expect(answer.text.hasPrefix("HTTP/1.1 503") && answer.text.contains("Retry-After: 1"), "\(answer.text)")
            refused[source, default: 0] += 1
        }
        #expect(refused.values.reduce(0, +) == 72 - 32, "\(refused)")
        #expect(refused.values.allSatisfy { $0 >= 2 }, "6 heads from each address, at most 4 of them held: \(refused)")
        #expect(server.anonymousBodyBytesReserved == 32_000)
        let late = try RawConnection(port: server.port, from: "127.0.20.1")
        late.send("POST /v1/apps/demo/reports HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\n0123456789")
        #expect(late.read().text.contains("too many uploads in progress; retry"), "the anonymous pool is full")

        let publish = try RawConnection(port: server.port, from: "127.0.10.1")
        publish.send("POST /v1/apps/demo/patches HTTP/1.1\r\nHost: h\r\nAuthorization: ci\r\nContent-Length: 10000\r\n\r\n" + String(repeating: "p", count: 10_000))
        #expect(publish.read(until: "got 10000").text.hasPrefix("HTTP/1.1 200"), "a token body from a crowded address")
        let approve = try RawConnection(port: server.port, from: "127.0.10.2")
        approve.send("POST /v1/pending/1/approve HTTP/1.1\r\nHost: h\r\nAuthorization: approver\r\nContent-Length: 2\r\n\r\n{}")
        #expect(approve.read(until: "got 2").text.hasPrefix("HTTP/1.1 200"))
        crowd.removeAll()
        for _ in 0..<400 where server.bodyBytesReserved != 0 { usleep(5_000) }
        #expect(server.bodyBytesReserved == 0, "every reservation given back as its connection closed")
    }

    @Test("one token holder's bodies never sent hold its share only: the holder's next is 503, another holder's small body is read and answered")
    func holderShare() throws {
        let server = try Self.server {
            $0.bodyBudget = 64_000
            $0.tokenBodyBudget = 32_000
            $0.tokenBodyShare = 16_000
        }
        var held: [RawConnection] = []
        for i in 0..<4 {
            let c = try RawConnection(port: server.port, from: "127.0.0.\(30 + i)", timeout: 1)
            c.send("POST /v1/apps/demo/patches HTTP/1.1\r\nHost: h\r\nAuthorization: ci\r\nContent-Length: 4000\r\n\r\n")
            held.append(c)
        }
        for _ in 0..<400 where server.bodyBytesReserved < 16_000 { usleep(5_000) }
        let next = try RawConnection(port: server.port, from: "127.0.0.40")
        next.send("POST /v1/apps/demo/patches HTTP/1.1\r\nHost: h\r\nAuthorization: ci\r\nContent-Length: 1\r\n\r\nx")
        #expect(next.read().text.contains("too many uploads in progress with this credential; retry"))
        let halt = try RawConnection(port: server.port, from: "127.0.0.41")
        halt.send("POST /v1/apps/demo/halt HTTP/1.1\r\nHost: h\r\nAuthorization: operator\r\nContent-Length: 2\r\n\r\n{}")
        #expect(halt.read(until: "got 2").text.hasPrefix("HTTP/1.1 200"))
        #expect(held.allSatisfy(Self.stillOpen))
    }

    @Test("an anonymous body not in whole within the anonymous body timeout of its head is 408; a token body keeps the request timeout")
    func anonymousBodyDeadline() throws {
        let server = try Self.server {
            $0.anonymousBodyTimeout = 1
            $0.requestTimeout = 20
        }
        let anonymous = try RawConnection(port: server.port, from: "127.0.0.50", timeout: 5)
        anonymous.send("POST /v1/apps/demo/reports HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\n")
        let (answer, elapsed) = anonymous.trickle { _ in "x" }
        #expect(answer.hasPrefix("HTTP/1.1 408"))
        #expect(elapsed > 0.7 && elapsed < 2.5, "cut at \(elapsed) s")

        let token = try RawConnection(port: server.port, from: "127.0.0.51", timeout: 5)
        token.send("POST /v1/apps/demo/patches HTTP/1.1\r\nHost: h\r\nAuthorization: ci\r\nContent-Length: 10\r\n\r\n01234")
        usleep(2_000_000)
        #expect(Self.stillOpen(token), "past the anonymous deadline, within the request timeout")
        token.send("56789")
        #expect(token.read(until: "got 10").text.hasPrefix("HTTP/1.1 200"))
    }

    @Test("at the connection cap the connection that made progress longest ago among the idle and stalled is shed, whatever its phase: a trickled head, a body never sent, an answer not read, then an idle one; one making progress is kept")
    func shedsStalledInAnyPhase() throws {
        let server = try Self.server {
            $0.maxConnections = 5
            $0.stallTimeout = 1
        }
        let head = try RawConnection(port: server.port, from: "127.0.1.1", timeout: 2)
        head.send("GET /healthz HTTP/1.1\r\nHost: h\r\nX-Slow: ")
        usleep(100_000)
        let body = try RawConnection(port: server.port, from: "127.0.1.2", timeout: 2)
        body.send("POST /v1/apps/demo/patches HTTP/1.1\r\nHost: h\r\nAuthorization: ci\r\nContent-Length: 50000\r\n\r\nstart")
        usleep(100_000)
        // A small receive window before connecting: the 4 MiB answer stops at once.
        let reader = try RawConnection(port: server.port, from: "127.0.1.3", timeout: 2, receiveBuffer: 4096)
        reader.send("GET /big HTTP/1.1\r\nHost: h\r\n\r\n")
        usleep(300_000)
        let idle = try RawConnection(port: server.port, from: "127.0.1.4", timeout: 2)
        idle.send("GET /healthz HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(idle.read(until: "ok /healthz").text.hasPrefix("HTTP/1.1 200"))
        // 80 KiB, 2 KiB every 50 ms: progress all along, past the newcomers.
        let steady = try RawConnection(port: server.port, from: "127.0.1.5", timeout: 10)
        steady.send("POST /v1/apps/demo/patches HTTP/1.1\r\nHost: h\r\nAuthorization: steady\r\nContent-Length: 81920\r\n\r\n")
        let fd = steady.fd
        let feeding = Thread {
            let piece = [UInt8](repeating: 115, count: 2048)
            for _ in 0..<40 {
                _ = piece.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                usleep(50_000)
            }
        }
        feeding.start()
        usleep(1_000_000)  // the first three made no progress for more than the stall timeout
        #expect(server.openConnections == 5)

        var newcomers: [RawConnection] = []
        for (k, expected) in [head, body, reader, idle].enumerated() {
            let newcomer = try RawConnection(port: server.port, from: "127.0.2.\(k + 1)", timeout: 2)
            newcomer.send("GET /healthz HTTP/1.1\r\nHost: h\r\n\r\n")
            #expect(newcomer.read(until: "ok /healthz").text.hasPrefix("HTTP/1.1 200"), "newcomer \(k) served, not refused")
            #expect(Self.closedByServer(expected), "newcomer \(k) shed the connection stalled longest")
            newcomers.append(newcomer)
        }
        #expect(server.connectionsShed == 4)
        #expect(steady.read(until: "got 81920").text.hasPrefix("HTTP/1.1 200"), "the connection making progress was kept")
    }
}
