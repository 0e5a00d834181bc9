/// One HTTP request as the router sees it. Headers and query arguments are looked up on
/// demand: the transport answers from its own parsed copy, so a request that reads two
/// headers costs two lookups, not a dictionary of all of them.
public struct HTTPRequest {
    public let method: String
    /// The decoded path, without the query string.
    public let path: String
    public let body: [UInt8]
    private let addressLookup: () -> String
    private let headerLookup: (String) -> String?
    private let joinedHeaderLookup: (String) -> String?
    private let queryLookup: (String) -> String?

    /// For tests and in-process callers: header names match case-insensitively.
    public init(method: String, path: String, headers: [String: String] = [:], query: [String: String] = [:],
                body: [UInt8] = [], remoteAddress: String = "127.0.0.1") {
        let lowered = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { a, _ in a })
        self.init(method: method, path: path, body: body, addressLookup: { remoteAddress },
                  headerLookup: { lowered[$0.lowercased()] }, joinedHeaderLookup: { lowered[$0.lowercased()] },
                  queryLookup: { query[$0] })
    }

    init(method: String, path: String, body: [UInt8], addressLookup: @escaping () -> String,
         headerLookup: @escaping (String) -> String?, joinedHeaderLookup: @escaping (String) -> String?,
         queryLookup: @escaping (String) -> String?) {
        self.method = method
        self.path = path
        self.body = body
        self.addressLookup = addressLookup
        self.headerLookup = headerLookup
        self.joinedHeaderLookup = joinedHeaderLookup
        self.queryLookup = queryLookup
    }

    /// The client's IP address as text ("127.0.0.1", "::1"); formatted only when asked for
    /// (the per-IP limit, when it is on).
    public var remoteAddress: String { addressLookup() }

    /// The first line of header `name`.
    public func header(_ name: String) -> String? { headerLookup(name) }
    /// Every line of a list-valued header joined with ", " (X-Forwarded-For: a proxy may add
    /// its own line after one the client sent).
    public func joinedHeader(_ name: String) -> String? { joinedHeaderLookup(name) }
    public func query(_ name: String) -> String? { queryLookup(name) }

    /// The bearer token of an `Authorization: Bearer …` header.
    public var bearerToken: String? {
        guard let value = header("Authorization") else { return nil }
        let parts = value.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        return parts[1].trimmingCharacters(in: .whitespaces)
    }
}

import Foundation
