import Foundation
import WireFormat

/// An HTTP/1.x request head as received, parsed strictly (RFC 9112). Strict because patchd
/// may sit behind a proxy: wherever two parsers could read the same bytes differently
/// (whitespace before a colon, folded lines, a NUL in the target, bare LF, two lengths) a
/// smuggled request becomes possible, so every such head is refused instead of guessed at.
struct RequestHead: Sendable {
    enum Version: Sendable { case http10, http11 }

    var method: String
    /// The request target exactly as sent, visible ASCII only: origin form (`/path?query`)
    /// or absolute form (`http://host:port/path?query`, RFC 9112 §3.2.2).
    var target: [UInt8]
    /// The host an absolute-form target names; nil in origin form. It is the request's host
    /// (RFC 9112 §3.3); `checkHost` refuses a `Host` field that names another.
    var authority: Authority?
    /// Where the path starts in `target`: 0 in origin form, after the authority in absolute
    /// form (where the path may be empty, which is `/`).
    var pathStart: Int
    var version: Version
    /// Field lines in order, as received (names are looked up in any case).
    var fields: HeaderFields
    /// Bytes of the head, including leading empty lines and the final CRLF.
    var size: Int

    /// The limits the parser enforces while bytes arrive.
    struct Limits: Sendable {
        var requestLine = 8 * 1024
        var head = 32 * 1024
        /// Header field lines. Every line is a name, a value and a scan for each field
        /// lookup; real clients send about a dozen and a proxy adds a few, while 32 KiB of
        /// `a:b` lines would be 6,000.
        var fields = 100
    }

    /// Empty lines taken before a request line: RFC 9112 §2.2 asks a server to ignore "at
    /// least one"; a client that sends a CRLF after a POST body sends one. More is 400: 50 KiB
    /// of them used to fill the input buffer with no request line begun, so the parse waited
    /// for more while the socket stayed readable, a core spinning until the header timeout.
    static let maxLeadingEmptyLines = 4

    /// Parses a head from the start of `bytes`: nil while it is incomplete (and within the
    /// limits), the head once its empty line has arrived, or the error to answer with.
    static func parse(_ bytes: UnsafeRawBufferPointer, limits: Limits) throws(FramingError) -> RequestHead? {
        var p = HeadScanner(bytes: bytes)
        // RFC 9112 §2.2: empty lines before the request line are ignored (some clients send
        // a CRLF after a POST body).
        var emptyLines = 0
        while p.remaining >= 2, p.peek(0) == cr, p.peek(1) == lf {
            emptyLines += 1
            if emptyLines > maxLeadingEmptyLines { throw .malformed("more than \(maxLeadingEmptyLines) empty lines before the request line") }
            p.index += 2
        }
        let lineStart = p.index
        guard let lineEnd = try p.lineEnd(limit: lineStart + limits.requestLine) else {
            if bytes.count - lineStart > limits.requestLine { throw .uriTooLong }
            return nil
        }
        let (method, target, version) = try requestLine(p.slice(lineStart, lineEnd))
        if method.isEmpty { throw .malformed("empty method") }
        let (authority, pathStart) = try requestTarget(target)
        p.index = lineEnd + 2
        // When the whole head has arrived (nearly always) its field lines are copied in one
        // piece and each line is recorded by where it is in the copy; before that, lines are
        // only validated (and appended, for the limits' counts): the parse ends in nil.
        let sectionStart = p.index
        let whole = p.headEnd(limit: limits.head)
        var fields = whole.map { HeaderFields(section: p.slice(sectionStart, $0.end), lines: $0.lines) } ?? HeaderFields()
        while true {
            // Refused as soon as a line past the limit begins (its first byte is not the CR
            // of the empty line), not once the whole head has been sent.
            if fields.count == limits.fields, p.remaining > 0, p.peek(0) != cr { throw .tooManyFields(limits.fields) }
            guard let end = try p.lineEnd(limit: limits.head) else {
                if bytes.count > limits.head { throw .headTooLarge }
                return nil
            }
            if end > limits.head { throw .headTooLarge }
            if end == p.index {
                p.index += 2
                break
            }
            let (name, value) = try field(p.slice(p.index, end))
            if whole != nil {
                let at = p.index - sectionStart  // the line's offset in the copy
                fields.record(name: (name.lowerBound + at)..<(name.upperBound + at), value: (value.lowerBound + at)..<(value.upperBound + at))
            } else {
                fields.append(name: p.slice(p.index + name.lowerBound, p.index + name.upperBound), value: p.slice(p.index + value.lowerBound, p.index + value.upperBound))
            }
            p.index = end + 2
        }
        if p.index > limits.head { throw .headTooLarge }
        return RequestHead(method: method, target: target, authority: authority, pathStart: pathStart, version: version,
                           fields: fields, size: p.index)
    }

