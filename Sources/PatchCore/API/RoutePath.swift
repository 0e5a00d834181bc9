/// A route's path as docs/openapi.yaml writes it (`/v1/apps/{app}/metadata/{file}`): `{name}`
/// is one segment, `{name}.suffix` a segment ending in that literal suffix. Filling it in and
/// matching against it are done here only: patchd's router, patchctl's requests and the
/// client library's reports all go through it.
public struct RoutePath: Sendable, Hashable, CustomStringConvertible {
    public let template: String

    public init(_ template: String) { self.template = template }

    public var description: String { template }

    /// The path's segments after the leading `/`; a path ending in `/` ends in an empty one.
    public var segments: [Segment] {
        template.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map(Segment.init)
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
            guard let value = values[name] else { preconditionFailure("\(template): no value for {\(name)}") }
            out += RoutePath.percentEncoded(value) + segment.suffix
        }
        return out
    }

    /// `path` plus a query of `query`'s pairs in name order (percent-encoded as
    /// `application/x-www-form-urlencoded` would, with `%20` for a space).
    public func target(_ values: [String: String], query: [String: String] = [:]) -> String {
        let path = path(values)
        guard !query.isEmpty else { return path }
        return path + "?" + query.sorted { $0.key < $1.key }
            .map { RoutePath.percentEncoded($0.key) + "=" + RoutePath.percentEncoded($0.value) }.joined(separator: "&")
    }

    private static let unreserved: Set<UInt8> = Set(Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8))

    /// Every byte but RFC 3986's unreserved ones as `%XX`: safe as one path segment and as a
    /// query name or value alike.
    public static func percentEncoded(_ value: String) -> String {
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

/// The routes a device calls, which the client library needs and nothing more: the server's
/// operation table (PatchAPI) names these same values for its router, so a device and patchd
/// cannot spell one differently. No command names, scopes or console routes: an app ships this.
public enum DeviceRoutes {
    /// `GET`: one TUF metadata file; `targets/` sits beside `metadata/` (`repositoryRoot`).
    public static let metadata = RoutePath("/v1/apps/{app}/metadata/{file}")
    /// `POST`: a batch of install reports.
    public static let reports = RoutePath("/v1/apps/{app}/reports")
    /// `POST`: a device's push token.
    public static let devices = RoutePath("/v1/apps/{app}/devices")

    /// `/v1/apps/{app}`: where an app's TUF repository hangs, `metadata/` and `targets/`
    /// below it (TUF's consistent-snapshot layout, which names target files by target path;
    /// `patchctl export` writes the same layout). Taken from `metadata`'s path.
    public static func repositoryRoot(app: String) -> String {
        let path = metadata.path(["app": app, "file": "-"])
        return String(path.dropLast("/metadata/-".count))
    }
}
