import Foundation
import PatchCore

/// The web console's static files (console/ in the repository, embedded in ConsoleFiles.swift
/// by scripts/embed-console.py), each prepared once as a response. Only the names in that
/// table are ever answered: a request names a file, never a path, so `..`, `%2e%2e` or an
/// encoded slash cannot reach anything else.
struct ConsoleSite: Sendable {
    /// The console's policy: every script, style, image and request from this origin, no
    /// inline script or style, never framed (clickjacking the publisher's buttons).
    static let contentSecurityPolicy = "default-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    /// Headers every console file carries.
    static let securityHeaders: [(String, String)] = [
        ("Content-Security-Policy", contentSecurityPolicy),
        ("X-Content-Type-Options", "nosniff"),
        ("X-Frame-Options", "DENY"),
        ("Referrer-Policy", "no-referrer"),
        // Revalidated on every load (the ETag makes that a 304): a new patchd's console is
        // seen at once, never a mix of old and new files.
        ("Cache-Control", "no-cache"),
    ]

    struct File: Sendable {
        let ok: HTTPResponse
        let notModified: HTTPResponse
        let etag: String
    }

    private let files: [String: File]

    init(_ sources: [(name: String, contentType: String, text: String)] = ConsoleFiles.all) {
        var files: [String: File] = [:]
        for source in sources {
            let body = Array(source.text.utf8)
            let etag = "\"" + String(Digest.sha256Hex(body).prefix(32)) + "\""
            let headers = [("Content-Type", source.contentType), ("ETag", etag)] + ConsoleSite.securityHeaders
            files[source.name] = File(ok: HTTPResponse(status: 200, headers: headers, body: body, prepared: true),
                                      notModified: HTTPResponse(status: 304, headers: headers.filter { $0.0 != "Content-Type" }, prepared: true),
                                      etag: etag)
        }
        self.files = files
    }

    /// The file called `name`, or 304 when `If-None-Match` names its ETag.
    func response(_ name: String, ifNoneMatch: String?) throws(HTTPError) -> HTTPResponse {
        guard let file = files[name] else { throw .notFound("the console has no file \"\(name.debugSanitized)\"") }
        if let tags = ifNoneMatch, tags.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == file.etag }) {
            return file.notModified
        }
        return file.ok
    }

    /// `/` and `/console` send a browser to the console.
    static let redirect = HTTPResponse(status: 302, headers: [("Location", APIOperation.consoleIndex.path([:])), ("Cache-Control", "no-cache"),
                                                              ("Content-Type", "text/plain; charset=utf-8")],
                                       body: Array("the console is at /console/\n".utf8), prepared: true)
}
