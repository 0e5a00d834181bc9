import Foundation

/// A `host[:port]` (RFC 9110 §7.2: `uri-host [ ":" port ]`), from an absolute-form request
/// target or from the `Host` field: the one syntax check both go through, so the two are
/// compared as values (`H:80` and `h` are one authority for http), never as text.
///
/// Stricter than RFC 3986's reg-name on purpose: a host is DNS-like labels (letters,
/// digits, `-`, `_`, at most 63 bytes each, 253 in all, an optional trailing dot), a
/// dotted-quad IPv4 address, or a bracketed IPv6 address. Percent-encoded and sub-delim
/// host names (`a%2eb`, `a,b`, `a;b`), which no client of patchd sends and which proxies
/// read differently, are refused; so is userinfo (`user@host`, RFC 9110 §4.2.4) and a host
/// whose last label is a number but that is not a dotted quad (`127.1`, `0x7f.1`,
/// `010.0.0.1`: `inet_aton` reads those as other addresses than they look like, WHATWG
/// URL parsers as IPv4, RFC 3986 as names).
struct Authority: Sendable {
    /// The host as compared: lowercased name, dotted quad, or `[…]` with the IPv6 address
    /// in its canonical text (`[::1]` for `[0:0::1]`).
    let host: String
    /// nil when absent, empty (`h:`) or the scheme's default.
    let port: Int?
    /// The port the scheme implies (80 for http, 443 for https), nil for a Host field that
    /// comes with an origin-form target.
    let defaultPort: Int?

    /// `what` names the bytes in the error ("the Host field", "the request target").
    init(_ bytes: ArraySlice<UInt8>, defaultPort: Int?, what: String) throws(FramingError) {
        self.defaultPort = defaultPort
        guard let first = bytes.first else { throw .malformed("\(what) names no host") }
        if bytes.contains(UInt8(ascii: "@")) { throw .malformed("\(what) has userinfo (user@host), which is not accepted") }
        let hostEnd: Int
        if first == UInt8(ascii: "[") {
            guard let close = bytes.firstIndex(of: UInt8(ascii: "]")),
                  let address = Authority.ipv6(bytes[(bytes.startIndex + 1)..<close]) else {
                throw .malformed("\(what) has an invalid IPv6 literal (only [IPv6 address] is accepted)")
            }
            host = "[\(address)]"
            hostEnd = close + 1
        } else {
            hostEnd = bytes.firstIndex(of: UInt8(ascii: ":")) ?? bytes.endIndex
            guard let name = Authority.nameOrIPv4(bytes[..<hostEnd]) else {
                throw .malformed("\(what) is not a valid host name or IPv4 address")
            }
            host = name
        }
        guard hostEnd < bytes.endIndex else {
            port = nil
            return
        }
        let digits = bytes[(hostEnd + 1)...]
        guard bytes[hostEnd] == UInt8(ascii: ":"), digits.count <= 5, digits.allSatisfy(isDigit) else {
            throw .malformed("\(what) has something other than :port after the host")
        }
        let value = digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }
        guard value <= 65535 else { throw .malformed("\(what) has a port over 65535") }
        port = digits.isEmpty || value == defaultPort ? nil : value
    }

    /// The canonical text of an IPv6 address, or nil (IPvFuture and zone IDs included).
    private static func ipv6(_ bytes: ArraySlice<UInt8>) -> String? {
        guard !bytes.isEmpty, bytes.count <= 45,
              bytes.allSatisfy({ hexValue($0) != nil || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") }) else { return nil }
        var address = in6_addr()
        guard inet_pton(AF_INET6, String(decoding: bytes, as: UTF8.self), &address) == 1 else { return nil }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(AF_INET6, &address, &text, socklen_t(text.count)) != nil else { return nil }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// A DNS-like name (lowercased) or a dotted-quad IPv4 address, or nil.
    private static func nameOrIPv4(_ bytes: ArraySlice<UInt8>) -> String? {
        var labels = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        // One trailing dot (a fully qualified name) is allowed, not an empty name or label.
        if labels.count > 1, labels.last?.isEmpty == true { labels.removeLast() }
        guard bytes.count <= 254, let last = labels.last, !last.isEmpty else { return nil }
        if last.allSatisfy(isDigit) {
            // dec-octet (RFC 3986 §3.2.2): 0-255 without leading zeros, four of them.
            guard labels.count == 4, bytes.last != UInt8(ascii: "."), labels.allSatisfy({ label in
                (1...3).contains(label.count) && label.allSatisfy(isDigit) && (label.count == 1 || label.first != 0x30)
                    && label.reduce(0) { $0 * 10 + Int($1 - 0x30) } <= 255
            }) else { return nil }
            return String(decoding: bytes, as: UTF8.self)
        }
        guard labels.allSatisfy({ label in
            (1...63).contains(label.count) && label.allSatisfy { isUnreserved($0) && $0 != UInt8(ascii: ".") && $0 != UInt8(ascii: "~") }
        }) else { return nil }
        return String(decoding: bytes, as: UTF8.self).lowercased()
    }
}

extension Authority: Equatable {
    /// The same host and port; the default port was already folded into `port`.
    static func == (a: Authority, b: Authority) -> Bool { a.host == b.host && a.port == b.port }
}
