/// One HTTP request as the router sees it: the head the transport parsed (method, decoded
/// path, header fields, query arguments) and, once admitted and read, the body.
public struct HTTPRequest: Sendable {
    public let method: String
    /// The decoded path, without the query string.
    public let path: String
    public var body: [UInt8]
    /// How the body is framed, known from the head before any of it is read.
    public let declaredBody: DeclaredBody
    /// The TCP peer.
    public let peer: IPAddress
    /// Field lines in order, as received (names are looked up in any case).
    package let fields: HeaderFields
    package let arguments: [(name: String, value: String)]

    public enum DeclaredBody: Sendable, Equatable {
        case none
        case length(Int)
        /// Chunked: the length is known only once it has been read.
        case chunked
    }

    /// For tests and in-process callers: header names match case-insensitively.
    public init(method: String, path: String, headers: [String: String] = [:], query: [String: String] = [:],
                body: [UInt8] = [], remoteAddress: String = "127.0.0.1") {
        self.init(method: method, path: path, fields: headers.map { ($0.key, $0.value) }, query: query, body: body, remoteAddress: remoteAddress)
    }

    /// For tests that need a header on several lines.
    public init(method: String, path: String, fields: [(String, String)], query: [String: String] = [:],
                body: [UInt8] = [], remoteAddress: String = "127.0.0.1") {
        self.method = method
        self.path = path
        self.body = body
        self.declaredBody = body.isEmpty ? .none : .length(body.count)
        self.peer = IPAddress(remoteAddress) ?? .loopback
        self.fields = HeaderFields(fields)
        self.arguments = query.map { ($0.key, $0.value) }
    }

    package init(method: String, path: String, fields: HeaderFields, arguments: [(name: String, value: String)],
         declaredBody: DeclaredBody, peer: IPAddress) {
        self.method = method
        self.path = path
        self.body = []
        self.declaredBody = declaredBody
        self.peer = peer
        self.fields = fields
        self.arguments = arguments
    }

    /// The client's IP address as text ("127.0.0.1", "::1").
    public var remoteAddress: String { peer.description }

    /// The first line of header `name` (any case).
    public func header(_ name: String) -> String? { fields.first(name) }

    /// Every line of header `name`, in order.
    public func headerLines(_ name: String) -> [String] { fields.values(name) }

    /// The first line of a field read on every request (`KnownField`: from the index, no scan).
    package func header(_ field: KnownField) -> String? { fields.first(field) }

    /// The first line of header `name` and whether another line of it follows: what a header
    /// that must be sent once needs, without collecting its lines.
    public func singleHeader(_ name: String) -> (first: String, repeated: Bool)? {
        let found = fields.find(name)
        return found.first.map { (fields.value($0), found.count > 1) }
    }

    /// `singleHeader` of a known field.
    package func singleHeader(_ field: KnownField) -> (first: String, repeated: Bool)? {
        let found = fields.find(field)
        return found.first.map { (fields.value($0), found.count > 1) }
    }

    package static func asciiLowercase(_ b: UInt8) -> UInt8 { b >= UInt8(ascii: "A") && b <= UInt8(ascii: "Z") ? b | 0x20 : b }

    /// Every line of a list-valued header joined with ", " (X-Forwarded-For: a proxy may add
    /// its own line after one the client sent).
    public func joinedHeader(_ name: String) -> String? {
        let lines = headerLines(name)
        return lines.isEmpty ? nil : lines.joined(separator: ", ")
    }

    /// `joinedHeader` of a known field (none: no scan).
    package func joinedHeader(_ field: KnownField) -> String? {
        let lines = fields.values(field)
        return lines.isEmpty ? nil : lines.joined(separator: ", ")
    }

    /// The first query argument `name`, decoded.
    public func query(_ name: String) -> String? { arguments.first { $0.name == name }?.value }

    /// The bearer token of an `Authorization: Bearer …` header.
    public var bearerToken: String? {
        guard let value = header("Authorization") else { return nil }
        let parts = value.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        return parts[1].trimmingCharacters(in: .whitespaces)
    }
}

import Foundation
