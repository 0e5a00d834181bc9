import Foundation
import Testing
@testable import HTTPTransport
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

    @Test("fields read from a head's one copy are the lines as sent: names lowercased, values trimmed of blanks, in order")
    func fieldsFromTheHeadsCopy() throws {
        let lines = [("Host", "h"), ("If-None-Match", "\"a\", \"b\""), ("X-Device-ID", "d-1"), ("EMPTY", ""), ("x-device-id", "second")]
        let text = "GET / HTTP/1.1\r\n" + lines.map { "\($0.0):\t \($0.1) \t\r\n" }.joined() + "\r\n"
        let head = try #require(try Self.parse(text))
        let given = HeaderFields(lines)
        #expect(head.fields.map(\.name) == given.map(\.name))
        #expect(head.fields.map(\.name) == lines.map { $0.0.lowercased() })
        #expect(head.fields.map(\.value) == lines.map(\.1))
        #expect(head.fields.find("X-DEVICE-ID") == (2, 2))
        #expect(head.fields.values("x-device-id") == ["d-1", "second"])
        #expect(head.fields.valueBytes(1) == ArraySlice("\"a\", \"b\"".utf8))
    }

    @Test("known fields are found from the index as a scan finds them: any case, repeated, absent, past 255 lines")
    func knownFieldIndex() {
        for field in KnownField.allCases {
            #expect(Array(field.name.utf8).withUnsafeBufferPointer { KnownField($0) } == field)
            let upper = Array(field.name.uppercased().utf8)
            #expect(upper.withUnsafeBufferPointer { KnownField($0) } == field)
            var near = Array(field.name.utf8)
            near[near.count - 1] ^= 0x01
            #expect(near.withUnsafeBufferPointer { KnownField($0) } == nil, "\(field.name) off by one byte")
        }
        var generator = SystemRandomNumberGenerator()
        let names = KnownField.allCases.map(\.name) + ["accept", "x-other", "content-type", "x-device-ids"]
        for lineCount in [0, 1, 5, 40, 254, 255, 256, 300] {
            let pairs = (0..<lineCount).map { _ -> (String, String) in
                let name = names.randomElement(using: &generator)!
                return (Bool.random(using: &generator) ? name.uppercased() : name, "v\(Int.random(in: 0..<1000, using: &generator))")
            }
            let fields = HeaderFields(pairs)
            for field in KnownField.allCases {
                #expect(fields.find(field) == fields.find(field.name), "\(field.name) in \(lineCount) lines")
                #expect(fields.values(field) == fields.values(field.name))
            }
        }
        // A known name repeated more than 255 times is still counted right (the index gives up).
        let many = HeaderFields((0..<300).map { ("X-Device-ID", "d\($0)") })
        #expect(many.find(.deviceID) == (300, 0))
    }

    @Test("token and field-value bytes: every byte value, and every position of a value eight bytes at a time reads")
    func byteClasses() {
        let tchar = Set("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8)
        for b in UInt8.min...UInt8.max {
            #expect(isTokenByte(b) == tchar.contains(b), "token byte \(b)")
            #expect(isFieldValueByte(b) == (b == 9 || (b >= 0x20 && b != 0x7F)), "value byte \(b)")
        }
        // One byte of each value at each position of values up to 17 bytes long, the rest `a`
        // (and obs-text `é`, whose bytes have the high bit set): the word test never misses one.
        for filler: UInt8 in [0x61, 0xC3] {
            for length in 1...17 {
                for at in 0..<length {
                    for b in UInt8.min...UInt8.max {
                        var value = [UInt8](repeating: filler, count: length)
                        value[at] = b
                        let expected = isFieldValueByte(b)
                        #expect(value.withUnsafeBytes { isFieldValue($0) } == expected, "\(b) at \(at) of \(length)")
                    }
                }
            }
        }
        #expect([UInt8]().withUnsafeBytes { isFieldValue($0) })
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
        ("GET http://x/ HTTP/1.1\r\nHost: h\r\n\r\n", 400),  // absolute form, but Host names another host
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

    @Test("up to 4 empty lines before the request line are ignored; a 5th is 400 as soon as it arrives (issue 43: 50 KiB of CRLFs spun a loop)")
    func leadingEmptyLines() throws {
        let request = "GET /healthz HTTP/1.1\r\nHost: h\r\n\r\n"
        #expect(try Self.parse(String(repeating: "\r\n", count: 4) + request)?.fields.count == 1)
        #expect(try Self.parse(String(repeating: "\r\n", count: 4)) == nil, "four may still be followed by a request")
        for extra in [String(repeating: "\r\n", count: 5), String(repeating: "\r\n", count: 5) + request, String(repeating: "\r\n", count: 25_600)] {
            #expect(throws: FramingError.malformed("more than 4 empty lines before the request line")) { try Self.parse(extra) }
        }
        #expect(FramingError.malformed("x").httpError.status == 400)
    }

    @Test("a header line past the field limit is 431 as soon as it begins, before the head ends; the limit itself is served")
    func fieldLimit() throws {
        let lines = { (n: Int) in (0..<n).map { "X-F\($0): v\r\n" }.joined() }
        #expect(try Self.parse("GET / HTTP/1.1\r\n" + lines(100) + "\r\n")?.fields.count == 100)
        #expect(throws: FramingError.tooManyFields(100)) { try Self.parse("GET / HTTP/1.1\r\n" + lines(101) + "\r\n") }
        // Its first byte is enough: no CRLF, no rest of the head.
        #expect(throws: FramingError.tooManyFields(100)) { try Self.parse("GET / HTTP/1.1\r\n" + lines(100) + "X") }
        // A CR after the 100th line may be the empty line that ends the head: wait for it.
        #expect(try Self.parse("GET / HTTP/1.1\r\n" + lines(100) + "\r") == nil)
        let three = RequestHead.Limits(fields: 3)
        #expect(throws: FramingError.tooManyFields(3)) { try Self.parse("GET / HTTP/1.1\r\n" + lines(4) + "\r\n", limits: three) }
        #expect(FramingError.tooManyFields(100).httpError.status == 431)
        #expect(FramingError.tooManyFields(100).httpError.code == "headers_too_large")
    }

    /// The 400 message for a target, nil when its head is accepted.
    static func refusal(_ target: String, host: String = "h") -> String? {
        do throws(FramingError) {
            guard let head = try parse("GET \(target) HTTP/1.1\r\nHost: \(host)\r\n\r\n") else { return "incomplete" }
            try head.checkHost()
            return nil
        } catch {
            return error.httpError.status == 400 ? error.httpError.message : "status \(error.httpError.status)"
        }
    }

    @Test("a path that percent-encodes an unreserved byte, / or \\ is 400: routes match the path as received", arguments: [
        "/%6detrics", "/%6Detrics", "/%68ealthz", "/%4Detrics", "/healthz%2F", "/v1%2Fapps/demo/metadata/1.root.json",
        "/v1%2fapps/demo/metadata/1.root.json", "/console/%2e%2e/Package.swift", "/console/..%2fPackage.swift", "/a%5Cb", "/a%5cb",
        "/%30", "/%39", "/%41", "/%5A", "/%61", "/%7a", "/%2D", "/%2E", "/%5F", "/%7E", "/%7e", "/ok/%6d?x=1",
        "http://h/%6detrics", "http://h/v1%2Fapps",
    ])
    func refusedEscapes(target: String) throws {
        let message = try #require(Self.refusal(target), "\(target) was accepted")
        #expect(message.contains("%"), "\(target): \(message)")
    }

    @Test("other escapes in the path, and every escape in the query, are accepted and decoded as before")
    func allowedEscapes() throws {
        for (target, path) in [("/a%20b", "/a b"), ("/a%25", "/a%"), ("/a%2561", "/a%61"), ("/%00", "/%00"), ("/caf%C3%A9", "/café"),
                               ("/a%3Fb", "/a?b"), ("/a%2B", "/a+"), ("/a%zz%2", "/a%zz%2"), ("/a%", "/a%"), ("/%2", "/%2")] {
            #expect(Self.refusal(target) == nil, "\(target)")
            let head = try #require(try Self.parse("GET \(target) HTTP/1.1\r\nHost: h\r\n\r\n"))
            #expect(try head.request(peer: .loopback, declaredBody: .none).path == path, "\(target)")
        }
        let head = try #require(try Self.parse("GET /healthz?a=%6d%2F%5C%2e&%6e=1 HTTP/1.1\r\nHost: h\r\n\r\n"))
        let request = try head.request(peer: .loopback, declaredBody: .none)
        #expect(request.path == "/healthz")
        #expect(request.query("a") == "m/\\.")
        #expect(request.query("n") == "1")
    }

    @Test("an absolute-form target is served (RFC 9112 §3.2.2): its path and query, the scheme in any case, an empty path as /")
    func absoluteForm() throws {
        for (target, host, path, query) in [
            ("http://127.0.0.1/healthz", "127.0.0.1", "/healthz", nil),
            ("HTTP://Example.COM:80?x=1", "example.com", "/", "1"),
            ("http://example.com:8080/v1/apps/demo/metadata/1.root.json?x=%6d", "EXAMPLE.com:8080", "/v1/apps/demo/metadata/1.root.json", "m"),
            ("hTTpS://h:443/a%20b", "h", "/a b", nil),
            ("https://h/", "h:443", "/", nil),
            ("http://h", "h:", "/", nil),
            ("http://[::1]:8080/healthz", "[0:0::1]:8080", "/healthz", nil),
            ("http://[2001:DB8::1]/", "[2001:db8:0::1]:80", "/", nil),
            ("http://a-b_c.example./x//y", "a-b_c.example.", "/x//y", nil),
        ] {
            #expect(Self.refusal(target, host: host) == nil, "\(target) with Host \(host): \(Self.refusal(target, host: host) ?? "")")
            let head = try #require(try Self.parse("GET \(target) HTTP/1.1\r\nHost: \(host)\r\n\r\n"))
            #expect(head.authority != nil)
            let request = try head.request(peer: .loopback, declaredBody: .none)
            #expect(request.path == path, "\(target)")
            #expect(request.query("x") == query, "\(target)")
        }
        // HTTP/1.0 need not send Host; the target's host is enough.
        #expect(Self.status("GET http://h/healthz HTTP/1.0\r\n\r\n") == 0)
        // The target re-serialises as sent.
        #expect(try Self.parse("GET HTTP://H:80 HTTP/1.1\r\nHost: h\r\n\r\n")?.target == Array("HTTP://H:80".utf8))
    }

    @Test("absolute form is refused (400) when Host names another host or port, or the authority is not a valid host[:port]", arguments: [
        ("http://a/healthz", "b"), ("http://a/healthz", "a:8080"), ("http://a:8080/healthz", "a"), ("https://a/", "a:80"),
        ("http://a/healthz", ""), ("http://[::1]/", "[::2]"),
        ("http://user@h/", "h"), ("http://user:pw@h/", "h"), ("http:///healthz", "h"), ("http://:80/", "h"), ("http://h:99999/", "h"),
        ("http://h:123456/", "h"), ("http://h:8o/", "h"), ("http://h:80:80/", "h"), ("http://h%2eexample/", "h.example"),
        ("http://a,b/", "a,b"), ("http://a;b/", "h"), ("http://[::1/", "h"), ("http://[v1.x]/", "h"), ("http://[fe80::1%25eth0]/", "h"),
        ("http://[127.0.0.1]/", "h"), ("http://127.1/", "127.1"), ("http://010.0.0.1/", "h"), ("http://0x7f.0.0.1/", "h"),
        ("http://256.0.0.1/", "h"), ("http://1.2.3.4.5/", "h"), ("http://a..b/", "h"), ("http://.a/", "h"), ("http://h#x/", "h"),
        // Other forms and schemes stay refused.
        ("ftp://h/", "h"), ("h:443", "h"), ("*", "h"), ("http:/h/", "h"), ("http:h/", "h"), ("httpx://h/", "h"), ("//h/x", "h"),
    ])
    func refusedAbsoluteForm(target: String, host: String) {
        if target == "//h/x" {
            // `//h/x` is an origin-form path (an empty first segment), not an authority.
            #expect(Self.refusal(target, host: host) == nil)
            return
        }
        #expect(Self.refusal(target, host: host) != nil, "\(target) with Host \(host)")
    }

    @Test("Host is one valid host[:port] (RFC 9110 §7.2), or empty with an origin-form target; anything else is 400")
    func hostSyntax() {
        for good in ["h", "x", "127.0.0.1", "127.0.0.1:8080", "[::1]", "[::1]:80", "[::ffff:127.0.0.1]:1", "Example.COM",
                     "a-b_c.d.", "localhost:", "0.0.0.0:65535", "1.2.3.4a", ""] {
            #expect(Self.status("GET / HTTP/1.1\r\nHost: \(good)\r\n\r\n") == 0, "Host: \(good)")
        }
        for bad in ["a b", "a@b", "u:p@h", "a,b", "a:b:c", "::1", "[::1", "[::1]x", "h:65536", "h:123456", "h:-1",
                    "999.1.1.1", "2550.1.1.1", "1.2.3.99999999999999999999", "1.2.3", "01.2.3.4", "a~b", "a..b", ".a", "%61", "a/b", "a?b", "h:80/x", "[v1.x]", ":80",
                    String(repeating: "a", count: 64), String(repeating: "a.", count: 130) + "a"] {
            #expect(Self.status("GET / HTTP/1.1\r\nHost: \(bad)\r\n\r\n") == 400, "Host: \(bad)")
        }
    }

    @Test("path and query are percent-decoded, except %00, which stays literal; + is a space in the query only")
    func decoding() throws {
        let head = try #require(try Self.parse("GET /a%20b+c%00d%zz?appVersion=2.3%00evil&x=a+b%2B&flag&=v HTTP/1.1\r\nHost: h\r\n\r\n"))
        let request = try head.request(peer: .loopback, declaredBody: .none)
        #expect(request.path == "/a b+c%00d%zz")
        #expect(request.query("appVersion") == "2.3%00evil")
        #expect(request.query("x") == "a b+")
        #expect(request.query("flag") == "")
        #expect(request.query("") == "v")
        #expect(request.headerLines("HOST") == ["h"])
    }

    @Test("a query argument whose decoded bytes are not UTF-8 is 400 naming it, not read with U+FFFD in their place")
    func queryNotUTF8() throws {
        for (query, refusal) in [("message=%C3%28", "the query argument message is not valid UTF-8 (byte 0xC3 at offset 0)"),
                                 ("appVersion=2.3&message=ok%ED%A0%80", "the query argument message is not valid UTF-8 (byte 0xED at offset 2)"),
                                 ("m%FF=1", "the name of a query argument is not valid UTF-8 (byte 0xFF at offset 1)")] {
            let head = try #require(try Self.parse("POST /v1/apps/demo/patches?\(query) HTTP/1.1\r\nHost: h\r\n\r\n"))
            #expect(throws: FramingError.malformed(refusal)) { try head.request(peer: .loopback, declaredBody: .none) }
            #expect(FramingError.malformed(refusal).httpError.status == 400)
        }
        // Valid UTF-8 is decoded as sent, format characters included: the registry's rule refuses those, naming the field.
        let head = try #require(try Self.parse("POST /x?message=%E4%BF%AE%E5%A4%8D+%E2%80%AE HTTP/1.1\r\nHost: h\r\n\r\n"))
        #expect(try head.request(peer: .loopback, declaredBody: .none).query("message") == "修复 \u{202E}")
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

    @Test("leading zeros in a chunk size do not count toward its 15 digits; 16 significant digits are still refused")
    func chunkSizeLeadingZeros() throws {
        let (body, done, _) = try Self.decode("000000000000000000005\r\nhello\r\n" + String(repeating: "0", count: 40) + "\r\n\r\n")
        #expect(String(decoding: body, as: UTF8.self) == "hello")
        #expect(done)
        #expect(try Self.decode("00000000000000000000" + "fffffffffffffff" + "\r\n", limit: Int.max).done == false, "15 digits wait for data")
        #expect(throws: FramingError.chunkTooLarge(Int.max)) { try Self.decode("0001000000000000000\r\n", limit: Int.max) }
        #expect(throws: FramingError.chunkTooLarge(10)) { try Self.decode("000000000000000000000b\r\n", limit: 10) }
    }

    @Test("If-None-Match splits at commas and trims space and tab, on ASCII bytes as Foundation's trim would; empty tags are dropped")
    func entityTags() {
        let values = [nil, "", "\"a\"", " \"a\" ,\t\"b\"\t", "\"a\",,\"b\"", "W/\"x\", *", " , ", "\"é\" , \"b\"", "\u{00A0}\"a\"\u{00A0}"]
        for value in values {
            let foundation = (value ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            let tags = EntityTags(value: value.map { ArraySlice($0.utf8) })
            #expect(tags.list == foundation, "\(String(describing: value))")
            #expect(tags.isEmpty == foundation.isEmpty)
            // Membership agrees with the list, for each tag and for near misses.
            for candidate in foundation + ["", "\"a", "a\"", "\"a\" ", "\"b\"", "\"c\"", "*", "W/\"x"] {
                #expect(tags.contains(candidate) == foundation.contains(candidate), "\(String(describing: value)) ∋ \(candidate)")
            }
        }
        #expect(EntityTags(value: ArraySlice(" \"a\" ,\t\"b\"\t".utf8)).list == ["\"a\"", "\"b\""])
        #expect(EntityTags(HTTPRequest(method: "GET", path: "/", headers: ["if-none-match": "\"x\", \"y\""])).contains("\"y\""))
    }

    @Test("the HTTP version: 1.1 and 1.0 parse, another well-formed version is 505, anything else 400")
    func versions() throws {
        #expect(try Self.parse("GET / HTTP/1.0\r\nHost: h\r\n\r\n")?.version == .http10)
        #expect(Self.status("GET / HTTP/1.2\r\nHost: h\r\n\r\n") == 505)
        for bad in ["HTTP/1.", "HTTP/1.1x", "HTTP/a.1", "HTTX/1.1", "HTTP/1,1", "http/1.1"] {
            #expect(Self.status("GET / \(bad)\r\nHost: h\r\n\r\n") == 400, "\(bad)")
        }
    }

    /// The byte-at-a-time rule `HeadScanner.lineEnd` must keep (it finds lines with memchr):
    /// from `start`, the first CR or LF decides. A LF first is a bare LF, a CR followed by
    /// anything but LF a bare CR, a CR as the last byte received a line not yet whole.
    static func byteRule(_ bytes: [UInt8], from start: Int) -> (end: Int?, refusal: String?) {
        var i = start
        while i < bytes.count {
            if bytes[i] == lf { return (nil, "bare LF") }
            if bytes[i] == cr {
                if i + 1 == bytes.count { return (nil, nil) }
                return bytes[i + 1] == lf ? (i, nil) : (nil, "bare CR")
            }
            i += 1
        }
        return (nil, nil)
    }

    /// What the head `GET / HTTP/1.1 CRLF Host: h CRLF X: ` + `rest` is under that rule: the
    /// X field's value once the head's empty line arrives, or the first refusal.
    static func byteRuleOutcome(_ rest: [UInt8]) -> String {
        var i = 0, value: String?
        while true {
            let (end, refusal) = byteRule(rest, from: i)
            if let refusal { return refusal }
            guard let end else { return "incomplete" }
            if value != nil, end == i { return "ok \(value!)" }
            let line = rest[i..<end]
            if value == nil { value = String(decoding: line, as: UTF8.self) } else if !line.contains(UInt8(ascii: ":")) { return "no colon" }
            i = end + 2
        }
    }

    @Test("header lines end where the byte-at-a-time CRLF rule says, for every value of up to 6 bytes of a, CR and LF")
    func lineEnds() throws {
        let prefix = Array("GET / HTTP/1.1\r\nHost: h\r\nX: ".utf8)
        var lines: [[UInt8]] = [[]], last: [[UInt8]] = [[]]
        for _ in 1...6 {
            last = last.flatMap { l in [l + [UInt8(ascii: "a")], l + [cr], l + [lf]] }
            lines += last
        }
        #expect(lines.count == 1093)
        for line in lines {
            let rest = line + Array("\r\n\r\n".utf8)
            let got: String
            do throws(FramingError) {
                if let head = try Self.parse(prefix + rest) {
                    got = "ok \(head.fields.first { $0.name == "x" }?.value ?? "?")"
                } else {
                    got = "incomplete"
                }
            } catch .malformed(let message) {
                got = message.contains("bare LF") ? "bare LF" : message.contains("bare CR") ? "bare CR" : message.contains("no colon") ? "no colon" : message
            } catch {
                got = "\(error)"
            }
            #expect(got == Self.byteRuleOutcome(rest), "\(line)")
        }
    }

    @Test("header names match in any case without being lowercased per lookup; a name must match whole; X-Device-ID is read once")
    func headerLookups() throws {
        let head = try #require(try Self.parse("GET / HTTP/1.1\r\nHost: h\r\nX-Device-ID: a\r\nX-Device-IDs: b\r\nx-device-id: c\r\n\r\n"))
        let request = try head.request(peer: .loopback, declaredBody: .none)
        #expect(request.header("x-DEVICE-id") == "a")
        #expect(request.header("X-Device-I") == nil)
        #expect(request.header("X-Device-IDz") == nil)
        #expect(request.headerLines("X-DEVICE-ID") == ["a", "c"])
        #expect(request.singleHeader("X-Device-ID")! == ("a", true))
        #expect(request.singleHeader("X-Device-IDs")! == ("b", false))
        #expect(request.singleHeader("X-Other") == nil)
        let inProcess = HTTPRequest(method: "GET", path: "/", headers: ["If-None-Match": "\"t\""])
        #expect(inProcess.header("if-none-match") == "\"t\"")
    }
}