    private static func requestLine(_ line: UnsafeRawBufferPointer) throws(FramingError) -> (String, [UInt8], Version) {
        // METHOD SP request-target SP HTTP-version, each separated by exactly one space.
        guard let firstSpace = RequestHead.firstIndex(of: space, in: line) else { throw .malformed("the request line must be METHOD TARGET HTTP/1.1") }
        let rest = UnsafeRawBufferPointer(rebasing: line[(firstSpace + 1)...])
        guard let secondSpace = RequestHead.firstIndex(of: space, in: rest) else { throw .malformed("the request line must be METHOD TARGET HTTP/1.1") }
        let method = UnsafeRawBufferPointer(rebasing: line[..<firstSpace])
        let target = UnsafeRawBufferPointer(rebasing: rest[..<secondSpace])
        let version = UnsafeRawBufferPointer(rebasing: rest[(secondSpace + 1)...])
        guard method.allSatisfy(isTokenByte) else { throw .malformed("the method is not an HTTP token") }
        guard !target.isEmpty, target.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw .malformed("the request target must be visible ASCII without spaces or control bytes")
        }
        let parsedVersion: Version
        // Read in the receive buffer: no array is built per request to compare with.
        let v = version
        guard v.count == 8, v[0] == UInt8(ascii: "H"), v[1] == UInt8(ascii: "T"), v[2] == UInt8(ascii: "T"), v[3] == UInt8(ascii: "P"),
              v[4] == UInt8(ascii: "/"), isDigit(v[5]), v[6] == UInt8(ascii: "."), isDigit(v[7]) else {
            throw .malformed("the HTTP version must be HTTP/1.1 or HTTP/1.0")
        }
        switch (v[5], v[7]) {
        case (UInt8(ascii: "1"), UInt8(ascii: "1")): parsedVersion = .http11
        case (UInt8(ascii: "1"), UInt8(ascii: "0")): parsedVersion = .http10
        default: throw .versionNotSupported
        }
        return (String(decoding: method, as: UTF8.self), Array(target), parsedVersion)
    }

    /// Where the path of a target starts and the authority before it. Origin form
    /// (`/path?query`) and absolute form (`http://authority/path?query`, which a server must
    /// accept, RFC 9112 §3.2.2) are served; authority form (CONNECT) and asterisk form
    /// (`OPTIONS *`) are not. The path is then held to `checkPathEscapes`.
    private static func requestTarget(_ target: [UInt8]) throws(FramingError) -> (Authority?, Int) {
        if target.first == UInt8(ascii: "/") {
            try checkPathEscapes(target[..<(RequestHead.firstIndex(of: UInt8(ascii: "?"), in: target[...]) ?? target.endIndex)])
            return (nil, 0)
        }
        // The scheme is case-insensitive (RFC 3986 §3.1); only http and https are HTTP's.
        let defaultPort: Int
        let scheme = target.prefix(8).map { $0 | 0x20 }
        if scheme.starts(with: Array("http://".utf8)) {
            defaultPort = 80
        } else if scheme.starts(with: Array("https://".utf8)) {
            defaultPort = 443
        } else {
            throw .malformed("the request target must be a path starting with / or an absolute http:// or https:// URI")
        }
        let authorityStart = defaultPort == 80 ? 7 : 8
        let rest = target[authorityStart...]
        let pathStart = rest.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") } ?? target.endIndex
        let authority = try Authority(target[authorityStart..<pathStart], defaultPort: defaultPort, what: "the request target")
        try checkPathEscapes(target[pathStart..<(RequestHead.firstIndex(of: UInt8(ascii: "?"), in: target[pathStart...]) ?? target.endIndex)])
        return (authority, pathStart)
    }

    /// Routes match the path as received: the only escapes decoded are those that cannot
    /// change which route a path is. A proxy in front (an ACL keeping `/metrics` off the
    /// public network) reads the path as sent; had patchd decoded `/%6detrics` to
    /// `/metrics`, or `%2F` to a segment separator, the two would disagree on which route a
    /// request is. So a path that percent-encodes an unreserved byte (ALPHA, DIGIT, `-` `.` `_` `~`, which
    /// RFC 3986 §6.2.2.2 says are never to be encoded), `/`, or `\` (a separator to WHATWG
    /// URL parsers and some proxies) is refused. Other escapes (`%20`, `%25`, non-ASCII
    /// UTF-8) are decoded as before; `%00` is kept as its three characters (see
    /// `percentDecoded`). The query is not held to this: no route is chosen by it.
    static func checkPathEscapes(_ path: ArraySlice<UInt8>) throws(FramingError) {
        guard RequestHead.firstIndex(of: UInt8(ascii: "%"), in: path) != nil else { return }  // the common case, at memchr's speed
        var i = path.startIndex
        while let percent = path[i...].firstIndex(of: UInt8(ascii: "%")) {
            i = percent + 1
            guard path.endIndex - percent >= 3, let high = hexValue(path[percent + 1]), let low = hexValue(path[percent + 2]) else { continue }
            let byte = high << 4 | low
            let escape = String(decoding: path[percent..<(percent + 3)], as: UTF8.self)
            if byte == UInt8(ascii: "/") || byte == UInt8(ascii: "\\") {
                throw .malformed("the path has an encoded separator (\(escape)); send the path as it is meant to be split")
            }
            if isUnreserved(byte) {
                throw .malformed("the path encodes \"\(Character(Unicode.Scalar(byte)))\" as \(escape); send it unencoded")
            }
        }
    }

    /// `bytes.firstIndex(of: byte)` with memchr (the generic search compares a byte at a
    /// time): every request line and field line is searched this way.
    static func firstIndex(of byte: UInt8, in bytes: UnsafeRawBufferPointer) -> Int? {
        guard let base = bytes.baseAddress, let found = memchr(base, Int32(byte), bytes.count) else { return nil }
        return base.distance(to: UnsafeRawPointer(found))
    }

    /// `bytes.firstIndex(of: byte)` with memchr: every request's target is searched this way.
    static func firstIndex(of byte: UInt8, in bytes: ArraySlice<UInt8>) -> Int? {
        bytes.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress, let found = memchr(base, Int32(byte), buffer.count) else { return nil }
            return bytes.startIndex + UnsafeRawPointer(base).distance(to: UnsafeRawPointer(found))
        }
    }

    /// Validates one field line; where its name and its value (without surrounding blanks) are in it.
    private static func field(_ line: UnsafeRawBufferPointer) throws(FramingError) -> (name: Range<Int>, value: Range<Int>) {
        guard let first = line.first else { throw .malformed("empty header line") }
        if first == space || first == tab { throw .malformed("folded header lines (obs-fold) are not accepted") }
        guard let colon = RequestHead.firstIndex(of: UInt8(ascii: ":"), in: line) else { throw .malformed("a header line has no colon") }
        let name = UnsafeRawBufferPointer(rebasing: line[..<colon])
        guard !name.isEmpty, name.allSatisfy(isTokenByte) else {
            throw .malformed("a header name is empty or has a space or other byte that is not allowed (before the colon?)")
        }
        var start = colon + 1, end = line.count
        while start < end, line[start] == space || line[start] == tab { start += 1 }
        while end > start, line[end - 1] == space || line[end - 1] == tab { end -= 1 }
        let value = UnsafeRawBufferPointer(rebasing: line[start..<end])
        guard isFieldValue(value) else {
            throw .malformed("a header value has a control byte")
        }
        return (0..<colon, start..<end)
    }

    /// How many lines a known field has, and the first one's value: what most rules need.
    func lines(_ field: KnownField) -> (count: Int, first: String?) {
        let found = fields.find(field)
        return (found.count, found.first.map(fields.value))
    }

    /// How the body is framed (RFC 9112 §6.1–6.3), and the rules that keep that unambiguous.
    func framing() throws(FramingError) -> BodyFraming {
        let lengths = fields.find(.contentLength)
        if fields.find(.transferEncoding).count > 0 {
            if lengths.count > 0 { throw .malformed("Content-Length and Transfer-Encoding must not both be sent") }
            if version == .http10 { throw .malformed("Transfer-Encoding is not allowed in HTTP/1.0") }
            let codings = fields.values(.transferEncoding).joined(separator: ",").split(separator: ",", omittingEmptySubsequences: false)
                .map { $0.trimmingCharacters(in: [" ", "\t"]).lowercased() }
            guard codings == ["chunked"] else { throw .unsupportedCoding }
            return .chunked
        }
        guard let line = lengths.first else { return .none }
        if lengths.count > 1 { throw .malformed("Content-Length must be sent once") }
        // Read on the received bytes: 18 digits cannot overflow an Int.
        let digits = fields.valueBytes(line)
        guard !digits.isEmpty, digits.count <= 18, digits.allSatisfy(isDigit) else {
            throw .malformed("Content-Length must be a decimal number of bytes")
        }
        let n = digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }
        return n == 0 ? .none : .length(n)
    }

    /// Host is required in HTTP/1.1 and may be sent once (RFC 9112 §3.2), with a valid
    /// `host[:port]` (RFC 9110 §7.2) or empty. With an absolute-form target it must name the
    /// target's host: RFC 9112 §3.2.2 has the target win, so a proxy that judged the request
    /// by its Host field would have judged another request than the one patchd serves.
    func checkHost() throws(FramingError) {
        let hosts = fields.find(.host)
        if hosts.count > 1 { throw .malformed("Host must be sent once") }
        if version == .http11, hosts.count == 0 { throw .malformed("HTTP/1.1 requests must send Host") }
        guard let line = hosts.first else { return }
        let value = fields.valueBytes(line)
        // An empty Host is what a client sends for a target URI without an authority; a
        // target with one must be repeated in Host (RFC 9112 §3.2).
        if value.isEmpty, authority == nil { return }
        guard let authority else {
            try Authority.check(value, defaultPort: nil, what: "the Host field")
            return
        }
        let host = try Authority(value, defaultPort: authority.defaultPort, what: "the Host field")
        if host != authority { throw .malformed("Host names another host or port than the request target") }
    }

    /// Whether the client asked for `100 Continue` before sending its body; any expectation
    /// other than 100-continue cannot be met (RFC 9110 §10.1.1).
    func expectsContinue() throws(FramingError) -> Bool {
        let expect = lines(.expect)
        guard let value = expect.first else { return false }
        guard expect.count == 1, value.lowercased() == "100-continue" else { throw .expectationFailed }
        return version == .http11
    }

    /// Whether the connection may carry another request after this one.
    var keepAlive: Bool {
        if fields.find(.connection).count == 0 { return version == .http11 }
        let tokens = fields.values(.connection).flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: [" ", "\t"]).lowercased() }
        if tokens.contains("close") { return false }
        return version == .http11 || tokens.contains("keep-alive")
    }
}

