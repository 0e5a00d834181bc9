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
    /// Field lines in order, names lowercased.
    let fields: [(name: String, value: String)]
    let arguments: [(name: String, value: String)]

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
        self.fields = fields.map { (String(decoding: $0.0.utf8.map(HTTPRequest.asciiLowercase), as: UTF8.self), $0.1) }
        self.arguments = query.map { ($0.key, $0.value) }
    }

    init(method: String, path: String, fields: [(name: String, value: String)], arguments: [(name: String, value: String)],
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

    /// The first line of header `name`.
    public func header(_ name: String) -> String? {
        fields.first { HTTPRequest.fieldName($0.name, is: name) }?.value
    }

    /// Every line of header `name`, in order.
    public func headerLines(_ name: String) -> [String] {
        fields.compactMap { HTTPRequest.fieldName($0.name, is: name) ? $0.value : nil }
    }

    /// The first line of header `name` and whether another line of it follows: what a header
    /// that must be sent once needs, without collecting its lines.
    public func singleHeader(_ name: String) -> (first: String, repeated: Bool)? {
        guard let at = fields.firstIndex(where: { HTTPRequest.fieldName($0.name, is: name) }) else { return nil }
        let repeated = fields[(at + 1)...].contains { HTTPRequest.fieldName($0.name, is: name) }
        return (fields[at].value, repeated)
    }

    /// Whether a stored (lowercased) field name is `name` in any case. Field names are tokens,
    /// ASCII (RFC 9110 section 5.1), so the fold is ASCII's; compared byte by byte, where
    /// lowercasing `name` per lookup was a String built on every header read of every request.
    static func fieldName(_ stored: String, is name: String) -> Bool {
        // The length (known without reading the bytes) sets apart most of a head's other names.
        guard stored.utf8.count == name.utf8.count else { return false }
        var stored = stored, name = name
        return stored.withUTF8 { a in
            name.withUTF8 { b in
                for i in 0..<a.count where a[i] != asciiLowercase(b[i]) { return false }
                return true
            }
        }
    }

    static func asciiLowercase(_ b: UInt8) -> UInt8 { b >= UInt8(ascii: "A") && b <= UInt8(ascii: "Z") ? b | 0x20 : b }

    /// Every line of a list-valued header joined with ", " (X-Forwarded-For: a proxy may add
    /// its own line after one the client sent).
    public func joinedHeader(_ name: String) -> String? {
        let lines = headerLines(name)
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
