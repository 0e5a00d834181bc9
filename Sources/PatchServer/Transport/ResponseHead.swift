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

    static func reason(_ status: Int) -> String {
        switch status {
        case 100: return "Continue"
        case 200: return "OK"
        case 201: return "Created"
        case 204: return "No Content"
        case 206: return "Partial Content"
        case 301: return "Moved Permanently"
        case 302: return "Found"
        case 304: return "Not Modified"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 408: return "Request Timeout"
        case 409: return "Conflict"
        case 410: return "Gone"
        case 413: return "Content Too Large"
        case 414: return "URI Too Long"
        case 415: return "Unsupported Media Type"
        case 417: return "Expectation Failed"
        case 422: return "Unprocessable Content"
        case 429: return "Too Many Requests"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        case 501: return "Not Implemented"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 505: return "HTTP Version Not Supported"
        case 507: return "Insufficient Storage"
        default: return "Status"
        }
    }
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
