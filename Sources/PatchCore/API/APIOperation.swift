/// One operation of patchd's HTTP API, as every side of the project knows it: patchd's router
/// is built from these (`Router.add`), patchctl's remote commands and PatchClient build their
/// URLs from them (`url`), the console's `operations.js` is generated from them, and tests hold
/// `docs/openapi.yaml` and README's CLI reference to them. A route's path is spelt here only.
public struct APIOperation: Sendable, Hashable, CustomStringConvertible {
    /// Who may call it; patchd checks this from the request head, before any body byte.
    public enum Scope: String, Sendable, Hashable {
        /// No token (devices, the console's files, health).
        case anyone
        /// Any known token; what it sees is filtered to what the token may read.
        case token
        /// A token that may read the app named in the path (auditor or publisher).
        case auditor
        /// A token that may change the app named in the path; on a path with no app
        /// (`createToken`), any publisher token, and the handler holds the app it acts on to
        /// the token's scope.
        case publisher
    }

    /// `operationId` in docs/openapi.yaml.
    public let id: String
    public let method: String
    /// The path as docs/openapi.yaml writes it: `{name}` is one segment, `{name}.suffix` a
    /// segment ending in that literal suffix.
    public let path: String
    public let scope: Scope
    /// The patchctl commands whose remote form (`--server`) calls it (`"rollback"`, `"apps guard"`).
    public let commands: [String]

    init(_ id: String, _ method: String, _ path: String, scope: Scope = .anyone, commands: [String] = []) {
        self.id = id
        self.method = method
        self.path = path
        self.scope = scope
        self.commands = commands
    }

    public var description: String { "\(method) \(path)" }

    /// The path's segments after the leading `/`; a path ending in `/` ends in an empty one.
    public var segments: [Segment] {
        path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map(Segment.init)
    }

    /// The names of the path's parameters, in order.
    public var parameters: [String] { segments.compactMap(\.parameter) }

    /// One segment of a path: a literal, or a parameter with an optional literal suffix.
    public struct Segment: Sendable, Hashable {
        public let literal: String
        /// The parameter's name; nil for a literal segment.
        public let parameter: String?
        /// What a parameter segment ends with (`.main.js`), or "".
        public let suffix: String

        init(_ text: Substring) {
            if text.hasPrefix("{"), let close = text.firstIndex(of: "}") {
                parameter = String(text[text.index(after: text.startIndex)..<close])
                suffix = String(text[text.index(after: close)...])
                literal = ""
            } else {
                parameter = nil
                suffix = ""
                literal = String(text)
            }
        }

        /// The value this segment captures from `text`, or nil when it does not match.
        /// A literal segment captures "" when equal.
        public func capture(_ text: Substring) -> Substring? {
            guard parameter != nil else { return text == literal ? "" : nil }
            guard !text.isEmpty else { return nil }
            if suffix.isEmpty { return text }
            guard text.hasSuffix(suffix), text.count > suffix.count else { return nil }
            return text.dropLast(suffix.count)
        }
    }

    /// The path with every parameter filled in, each value percent-encoded as one segment
    /// (RFC 3986 unreserved characters kept). A missing parameter is a programming error.
    public func path(_ values: [String: String]) -> String {
        var out = ""
        for segment in segments {
            out += "/"
            guard let name = segment.parameter else { out += segment.literal; continue }
            guard let value = values[name] else { preconditionFailure("\(id): no value for {\(name)}") }
            out += APIOperation.percentEncoded(value) + segment.suffix
        }
        return out
    }

    /// `/v1/apps/{app}`: where an app's TUF repository hangs, `metadata/` and `targets/`
    /// below it (TUF's consistent-snapshot layout, which names target files by target path;
    /// `patchctl export` writes the same layout). Taken from `getMetadata`'s path.
    public static func repositoryRoot(app: String) -> String {
        let path = getMetadata.path(["app": app, "file": "-"])
        return String(path.dropLast("/metadata/-".count))
    }

    /// `path` plus a query of `query`'s pairs in name order (percent-encoded as
    /// `application/x-www-form-urlencoded` would, with `%20` for a space).
    public func target(_ values: [String: String], query: [String: String] = [:]) -> String {
        let path = path(values)
        guard !query.isEmpty else { return path }
        return path + "?" + query.sorted { $0.key < $1.key }
            .map { APIOperation.percentEncoded($0.key) + "=" + APIOperation.percentEncoded($0.value) }.joined(separator: "&")
    }

    private static let unreserved: Set<UInt8> = Set(Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8))

    /// Every byte but RFC 3986's unreserved ones as `%XX`: safe as one path segment and as a
    /// query name or value alike.
    static func percentEncoded(_ value: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(value.utf8.count)
        for byte in value.utf8 {
            if unreserved.contains(byte) { out.append(byte); continue }
            out += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 15)]]
        }
        return String(decoding: out, as: UTF8.self)
    }
}
