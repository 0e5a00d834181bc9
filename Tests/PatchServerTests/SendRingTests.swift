import Foundation
import Testing
@testable import PatchServer

/// The batch that writes a turn's held answers in one system call (io_uring): what each
/// staged answer's outcome says, on socket pairs the test reads itself. Every ring here is
/// made, used and dropped on a thread of its own, as the event loops do theirs.
@Suite("held answers sent together through io_uring")
struct SendRingTests {
    /// Whether this kernel lets a process make a ring (false in a container whose seccomp
    /// profile refuses io_uring: the loops then write one sendmsg per answer).
    static let kernelAllows: Bool = onOwnThread { SendRing() != nil }

    static func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () -> T) -> T {
        let result = Locked<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            result.withLock { $0 = body() }
            done.signal()
        }
        thread.start()
        done.wait()
        return result.withLock { $0! }
    }

    /// A connected pair of non-blocking stream sockets: (the server's end, the client's).
    static func pair() -> (Int32, Int32) {
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        for fd in fds { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
        return (fds[0], fds[1])
    }

    static func drain(_ fd: Int32) -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if n <= 0 { return out }
            out += buffer[0..<n]
        }
    }

    @Test("answers to three sockets go out whole, head then body, in one call; one that does not fit is left to its own write",
          .enabled(if: kernelAllows))
    func sendsEachWhole() throws {
        let outcome = Self.onOwnThread { () -> [String] in
            let ring = SendRing()!
            let pairs = (0..<3).map { _ in Self.pair() }
            var problems: [String] = []
            for (i, (server, _)) in pairs.enumerated() {
                let slot = ring.stage(fd: server, head: Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n".utf8)[...], body: Array("a\(i)".utf8)[...])
                if slot != i { problems.append("slot \(String(describing: slot)) for \(i)") }
            }
            let big = [UInt8](repeating: 0x41, count: SendRing.largestStaged + 1)
            if ring.stage(fd: pairs[0].0, head: big[...], body: []) != nil { problems.append("an answer past largestStaged was staged") }
            if ring.count != 3 { problems.append("\(ring.count) staged") }
            let outcomes = ring.send()
            let expected = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n".utf8.count + 2
            if outcomes != [.sent(expected), .sent(expected), .sent(expected)] { problems.append("outcomes \(outcomes)") }
            for (i, (server, client)) in pairs.enumerated() {
                let got = String(decoding: Self.drain(client), as: UTF8.self)
                if got != "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\na\(i)" { problems.append("socket \(i) got \(got)") }
                close(server)
                close(client)
            }
            if ring.count != 0 || !ring.usable { problems.append("not ready for the next turn") }
            return problems
        }
        #expect(outcome == [])
    }

    @Test("a socket with no room is not sent to and the call does not wait; a closed peer fails; the others still go out",
          .enabled(if: kernelAllows))
    func fullAndClosedSockets() throws {
        let outcome = Self.onOwnThread { () -> [String] in
            let ring = SendRing()!
            let (full, fullPeer) = Self.pair()
            let chunk = [UInt8](repeating: 0x42, count: 65536)
            while chunk.withUnsafeBytes({ send(full, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }) > 0 {}
            let (gone, gonePeer) = Self.pair()
            close(gonePeer)
            let (fine, finePeer) = Self.pair()
            let answer = Array("HTTP/1.1 204 No Content\r\n\r\n".utf8)
            for fd in [full, gone, fine] { _ = ring.stage(fd: fd, head: answer[...], body: []) }
            let started = Date()
            let outcomes = ring.send()
            var problems: [String] = []
            if Date().timeIntervalSince(started) > 0.5 { problems.append("the call waited") }
            if outcomes != [.notSent, .failed, .sent(answer.count)] { problems.append("outcomes \(outcomes)") }
            if Self.drain(finePeer) != answer { problems.append("the writable socket did not get its answer") }
            for fd in [full, fullPeer, gone, fine, finePeer] { close(fd) }
            return problems
        }
        #expect(outcome == [])
    }

    @Test("staging stops at its byte bound and at the entries of one call", .enabled(if: kernelAllows))
    func bounds() throws {
        let outcome = Self.onOwnThread { () -> [Int] in
            let ring = SendRing()!
            let (server, client) = Self.pair()
            let answer = [UInt8](repeating: 0x43, count: SendRing.largestStaged)
            var byBytes = 0
            while ring.stage(fd: server, head: answer[...], body: []) != nil { byBytes += 1 }
            ring.discard()
            var byEntries = 0
            while ring.stage(fd: server, head: [0x44], body: []) != nil { byEntries += 1 }
            ring.discard()
            close(server)
            close(client)
            return [byBytes, byEntries]
        }
        #expect(outcome == [SendRing.stagingBytes / SendRing.largestStaged, SendRing.entries])
    }
}