/// How a request body is delimited.
enum BodyFraming: Sendable, Equatable {
    case none
    case length(Int)
    case chunked
}

/// A request the transport refuses before any handler sees it; the connection is closed after
/// the answer, since what follows on it cannot be trusted to be a request boundary.
enum FramingError: Error, Equatable {
    case malformed(String)
    case uriTooLong
    case headTooLarge
    /// More header field lines than the limit (the limit).
    case tooManyFields(Int)
    case versionNotSupported
    case unsupportedCoding
    case expectationFailed
    case chunkTooLarge(Int)
    case timeout

    var httpError: HTTPError {
        switch self {
        case .malformed(let message): return HTTPError(400, "bad_request", message)
        case .uriTooLong: return HTTPError(414, "uri_too_long", "the request line is too long")
        case .headTooLarge: return HTTPError(431, "headers_too_large", "the request head is too large")
        case .tooManyFields(let limit): return HTTPError(431, "headers_too_large", "the request head has more than \(limit) header lines")
        case .versionNotSupported: return HTTPError(505, "version_not_supported", "only HTTP/1.1 and HTTP/1.0 are served")
        case .unsupportedCoding: return HTTPError(501, "not_implemented", "the only transfer coding accepted is chunked")
        case .expectationFailed: return HTTPError(417, "expectation_failed", "the only expectation that can be met is 100-continue")
        case .chunkTooLarge(let limit): return .tooLarge(limit)
        case .timeout: return HTTPError(408, "request_timeout", "the request was not received in time")
        }
    }
}

