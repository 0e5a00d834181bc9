import Foundation
import Locking
import Testing
@testable import HTTPTransport
@testable import PatchServer

/// Answers another thread gives (`HTTPReply.later`, `HTTPPromise`): the loop that read the
/// request serves everyone else meanwhile, and the waiting connection is bounded like any
/// other request (its deadline, a hang-up, a drain).
@Suite("Promised answers on loopback", .serialized)
struct PromisedAnswerTests {
    /// `/later` is promised (the promise kept by the test); any other path answered at once.
    final class PromisingResponder: HTTPResponder {
        let promises = Locked<[HTTPPromise]>([])

        func admit(_ head: HTTPRequest) -> HTTPAdmission {
            guard head.path == "/later" else { return .answer(.text("now \(head.path)")) }
            let promise = HTTPPromise()
            promises.withLock { $0.append(promise) }
            return .later(promise)
        }

        /// The `n`th promise made, once the server has made it (nil after 5 s).
        func promise(_ n: Int) -> HTTPPromise? {
            for _ in 0..<500 {
                if let promise = promises.withLock({ $0.count > n ? $0[n] : nil }) { return promise }
                usleep(10_000)
            }
            return nil
        }
    }

    static func server(_ responder: PromisingResponder, _ change: (inout HTTPServerConfiguration) -> Void = { _ in }) throws -> HTTPServer {
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        // One loop: a loop blocked by the waiting request would block every other client.
        configuration.threads = 1
        configuration.maxNewConnectionsPerIPPerSecond = 0
        change(&configuration)
        return try HTTPServer(configuration: configuration, responder: responder)
    }

    /// Whatever the connection has to read now, without waiting.
    static func pending(_ c: RawConnection) -> String {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = recv(c.fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        return n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self) : ""
    }

    @Test("while one request waits for its promised answer, the one loop serves other clients; the answer is written once kept, then what the client pipelined behind it")
    func loopServesOthersMeanwhile() throws {
        let responder = PromisingResponder()
        let server = try Self.server(responder)
        let waiting = try RawConnection(port: server.port)
        waiting.send("GET /later HTTP/1.1\r\nHost: h\r\n\r\nGET /behind HTTP/1.1\r\nHost: h\r\n\r\n")
        let promise = try #require(responder.promise(0))
        let other = try RawConnection(port: server.port)
        other.send("GET /other HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(other.read(until: "now /other").text.hasPrefix("HTTP/1.1 200"))
        #expect(Self.pending(waiting) == "", "nothing before the promise is kept, and nothing of the pipelined request either")
        DispatchQueue.global().async { promise.keep(.text("kept", status: 201)) }
        let answers = waiting.read(until: "now /behind").text
        let kept = try #require(answers.range(of: "kept")), behind = try #require(answers.range(of: "now /behind"))
        #expect(answers.hasPrefix("HTTP/1.1 201"))
        #expect(kept.upperBound <= behind.lowerBound, "in the order asked")
    }

    @Test("a promise not kept within the request timeout is answered 503 with Retry-After and closed; keeping it later writes nothing and the server goes on")
    func deadline() throws {
        let responder = PromisingResponder()
        let server = try Self.server(responder) { $0.requestTimeout = 1 }
        let waiting = try RawConnection(port: server.port, timeout: 10)
        waiting.send("GET /later HTTP/1.1\r\nHost: h\r\n\r\n")
        let promise = try #require(responder.promise(0))
        let answer = waiting.read()
        #expect(answer.text.hasPrefix("HTTP/1.1 503"))
        #expect(answer.text.contains("Retry-After: 5"))
        #expect(answer.closed)
        promise.keep(.text("too late"))
        let next = try RawConnection(port: server.port)
        next.send("GET /next HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(next.read(until: "now /next").text.hasPrefix("HTTP/1.1 200"))
    }

    @Test("a client that resets its connection while it waits is closed at once; keeping its promise afterwards is harmless")
    func hangUp() throws {
        let responder = PromisingResponder()
        let server = try Self.server(responder)
        var promise: HTTPPromise?
        do {
            let waiting = try RawConnection(port: server.port)
            waiting.send("GET /later HTTP/1.1\r\nHost: h\r\n\r\n")
            promise = responder.promise(0)
            // Linger 0: close sends a reset, which epoll reports whatever the socket is watched for.
            var reset = linger(l_onoff: 1, l_linger: 0)
            setsockopt(waiting.fd, SOL_SOCKET, SO_LINGER, &reset, socklen_t(MemoryLayout<linger>.size))
        }
        #expect(promise != nil)
        var open = server.openConnections
        for _ in 0..<500 where open > 0 {
            usleep(10_000)
            open = server.openConnections
        }
        #expect(open == 0, "the reset connection is closed without waiting for its answer")
        promise?.keep(.text("nobody"))
        let next = try RawConnection(port: server.port)
        next.send("GET /next HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(next.read(until: "now /next").text.hasPrefix("HTTP/1.1 200"))
    }

    @Test("a drain waits for a promised answer: it is written, with Connection: close, before the server stops")
    func drainWaits() throws {
        let responder = PromisingResponder()
        let server = try Self.server(responder)
        let waiting = try RawConnection(port: server.port)
        waiting.send("GET /later HTTP/1.1\r\nHost: h\r\n\r\n")
        let promise = try #require(responder.promise(0))
        let stopped = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            server.stop(drainTimeout: 10)
            stopped.signal()
        }
        // The drain has begun once the listening socket is closed: new connections are refused.
        var refused = false
        for _ in 0..<1000 where !refused {
            refused = (try? RawConnection(port: server.port)) == nil
            if !refused { usleep(10_000) }
        }
        #expect(refused, "the drain began")
        #expect(stopped.wait(timeout: .now() + 0.3) == .timedOut, "the drain waits for the request in flight")
        promise.keep(.text("kept"))
        let answer = waiting.read()
        #expect(answer.text.hasPrefix("HTTP/1.1 200") && answer.text.contains("Connection: close") && answer.text.hasSuffix("kept"), "\(answer)")
        #expect(stopped.wait(timeout: .now() + 10) == .success)
    }
}
