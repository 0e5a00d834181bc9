import Foundation
import HTTPTransport
import PatchAPI
import PatchCore
import WebConsole

/// The web console's files: those of console/ in the repository, compiled in by SwiftPM (the
/// WebConsole module), and operations.js, rendered from the operation table (OperationsScript),
/// each prepared once as a response. Only their names are ever answered: a request names a
/// file, never a path, so `..`, `%2e%2e` or an encoded slash cannot reach anything else.
struct ConsoleSite: Sendable {
    /// The console page's policy: styles, images and requests from this origin, scripts only
    /// those the page names with this response's nonce (`<script nonce>`; the modules they
    /// import inherit it), no inline script or style, never framed (clickjacking the
    /// publisher's buttons). Not `script-src 'self'`: the origin also serves patch bundles as
    /// `application/javascript`, which any app's publisher writes (issue 43, item 8), and a
    /// path-restricted source (`host/console/`) cannot name an IP-literal host.
    static func pagePolicy(nonce: String) -> String {
        "default-src 'self'; script-src 'nonce-\(nonce)'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    }

    /// The policy of every other console file (scripts, styles, the icon): none of them is a
    /// page that runs scripts, so one opened on its own (an SVG) runs none.
    static let filePolicy = "default-src 'self'; script-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    /// Headers every console file carries besides its policy.
    static let securityHeaders: [(String, String)] = [
        ("X-Content-Type-Options", "nosniff"),
        ("X-Frame-Options", "DENY"),
        ("Referrer-Policy", "no-referrer"),
    ]

    struct File: Sendable {
        let ok: HTTPResponse
        let notModified: HTTPResponse
        let etag: String
    }

    /// The page, split where each response's nonce goes (every `<script`).
    private let page: [String]
    private let files: [String: File]
    static let pageName = "index.html"

    init(_ sources: [ConsoleFiles.File] = ConsoleFiles.all + [OperationsScript.file]) {
        var files: [String: File] = [:]
        var page: [String] = []
        for source in sources {
            if source.name == ConsoleSite.pageName {
                page = String(decoding: source.bytes, as: UTF8.self).components(separatedBy: "<script ")
                continue
            }
            let body = source.bytes
            let etag = "\"" + String(Digest.sha256Hex(body).prefix(32)) + "\""
            // Revalidated on every load (the ETag makes that a 304): a new patchd's console is
            // seen at once, never a mix of old and new files.
            let headers = [("Content-Type", source.contentType), ("ETag", etag), ("Content-Security-Policy", ConsoleSite.filePolicy),
                           ("Cache-Control", "no-cache")] + ConsoleSite.securityHeaders
            files[source.name] = File(ok: HTTPResponse(status: 200, headers: headers, body: body, prepared: true),
                                      notModified: HTTPResponse(status: 304, headers: headers.filter { $0.0 != "Content-Type" }, prepared: true),
                                      etag: etag)
        }
        self.page = page
        self.files = files
    }

    /// The file called `name`, or 304 when `If-None-Match` names its ETag. The page is built
    /// per response around a fresh nonce, so it is never cached or revalidated (`no-store`,
    /// no ETag): a cached copy would carry an old nonce under a new policy.
    func response(_ name: String, ifNoneMatch: String?) throws(HTTPError) -> HTTPResponse {
        if name == ConsoleSite.pageName, !page.isEmpty {
            let nonce = ConsoleSite.nonce()
            return HTTPResponse(status: 200, headers: [("Content-Type", "text/html; charset=utf-8"),
                                                       ("Content-Security-Policy", ConsoleSite.pagePolicy(nonce: nonce)),
                                                       ("Cache-Control", "no-store")] + ConsoleSite.securityHeaders,
                                body: Array(page.joined(separator: "<script nonce=\"\(nonce)\" ").utf8))
        }
        guard let file = files[name] else { throw .notFound("the console has no file \"\(name.debugSanitized)\"") }
        if let tags = ifNoneMatch, tags.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == file.etag }) {
            return file.notModified
        }
        return file.ok
    }

    /// 128 bits from the system's CSPRNG (getrandom on Linux), base64.
    static func nonce() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<2).flatMap { _ -> [UInt8] in withUnsafeBytes(of: generator.next() as UInt64) { Array($0) } }
        return Data(bytes).base64EncodedString()
    }

    /// `/` and `/console` send a browser to the console.
    static let redirect = HTTPResponse(status: 302, headers: [("Location", APIOperation.consoleIndex.path([:])), ("Cache-Control", "no-cache"),
                                                              ("Content-Type", "text/plain; charset=utf-8")],
                                       body: Array("the console is at /console/\n".utf8), prepared: true)
}
