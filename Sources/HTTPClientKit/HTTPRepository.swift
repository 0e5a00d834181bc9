import Foundation
import PatchCore

/// A patchd server (or a static mirror of its layout) as the updater reads it:
/// `{server}/v1/apps/{app}/metadata/{name}` and `…/targets/{path}` (`DeviceRoutes.repositoryRoot`), through `HTTPClient`:
/// redirects are never followed, and a transfer stops the moment its `DownloadBody`
/// refuses more. `patchctl verify --server` reads servers through it too, so CI and devices
/// meet a server with the same limits.
public struct HTTPRepository: RepositoryFetcher {
    public let server: URL
    public let app: AppName
    private let http: HTTPClient
    /// `{server}` without a trailing slash, and `{server}/v1/apps/{app}`: worked out once, not
    /// per request (each took thousands of instructions; issue 23).
    private let serverBase: String
    private let appBase: String

    /// `requestTimeout`: connecting, and the longest wait for the next byte; `transferTimeout`:
    /// the longest one file may take.
    public init(server: URL, app: AppName, requestTimeout: TimeInterval = 20, transferTimeout: TimeInterval = 60) {
        self.server = server
        self.app = app
        self.http = HTTPClient(HTTPClient.Configuration(requestTimeout: requestTimeout, resourceTimeout: transferTimeout))
        var base = server.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        serverBase = base
        appBase = base + DeviceRoutes.repositoryRoot(app: app.rawValue)
    }

    public func location(of file: RepositoryFile) -> String {
        "\(appBase)/\(file.relativePath)"
    }

    /// A POST of the app's with a JSON body (the client library's reports and push token),
    /// the answer's body kept up to `limit` bytes (a 202 is a few dozen).
    public func post(_ route: RoutePath, _ body: [UInt8], headers: [String: String], limit: Int = 4096) async throws(FetchError) -> (head: FetchHead, body: [UInt8]) {
        let location = serverBase + route.path(["app": app.rawValue])
        guard let url = URL(string: location) else { throw .network("bad server URL \(location)") }
        let answer = DownloadBody(limit: limit)
        var all = headers
        all["Content-Type"] = "application/json"
        let head = try await http.send("POST", url, headers: all, body: body, into: answer)
        return (head, answer.received)
    }

    public func fetch(_ file: RepositoryFile, headers: [String: String], into body: DownloadBody) async throws(FetchError) -> FetchHead {
        let location = location(of: file)
        guard let url = URL(string: location) else { throw .network("bad server URL \(location)") }
        return try await http.send("GET", url, headers: headers, into: body)
    }
}
