import Testing
@testable import PatchServer

/// The transport's strict HTTP/1.1 head and body parsing (RFC 9112), in process: every
/// ambiguity a proxy and patchd could read differently is refused with the status the
/// front door answers.
@Suite("Request head and chunked body parsing")
struct RequestHeadTests {
    static func parse(_ text: String, limits: RequestHead.Limits = RequestHead.Limits()) throws(FramingError) -> RequestHead? {
        try parse(Array(text.utf8), limits: limits)
    }

    static func parse(_ bytes: [UInt8], limits: RequestHead.Limits = RequestHead.Limits()) throws(FramingError) -> RequestHead? {
        try bytes.withUnsafeBytes { raw in Result { () throws(FramingError) in try RequestHead.parse(raw, limits: limits) } }.get()
    }

    /// The status the front door answers for a head, 0 when it is accepted.
    static func status(_ text: String) -> Int {
        do throws(FramingError) {
            guard let head = try parse(text) else { return -1 }
            try head.checkHost()
            _ = try head.framing()
            _ = try head.expectsContinue()
            return 0
        } catch {
            return error.httpError.status
        }
    }

    @Test("a well-formed head parses: method, target, fields in order with lowercase names, its size")
    func wellFormed() throws {
        let text = "\r\nGET /v1/apps/demo/metadata/timestamp.json?x=1 HTTP/1.1\r\nHost: h\r\nX-Device-ID:  abc \r\nx-device-id2:\r\n\r\nNEXT"
        let head = try #require(try Self.parse(text))
        #expect(head.method == "GET")
        #expect(head.target == Array("/v1/apps/demo/metadata/timestamp.json?x=1".utf8))
        #expect(head.version == .http11)
        #expect(head.fields.map(\.name) == ["host", "x-device-id", "x-device-id2"])
        #expect(head.fields.map(\.value) == ["h", "abc", ""])
        #expect(head.size == text.utf8.count - 4)
        #expect(head.keepAlive)
        #expect(try head.framing() == .none)
    }

