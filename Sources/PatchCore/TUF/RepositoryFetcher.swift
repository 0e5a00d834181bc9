import Foundation

/// One file of a TUF repository, as the updater asks for it.
public enum RepositoryFile: Sendable, Hashable, CustomStringConvertible {
    /// `metadata/{name}`: `3.root.json`, `timestamp.json`, `7.snapshot.json`…
    case metadata(String)
    /// `targets/{path}`: `2.3/1/{hash}.main.js`, `staging/2.3/2/{hash}.main.js` (PatchTargetInfo.servedPath).
    case target(String)

    /// The path inside the repository, as `patchctl export` lays it out and patchd serves it
    /// under `/v1/apps/{app}/`.
    public var relativePath: String {
        switch self {
        case .metadata(let name): return "metadata/\(name)"
        case .target(let path): return "targets/\(path)"
        }
    }

    /// The name within its folder, as error messages give it.
    public var name: String {
        switch self {
        case .metadata(let name), .target(let name): return name
        }
    }

    public var description: String { relativePath }
}

/// The start of an answer: the status (HTTP's; a directory answers 200 or 404) and the
/// response headers, names lowercased.
public struct FetchHead: Sendable, Equatable {
    public let status: Int
    public let headers: [String: String]

    public init(status: Int, headers: [String: String] = [:]) {
        self.status = status
        self.headers = headers
    }
}

/// The file could not be got at all (as opposed to being served and failing to verify).
public enum FetchError: Error, Equatable, CustomStringConvertible {
    case timeout
    case network(String)
    /// A directory source could not read a file that exists.
    case unreadable(String)

    public var description: String {
        switch self {
        case .network(let message): return "network error: \(message)"
        case .timeout, .unreadable: return reason
        }
    }

    /// The account alone, for a message that names the failure itself ("cannot reach {server}: …").
    public var reason: String {
        switch self {
        case .timeout: return "timed out"
        case .network(let message), .unreadable(let message): return message
        }
    }
}

/// Where the updater's bytes come from: a server (PatchClient's HTTP fetcher), an exported
/// directory, memory in tests. A fetcher only moves bytes: it hands the body to `body` as it
/// arrives and stops the moment `body` refuses more. How much is accepted is decided by
/// `DownloadBody` alone, so no fetcher can forget the cap (python-tuf's `download_bytes`).
public protocol RepositoryFetcher: Sendable {
    /// Gets `file`, never following a redirect (a 3xx is the answer). Cancelling the calling
    /// task ends the transfer.
    func fetch(_ file: RepositoryFile, headers: [String: String], into body: DownloadBody) async throws(FetchError) -> FetchHead
    /// How `file` is named in errors: its URL, or its path on disk.
    func location(of file: RepositoryFile) -> String
}
