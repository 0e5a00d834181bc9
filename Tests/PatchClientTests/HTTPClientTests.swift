import Foundation
@testable import HTTPClientKit
import PatchCore
import Testing
@testable import PatchClient

/// The one HTTP client on its own, against loopback servers the tests start on ports they pick
/// (`Mirror`: patchd's transport; `EndlessServer`: a body without end).
@Suite("HTTPClient: any method, a capped answer, HTTP/2 when required")
struct HTTPClientTests {
    @Test("a PUT and a DELETE reach the server with their method and body; the answer's headers come back lower-cased")
    func putAndDelete() async throws {
        let mirror = try Mirror()
        defer { mirror.stop() }
        mirror["/thing"] = CannedResponse(status: 200, headers: [("X-Answer", "yes")], body: Array("done".utf8))
        let client = HTTPClient()
        let put = DownloadBody(limit: 1024)
        let head = try await client.send("PUT", mirror.url.appendingPathComponent("thing"), headers: ["Content-Type": "application/json"],
                                         body: Array(#"{"a":1}"#.utf8), into: put)
        #expect(head.status == 200 && head.headers["x-answer"] == "yes")
        #expect(put.received == Array("done".utf8))
        let deleted = DownloadBody(limit: 1024)
        _ = try await client.send("DELETE", mirror.url.appendingPathComponent("thing"), into: deleted)
        let requests = mirror.received
        #expect(requests.map(\.method) == ["PUT", "DELETE"] && requests.map(\.path) == ["/thing", "/thing"])
        #expect(requests.first?.body == Array(#"{"a":1}"#.utf8) && requests.first?.header("content-type") == "application/json")
        #expect(requests.last?.body == [])
    }

    #if canImport(CCurl)
    @Test("clients hand their libcurl handle on: the next client gets it reset, at most `kept` wait")
    func handlesHandedOn() throws {
        let pool = CurlHandles()
        let first = try #require(pool.take())
        pool.give(first)
        let again = try #require(pool.take())
        #expect(again === first, "an idle handle is taken before a new one is made")
        let many = [again] + (0..<(CurlHandles.kept + 2)).compactMap { _ in pool.take() }
        #expect(Set(many.map(\.pointer)).count == many.count)
        for handle in many { pool.give(handle) }
        #expect(pool.idleCount == CurlHandles.kept, "the rest are cleaned up")
    }
    #endif

    @Test("clients made and dropped one after another (a client per sync), each with its own headers: every answer right, no header of one client on the next one's request")
    func clientsOneAfterAnother() async throws {
        let mirror = try Mirror()
        defer { mirror.stop() }
        mirror["/ping"] = .ok(Array("pong".utf8))
        for i in 0..<20 {
            let answer = DownloadBody(limit: 64)
            let head = try await HTTPClient().send("GET", mirror.url.appendingPathComponent("ping"), headers: i % 2 == 0 ? ["X-Odd": "no"] : [:], into: answer)
            #expect(head.status == 200 && answer.received == Array("pong".utf8))
        }
        let received = mirror.received
        #expect(received.count == 20)
        for (i, request) in received.enumerated() { #expect((request.header("x-odd") != nil) == (i % 2 == 0), "request \(i)") }
    }

    @Test("the synchronous form answers as the async one does (command-line callers)")
    func blocking() async throws {
        let mirror = try Mirror()
        defer { mirror.stop() }
        mirror["/ping"] = .ok(Array("pong".utf8))
        let answer = DownloadBody(limit: 64)
        let url = mirror.url.appendingPathComponent("ping")
        // On a thread of its own, as patchctl's main thread is: blocking one of Swift
        // concurrency's threads could starve the request it waits for.
        let result = await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(returning: Result { () throws(FetchError) in try HTTPClient().sendBlocking("POST", url, into: answer) })
            }
        }
        let head = try result.get()
        #expect(head.status == 200 && answer.received == Array("pong".utf8))
        #expect(mirror.received.first?.method == "POST")
    }

    @Test("a client's requests share one connection; on libcurl a second HTTPClient reuses the first one's too, over URLSession (a session per client) it opens its own")
    func connectionReuse() async throws {
        let mirror = try Mirror()
        defer { mirror.stop() }
        mirror["/ping"] = .ok(Array("pong".utf8))
        let proxy = try CountingProxy(to: mirror.port)
        let url = proxy.url.appendingPathComponent("ping")
        do {
            let client = HTTPClient()
            for _ in 0..<3 {
                let answer = DownloadBody(limit: 64)
                _ = try await client.send("GET", url, into: answer)
                #expect(answer.received == Array("pong".utf8))
            }
            #expect(proxy.acceptedConnections == 1, "three requests of one client, one connection")
        }
        // The first client is gone; with libcurl its connection is not.
        let second = DownloadBody(limit: 64)
        let head = try await HTTPClient().send("GET", url, into: second)
        #expect(head.status == 200 && second.received == Array("pong".utf8))
        #expect(mirror.received.count == 4)
        #expect(proxy.acceptedConnections == (Transport.current.sharesConnectionsAcrossClients ? 1 : 2))
    }

    @Test("a body over the cap is cut off: declared (Content-Length) or endless, the answer keeps nothing and the stream is not read on")
    func capped() async throws {
        let mirror = try Mirror()
        defer { mirror.stop() }
        mirror["/big"] = .ok([UInt8](repeating: 0x41, count: 100_000))
        let declared = DownloadBody(limit: 1000)
        let head = try await HTTPClient().send("GET", mirror.url.appendingPathComponent("big"), into: declared)
        #expect(head.status == 200 && declared.isOverLimit && declared.received.isEmpty)

        let endless = try EndlessServer(files: [:], cap: 8 << 20)
        let stream = DownloadBody(limit: 64 << 10)
        _ = try await HTTPClient().send("GET", endless.url.appendingPathComponent("stream"), into: stream)
        #expect(stream.isOverLimit && stream.received.isEmpty)
        expectNotReadOn(endless)
    }

    @Test("a sync's deadline (HTTPClient.deadline) cuts a slow answer and refuses a request once passed; outside a sync the client's resourceTimeout applies (not over corelibs' URLSession, which never reads it)")
    func deadline() async throws {
        let mirror = try Mirror()
        defer { mirror.stop() }
        mirror["/slow"] = .ok(Array("late".utf8))
        // The answer comes at 30 s, inside the client's own timeouts (stopping the mirror ends
        // the wait): only the deadline can make this `.timeout`.
        mirror.delay = 30
        let client = HTTPClient(HTTPClient.Configuration(requestTimeout: 60, resourceTimeout: 120))
        let url = mirror.url.appendingPathComponent("slow")
        let started = ContinuousClock.now
        let cut: FetchError? = await HTTPClient.$deadline.withValue(started + .milliseconds(400)) {
            do throws(FetchError) { _ = try await client.send("GET", url, into: DownloadBody(limit: 64)); return nil } catch { return error }
        }
        let elapsed = started.duration(to: .now)
        #expect(cut == .timeout)
        // Wide on purpose: `elapsed` also holds this task's wait to run again on the executor
        // it shares with the other tests starting at once. The transfer itself ended at 0.400 s,
        // and this measure came out at 0.7–4.0 s in six runs of the whole suite.
        #expect(elapsed < .seconds(20), "the 30 s answer was waited for: \(elapsed)")
        let refused: FetchError? = await HTTPClient.$deadline.withValue(ContinuousClock.now - .milliseconds(1)) {
            do throws(FetchError) { _ = try await client.send("GET", url, into: DownloadBody(limit: 64)); return nil } catch { return error }
        }
        #expect(refused == .timeout)
        #expect(HTTPClient.allowedMilliseconds(60) == 60_000)
        HTTPClient.$deadline.withValue(ContinuousClock.now + .seconds(2)) {
            #expect((1...2000).contains(HTTPClient.allowedMilliseconds(60) ?? 0))
            #expect(HTTPClient.allowedMilliseconds(0.5) == 500)
        }
        // Outside a sync, resourceTimeout bounds the answer: libcurl, Apple's URLSession. Not
        // corelibs' URLSession: FoundationNetworking/URLSession/Configuration.swift copies
        // timeoutIntervalForResource and nothing reads it (docs/IOS.md).
        mirror.delay = 4
        let bounded = HTTPClient(HTTPClient.Configuration(requestTimeout: 60, resourceTimeout: 1)), answer = DownloadBody(limit: 64)
        if Transport.current == .corelibsURLSession {
            #expect(try await bounded.send("GET", url, into: answer).status == 200 && answer.received == Array("late".utf8))
        } else {
            await #expect(throws: FetchError.timeout) { try await bounded.send("GET", url, into: answer) }
        }
    }

    @Test("requiring HTTP/2 refuses an HTTP/1.1-only server over TLS (trusted through the CA file, libcurl; URLSession refuses a CA file before sending anything); without the requirement it answers")
    func http2Required() async throws {
        let tls = try SelfSigned()
        let mirror = try Mirror(tls: (tls.certificatePEM, tls.keyPEM))
        defer { mirror.stop() }
        mirror["/3/device/abc"] = .ok(Array("{}".utf8))
        let url = mirror.url.appendingPathComponent("3/device/abc")
        var configuration = HTTPClient.Configuration(requestTimeout: 5, resourceTimeout: 5)
        configuration.httpsOnly = true
        configuration.caFile = tls.certificateFile.path
        if Transport.current == .curl {
            let http1 = try await HTTPClient(configuration).send("POST", url, body: [], into: DownloadBody(limit: 64))
            #expect(http1.status == 200)  // the CA file is trusted: TLS itself is fine
        } else {
            // URLSession trusts the keychain only: a client told to trust a file refuses every
            // request rather than quietly trusting something else (HTTPClient.Configuration.caFile).
            await #expect(throws: FetchError.network("a CA file (\(tls.certificateFile.path)) cannot be trusted through URLSession; trust the certificate in the keychain instead")) {
                try await HTTPClient(configuration).send("POST", url, body: [], into: DownloadBody(limit: 64))
            }
            #expect(mirror.received.isEmpty)
            configuration.caFile = nil
        }

        configuration.requireHTTP2 = true
        if Transport.current == .curl {
            await #expect(throws: FetchError.network("the host did not speak HTTP/2")) {
                try await HTTPClient(configuration).send("POST", url, body: [], into: DownloadBody(limit: 64))
            }
        }
        // https only: a plain http:// URL is refused before anything is sent.
        let plain = try Mirror()
        defer { plain.stop() }
        await #expect(throws: FetchError.self) {
            try await HTTPClient(configuration).send("POST", plain.url.appendingPathComponent("x"), body: [], into: DownloadBody(limit: 64))
        }
        #expect(plain.received.isEmpty)
    }
}