let cr = UInt8(ascii: "\r"), lf = UInt8(ascii: "\n"), space = UInt8(ascii: " "), tab = UInt8(ascii: "\t")

func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }

/// The value of a hex digit, either case.
func hexValue(_ b: UInt8) -> UInt8? {
    switch b {
    case 0x30...0x39: return b - 0x30
    case UInt8(ascii: "a")...UInt8(ascii: "f"): return b - 87
    case UInt8(ascii: "A")...UInt8(ascii: "F"): return b - 55
    default: return nil
    }
}

/// unreserved (RFC 3986 §2.3): ALPHA / DIGIT / "-" / "." / "_" / "~".
func isUnreserved(_ b: UInt8) -> Bool {
    switch b {
    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), 0x30...0x39: return true
    default: return b == UInt8(ascii: "-") || b == UInt8(ascii: ".") || b == UInt8(ascii: "_") || b == UInt8(ascii: "~")
    }
}

/// tchar (RFC 9110 §5.6.2): the bytes of methods and header names.
func isTokenByte(_ b: UInt8) -> Bool {
    // tchar (RFC 9110 §5.6.2): ALPHA, DIGIT and !#$%&'*+-.^_`|~, as one bit per byte value
    // below 128: every byte of every method and header name comes here.
    let below64: UInt64 = 0x03FF_6CFA_0000_0000, from64: UInt64 = 0x57FF_FFFF_C7FF_FFFE
    return b < 64 ? (below64 >> b) & 1 == 1 : b < 128 && (from64 >> (b - 64)) & 1 == 1
}

