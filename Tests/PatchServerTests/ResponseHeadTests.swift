import Foundation
import Testing
@testable import PatchServer

/// Status lines: every status has its reason phrase, so none goes out as a made-up one
/// (before: `202 Status` for an accepted device report).
@Suite("Response status lines")
struct ResponseHeadTests {
    /// The IANA HTTP Status Code Registry as RFC 9110 §16.2.1 keeps it: RFC 9110 §15's codes
    /// and those other RFCs registered, with their phrases (306 and 418 are "(Unused)").
    static let registry: [Int: String] = [
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

    @Test("every registered status from 100 to 599 has the registry's phrase; the code's table has no other; the rest get their class")
    func everyStatus() {
        #expect(ResponseHead.reasons == Self.registry)
        let classes = [1: "Informational", 2: "Successful", 3: "Redirection", 4: "Client Error", 5: "Server Error"]
        for status in 100...599 {
            let phrase = ResponseHead.reason(status)
            #expect(phrase == (Self.registry[status] ?? classes[status / 100]), "\(status)")
            #expect(phrase != "Status" && !phrase.isEmpty, "\(status)")
            // reason-phrase: HTAB, SP, VCHAR (RFC 9112 §4).
            #expect(phrase.utf8.allSatisfy { $0 == 0x09 || (0x20...0x7E).contains($0) }, "\(status)")
        }
    }

    @Test("every status a source file of the server names (HTTPError(…), status: …) is in the table")
    func statusesTheServerSends() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources")
        let pattern = try NSRegularExpression(pattern: #"(?:HTTPError\(\s*|status:\s*|status == )([1-5][0-9]{2})\b"#)
        var found: Set<Int> = []
        let files = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)
        while let file = files?.nextObject() as? URL {
            guard file.pathExtension == "swift" else { continue }
            let text = try String(contentsOf: file, encoding: .utf8)
            for match in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                found.insert(Int((text as NSString).substring(with: match.range(at: 1)))!)
            }
        }
        #expect(found.isSuperset(of: [200, 202, 400, 404, 431, 503]), "the scan found \(found.sorted())")
        for status in found.sorted() { #expect(ResponseHead.reasons[status] != nil, "\(status)") }
    }

    @Test("the status line of a 202 answer is HTTP/1.1 202 Accepted")
    func accepted() {
        let head = String(decoding: ResponseHead(HTTPResponse(status: 202, headers: [], body: [])).bytes, as: UTF8.self)
        #expect(head.hasPrefix("HTTP/1.1 202 Accepted\r\n"))
        #expect(String(decoding: ResponseHead(HTTPResponse(status: 299, headers: [], body: [])).bytes, as: UTF8.self).hasPrefix("HTTP/1.1 299 Successful\r\n"))
    }
}
