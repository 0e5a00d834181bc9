import Foundation
import Testing
@testable import HTTPTransport
@testable import PatchServer

/// Status lines: every status has its reason phrase, so none goes out as a made-up one
/// (before: `202 Status` for an accepted device report).
@Suite("Response status lines")
struct ResponseHeadTests {
    /// Phrases from the IANA HTTP Status Code Registry (RFC 9110 §16.2.1), a sample of each
    /// class and of the statuses patchd answers with (the table itself is the registry).
    static let vectors: [Int: String] = [
        100: "Continue", 200: "OK", 202: "Accepted", 207: "Multi-Status", 304: "Not Modified", 308: "Permanent Redirect",
        400: "Bad Request", 408: "Request Timeout", 412: "Precondition Failed", 413: "Content Too Large",
        418: "Unused", 422: "Unprocessable Content", 429: "Too Many Requests", 431: "Request Header Fields Too Large",
        451: "Unavailable For Legal Reasons", 503: "Service Unavailable", 507: "Insufficient Storage",
        511: "Network Authentication Required",
    ]

    @Test("registered statuses have the registry's phrase; every other status from 100 to 599 gets its class, never a made-up word")
    func everyStatus() {
        for (status, phrase) in Self.vectors { #expect(ResponseHead.reason(status) == phrase, "\(status)") }
        #expect(ResponseHead.reasons.count == 63, "the registry's 63 codes")
        let classes = [1: "Informational", 2: "Successful", 3: "Redirection", 4: "Client Error", 5: "Server Error"]
        for status in 100...599 {
            let phrase = ResponseHead.reason(status)
            #expect(phrase == (ResponseHead.reasons[status] ?? classes[status / 100]), "\(status)")
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