/// A byte a field value may hold (RFC 9110 §5.5: visible bytes, obs-text, and space and
/// tab between them; never NUL, CR, LF, another control byte or DEL).
func isFieldValueByte(_ b: UInt8) -> Bool { b == tab || (b >= 0x20 && b != 0x7F) }

/// Whether every byte of `value` is a field-value byte, eight at a time: a word with no
/// byte below 0x20 and none equal to 0x7F (the classic "has a byte less than n" and "has a
/// zero byte" tests, which never miss one) is not looked at byte by byte. Values are most
/// of a head's bytes (an ETag is 66).
func isFieldValue(_ value: UnsafeRawBufferPointer) -> Bool {
    let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
    var i = 0
    while i + 8 <= value.count {
        let word = value.loadUnaligned(fromByteOffset: i, as: UInt64.self)
        let control = (word &- ones &* 0x20) & ~word & highs
        let del = word ^ (ones &* 0x7F)
        if control | ((del &- ones) & ~del & highs) != 0 {
            for j in i..<(i + 8) where !isFieldValueByte(value[j]) { return false }
        }
        i += 8
    }
    while i < value.count {
        if !isFieldValueByte(value[i]) { return false }
        i += 1
    }
    return true
}

/// A cursor over received bytes that finds CRLF line ends and refuses a bare CR or LF.
private struct HeadScanner {
    let bytes: UnsafeRawBufferPointer
    var index = 0

    var remaining: Int { bytes.count - index }
    func peek(_ offset: Int) -> UInt8 { bytes[index + offset] }
    func slice(_ start: Int, _ end: Int) -> UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: bytes[start..<end]) }

    /// Where the head's empty line ends, if it is within the first `limit` bytes yet, and how
    /// many lines come before it; looked for from the CRLF just before `index` (a head without
    /// fields ends right there). Only sizes buffers: `lineEnd` is what validates the lines.
    func headEnd(limit: Int) -> (end: Int, lines: Int)? {
        let stop = min(bytes.count, limit + 4)
        guard let base = bytes.baseAddress else { return nil }
        var from = max(index - 2, 0), lines = 0
        // Each LF found: the end if CR LF CR comes before it (Glibc's memmem is not exported).
        while from < stop, let found = memchr(base + from, Int32(lf), stop - from) {
            let at = base.distance(to: UnsafeRawPointer(found))
            if at >= 3, bytes[at - 1] == cr, bytes[at - 2] == lf, bytes[at - 3] == cr { return (at + 1, max(lines - 1, 0)) }  // the first LF is the request line's
            lines += 1
            from = at + 1
        }
        return nil
    }

    /// The index of the CR of the next CRLF at or after `index`; nil if none within the first
    /// `limit` bytes of the buffer yet.
    func lineEnd(limit: Int) throws(FramingError) -> Int? {
        let stop = min(bytes.count, limit + 2)
        guard stop > index, let base = bytes.baseAddress else { return nil }
        let start = base + index
        // The first CR or LF decides, found with memchr. With a LF in reach (nearly always):
        // the first CR before it must be the byte before it.
        if let found = memchr(start, Int32(lf), stop - index) {
            let lfAt = base.distance(to: UnsafeRawPointer(found))
            guard let crFound = memchr(start, Int32(cr), lfAt - index) else { throw .malformed("lines must end with CRLF, not a bare LF") }
            let crAt = base.distance(to: UnsafeRawPointer(crFound))
            guard crAt == lfAt - 1 else { throw .malformed("a bare CR in the request head") }
            return crAt
        }
        // No LF in reach: a CR there ends the line only if a LF follows it (just past `stop`),
        // waits for the next byte at the end of what has arrived, and is bare otherwise.
        guard let crFound = memchr(start, Int32(cr), stop - index) else { return nil }
        let crAt = base.distance(to: UnsafeRawPointer(crFound))
        guard crAt + 1 < bytes.count else { return nil }
        guard bytes[crAt + 1] == lf else { throw .malformed("a bare CR in the request head") }
        return crAt
    }
}

