import Foundation

/// The bytes of a response's status line and header fields, without `Date` and
/// `Connection`, which change per send. Built once for a prepared response and kept in its
/// `nativeSlot`, so serving a prepared file formats nothing.
final class ResponseHead: Sendable {
    let bytes: [UInt8]

    init(_ response: HTTPResponse) {
        var text = "HTTP/1.1 \(response.status) \(ResponseHead.reason(response.status))\r\n"
        for (name, value) in response.headers { text += "\(name): \(value)\r\n" }
        // 1xx, 204 and 304 carry no body and (204, 1xx) no Content-Length (RFC 9110 §8.6).
        if response.status != 204, response.status >= 200, response.status != 304 {
            text += "Content-Length: \(response.body.count)\r\n"
        }
        bytes = Array(text.utf8)
    }

    static func of(_ response: HTTPResponse) -> ResponseHead {
        guard response.prepared else { return ResponseHead(response) }
        return response.nativeSlot.object(as: ResponseHead.self, orInstall: { ResponseHead(response) }) ?? ResponseHead(response)
    }

    /// The reason phrase of a status line. Every code of the IANA HTTP Status Code
    /// Registry (RFC 9110 §15 and the RFCs that registered the rest) has its own, so a
    /// status the code adds later cannot go out as a made-up phrase; an unregistered code
    /// gets its class's name (RFC 9110 §15: a client treats it as x00 of that class).
    static func reason(_ status: Int) -> String {
        if let phrase = reasons[status] { return phrase }
        switch status {
        case 100...199: return "Informational"
        case 200...299: return "Successful"
        case 300...399: return "Redirection"
        case 400...499: return "Client Error"
        case 500...599: return "Server Error"
        default: return ""  // not an HTTP status; reason-phrase may be empty (RFC 9112 §4)
        }
    }

    static let reasons: [Int: String] = [
        100: "Continue", 101: "Switching Protocols", 102: "Processing", 103: "Early Hints",
        200: "OK", 201: "Created", 202: "Accepted", 203: "Non-Authoritative Information", 204: "No Content",
        205: "Reset Content", 206: "Partial Content", 207: "Multi-Status", 208: "Already Reported", 226: "IM Used",
        300: "Multiple Choices", 301: "Moved Permanently", 302: "Found", 303: "See Other", 304: "Not Modified",
        305: "Use Proxy", 306: "Unused", 307: "Temporary Redirect", 308: "Permanent Redirect",
        400: "Bad Request", 401: "Unauthorized", 402: "Payment Required", 403: "Forbidden", 404: "Not Found",
        405: "Method Not Allowed", 406: "Not Acceptable", 407: "Proxy Authentication Required", 408: "Request Timeout",
        409: "Conflict", 410: "Gone", 411: "Length Required", 412: "Precondition Failed", 413: "Content Too Large",
        414: "URI Too Long", 415: "Unsupported Media Type", 416: "Range Not Satisfiable", 417: "Expectation Failed",
        418: "Unused", 421: "Misdirected Request", 422: "Unprocessable Content", 423: "Locked", 424: "Failed Dependency",
        425: "Too Early", 426: "Upgrade Required", 428: "Precondition Required", 429: "Too Many Requests",
        431: "Request Header Fields Too Large", 451: "Unavailable For Legal Reasons",
        500: "Internal Server Error", 501: "Not Implemented", 502: "Bad Gateway", 503: "Service Unavailable",
        504: "Gateway Timeout", 505: "HTTP Version Not Supported", 506: "Variant Also Negotiates",
        507: "Insufficient Storage", 508: "Loop Detected", 510: "Not Extended", 511: "Network Authentication Required",
    ]
}

/// `Date: …\r\n`, formatted at most once a second per event loop (RFC 9110 §6.6.1: an origin
/// server with a clock sends Date).
struct DateLine {
    private var second = -1
    private(set) var bytes: [UInt8] = []

    mutating func refresh() -> [UInt8] {
        var now = time(nil)
        if now != second {
            second = now
            var parts = tm()
            gmtime_r(&now, &parts)
            var buffer = [CChar](repeating: 0, count: 64)
            let n = strftime(&buffer, buffer.count, "Date: %a, %d %b %Y %H:%M:%S GMT\r\n", &parts)
            bytes = buffer[..<n].map { UInt8(bitPattern: $0) }
        }
        return bytes
    }
}