/// A certificate for 127.0.0.1 and its key, made by the `openssl` command in a directory the
/// value removes when it goes.
private final class SelfSigned {
    let directory: URL
    let certificatePEM: String
    let keyPEM: String
    var certificateFile: URL { directory.appendingPathComponent("cert.pem") }

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("hotpatch-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let key = directory.appendingPathComponent("key.pem")
        let openssl = Process()
        openssl.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        openssl.arguments = ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                             "-keyout", key.path, "-out", directory.appendingPathComponent("cert.pem").path, "-days", "1",
                             "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"]
        openssl.standardOutput = FileHandle.nullDevice
        openssl.standardError = FileHandle.nullDevice
        try openssl.run()
        openssl.waitUntilExit()
        guard openssl.terminationStatus == 0 else { throw CocoaError(.fileWriteUnknown) }
        certificatePEM = try String(contentsOf: directory.appendingPathComponent("cert.pem"), encoding: .utf8)
        keyPEM = try String(contentsOf: key, encoding: .utf8)
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    @Test("a response header line: the name lower-cased, the value without surrounding whitespace; no colon or no name is no header")
    func headerLines() {
        func parse(_ text: String) -> HeaderLine? { Array(text.utf8).withUnsafeBytes { HeaderLine($0) } }
        #expect(parse("Content-Length:  42 \r\n") == HeaderLine(name: "content-length", value: "42"))
        #expect(parse("Retry-After:\t120\r\n") == HeaderLine(name: "retry-after", value: "120"))
        #expect(parse("X-Empty:\r\n") == HeaderLine(name: "x-empty", value: ""))
        #expect(parse("X-Time: Wed, 02 Dec 2026 13:00:00 GMT\r\n") == HeaderLine(name: "x-time", value: "Wed, 02 Dec 2026 13:00:00 GMT"))
        #expect(parse("X-Ünïcode: välue\r\n")?.value == "välue")
        #expect(parse("\r\n") == nil)
        #expect(parse(": no name\r\n") == nil)
        #expect(parse("no colon here\r\n") == nil)
    }
}