extension RequestHead {
    /// The request the router sees: path and query arguments percent-decoded (the path was
    /// held to `checkPathEscapes` by `parse`), fields as sent. This is the one place a target
    /// becomes a path; in-process callers build `HTTPRequest` from a path already decoded.
    /// A query argument whose decoded bytes are not UTF-8 is refused (400) rather than read
    /// with U+FFFD in place of what was sent: a `message` would be stored and shown as text
    /// nobody wrote, and no argument of any route is anything but UTF-8 text.
    func request(peer: IPAddress, declaredBody: HTTPRequest.DeclaredBody) throws(FramingError) -> HTTPRequest {
        let question = target[pathStart...].firstIndex(of: UInt8(ascii: "?"))
        let rawPath = target[pathStart..<(question ?? target.endIndex)]
        // An absolute-form target may have an empty path: it is "/" (RFC 9112 §3.2.1).
        // Without a `%` (nearly every path) the bytes are the path: no decoded copy.
        let path = rawPath.isEmpty ? "/"
            : RequestHead.firstIndex(of: UInt8(ascii: "%"), in: rawPath) == nil ? String(decoding: rawPath, as: UTF8.self)
            : String(decoding: RequestHead.percentDecoded(rawPath, plusIsSpace: false), as: UTF8.self)
        var arguments: [(name: String, value: String)] = []
        if let question {
            for pair in target[(question + 1)...].split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
                let equals = pair.firstIndex(of: UInt8(ascii: "="))
                do throws(ValidationError) {
                    let name = try ReadableText.decode(RequestHead.percentDecoded(pair[..<(equals ?? pair.endIndex)], plusIsSpace: true), field: "name of a query argument")
                    let value = try equals.map { e throws(ValidationError) in
                        try ReadableText.decode(RequestHead.percentDecoded(pair[(e + 1)...], plusIsSpace: true), field: "query argument \(name.debugSanitized)")
                    } ?? ""
                    arguments.append((name, value))
                } catch {
                    throw .malformed(error.message)
                }
            }
        }
        return HTTPRequest(method: method, path: path, fields: fields, arguments: arguments, declaredBody: declaredBody, peer: peer)
    }

    /// `%XX` decoded, except `%00`, which is kept as the three characters: a decoded NUL
    /// would end a C string early somewhere downstream (`/healthz%00xyz` served as `/healthz`,
    /// `appVersion=2.3%00evil` read as `2.3`); kept literal it fails validation like any
    /// other bad character. A `%` not followed by two hex digits is kept as is.
    static func percentDecoded(_ bytes: ArraySlice<UInt8>, plusIsSpace: Bool) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = bytes.startIndex
        while i < bytes.endIndex {
            let b = bytes[i]
            if b == UInt8(ascii: "%"), bytes.distance(from: i, to: bytes.endIndex) >= 3,
                let high = hexValue(bytes[i + 1]), let low = hexValue(bytes[i + 2]), high << 4 | low != 0 {
                out.append(high << 4 | low)
                i += 3
            } else {
                out.append(plusIsSpace && b == UInt8(ascii: "+") ? space : b)
                i += 1
            }
        }
        return out
    }
}