    @Test("an incomplete head is nil at every cut, never an error")
    func incomplete() throws {
        let text = Array("POST /p HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\n".utf8)
        for cut in 0..<text.count { #expect(try Self.parse(Array(text[..<cut])) == nil, "cut at \(cut)") }
        #expect(try Self.parse(text) != nil)
    }

    @Test("smuggling and framing ambiguities are refused with the status RFC 9112 gives", arguments: [
        ("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
        ("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\nContent-Length: 40\r\n\r\n", 400),
        ("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", 400),
        ("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5, 5\r\n\r\n", 400),
        ("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: +5\r\n\r\n", 400),
        ("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: abc\r\n\r\n", 400),
        ("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding : chunked\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: h\r\nX-Device-ID: abc\r\n def\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: h\r\n\tX-Device-ID: abc\r\n\r\n", 400),
        ("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
        ("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501),
        ("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 501),
        ("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
        ("GET /healthz\u{0}xyz HTTP/1.1\r\nHost: h\r\n\r\n", 400),
        ("POST /v1/apps/demo/patches?appVersion=7.7\u{0}evil HTTP/1.1\r\nHost: h\r\n\r\n", 400),
        ("GET /a\tb HTTP/1.1\r\nHost: h\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: h\r\nX-A: a\u{0}b\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: h\r\nX-A: a\u{7F}b\r\n\r\n", 400),
        ("GET / HTTP/1.1\nHost: h\n\n", 400),
        ("GET / HTTP/1.1\r\nHost: h\rX: y\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
        ("GET / HTTP/2.0\r\nHost: h\r\n\r\n", 505),
        ("GET / HTTP/0.9\r\nHost: h\r\n\r\n", 505),
        ("GET / http/1.1\r\nHost: h\r\n\r\n", 400),
        ("GET  / HTTP/1.1\r\nHost: h\r\n\r\n", 400),
        ("GET http://x/ HTTP/1.1\r\nHost: h\r\n\r\n", 400),
        ("G(T / HTTP/1.1\r\nHost: h\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: h\r\nBad Header: x\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: h\r\nno colon\r\n\r\n", 400),
        ("POST / HTTP/1.1\r\nHost: h\r\nExpect: something\r\n\r\n", 417),
        // Accepted: what well-behaved clients send.
        ("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: Chunked\r\n\r\n", 0),
        ("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nExpect: 100-Continue\r\n\r\n", 0),
        ("GET / HTTP/1.0\r\n\r\n", 0),
        ("GET /%00 HTTP/1.1\r\nHost: h\r\nX-A: caf\u{E9} \t ok\r\n\r\n", 0),
    ])
    func refused(text: String, status: Int) {
        #expect(Self.status(text) == status, "\(text.debugDescription)")
    }

    @Test("a long request line is 414 and a large head 431, as soon as the limit is passed")
    func limits() throws {
        let limits = RequestHead.Limits(requestLine: 64, head: 256)
        #expect(throws: FramingError.uriTooLong) { try Self.parse("GET /\(String(repeating: "a", count: 80))", limits: limits) }
        #expect(throws: FramingError.headTooLarge) { try Self.parse("GET / HTTP/1.1\r\nX: \(String(repeating: "a", count: 300))", limits: limits) }
        #expect(throws: FramingError.headTooLarge) {
            try Self.parse("GET / HTTP/1.1\r\n" + String(repeating: "X-A: 1234567890\r\n", count: 20) + "\r\n", limits: limits)
        }
        #expect(try Self.parse("GET / HTTP/1.1\r\nX: \(String(repeating: "a", count: 100))", limits: limits) == nil)
    }

    @Test("path and query are percent-decoded, except %00, which stays literal; + is a space in the query only")
    func decoding() throws {
        let head = try #require(try Self.parse("GET /a%20b+c%00d%zz?appVersion=2.3%00evil&x=a+b%2B&flag&=v HTTP/1.1\r\nHost: h\r\n\r\n"))
        let request = head.request(peer: .loopback, declaredBody: .none)
        #expect(request.path == "/a b+c%00d%zz")
        #expect(request.query("appVersion") == "2.3%00evil")
        #expect(request.query("x") == "a b+")
        #expect(request.query("flag") == "")
        #expect(request.query("") == "v")
        #expect(request.headerLines("HOST") == ["h"])
    }

    @Test("Connection: close and HTTP/1.0 without keep-alive end the connection after the answer")
    func keepAlive() throws {
        #expect(try #require(try Self.parse("GET / HTTP/1.1\r\nHost: h\r\nConnection: Close\r\n\r\n")).keepAlive == false)
        #expect(try #require(try Self.parse("GET / HTTP/1.0\r\n\r\n")).keepAlive == false)
        #expect(try #require(try Self.parse("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")).keepAlive)
    }

    // MARK: Chunked bodies

    static func decode(_ text: String, limit: Int = 1000, split: Int? = nil) throws(FramingError) -> (body: [UInt8], done: Bool, rest: Int) {
        var decoder = ChunkedDecoder(limit: limit)
        var body: [UInt8] = []
        var pending: [UInt8] = []
        let bytes = Array(text.utf8)
        let step = split ?? bytes.count
        var offset = 0
        while offset < bytes.count {
            pending += bytes[offset..<min(bytes.count, offset + step)]
            offset += step
            let used = try pending.withUnsafeBytes { raw in Result { () throws(FramingError) in try decoder.feed(raw, into: &body) } }.get()
            pending.removeFirst(used)
            if decoder.isDone { break }
        }
        return (body, decoder.isDone, pending.count + max(0, bytes.count - offset))
    }

    @Test("chunks decode whole whatever the read boundaries; extensions and trailers are allowed; bytes after the end are left")
    func chunked() throws {
        let text = "5;name=value\r\nhello\r\n6\r\n world\r\nA ;x\r\n0123456789\r\n0\r\nX-Trailer: 1\r\n\r\nGET"
        for split in [1, 2, 3, 7, 1000] {
            let (body, done, rest) = try Self.decode(text, split: split)
            #expect(String(decoding: body, as: UTF8.self) == "hello world0123456789", "split \(split)")
            #expect(done)
            #expect(rest == 3, "split \(split)")
        }
    }

    @Test("a chunked body over the limit is refused at the size line, before its data; malformed framing is 400")
    func chunkedRefusals() throws {
        #expect(throws: FramingError.chunkTooLarge(10)) { try Self.decode("b\r\n", limit: 10) }
        #expect(throws: FramingError.chunkTooLarge(10)) { try Self.decode("6\r\n123456\r\n6\r\n", limit: 10) }
        #expect(throws: FramingError.chunkTooLarge(10)) { try Self.decode("ffffffffffffffffffff\r\n", limit: 10) }
        for bad in ["x\r\n", "5\nhello", "5\r\nhelloX\r\n", "-1\r\n", "5 x\r\n", "0\r\n bad\r\n\r\n", "0\r\nnocolon\r\n\r\n"] {
            #expect(throws: FramingError.self, "\(bad.debugDescription)") { try Self.decode(bad) }
        }
        #expect(throws: FramingError.self) { try Self.decode(String(repeating: "1", count: 5000)) }
    }
}
