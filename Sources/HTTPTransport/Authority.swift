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
        let (hostEnd, ipv6, port) = try Authority.check(bytes, defaultPort: defaultPort, what: what)
        self.defaultPort = defaultPort
        self.port = port
        host = ipv6.map { "[\($0)]" } ?? String(decoding: bytes[..<hostEnd], as: UTF8.self).lowercased()
    }

    /// Checks `bytes` as an authority without building its strings (what a Host field beside
    /// an origin-form target needs, on every request): where the host ends, the canonical
    /// text of a bracketed IPv6 address, and the port as compared (see `port`).
    @discardableResult
    static func check(_ bytes: ArraySlice<UInt8>, defaultPort: Int?, what: String) throws(FramingError) -> (hostEnd: Int, ipv6: String?, port: Int?) {
        guard let first = bytes.first else { throw .malformed("\(what) names no host") }
        if bytes.contains(UInt8(ascii: "@")) { throw .malformed("\(what) has userinfo (user@host), which is not accepted") }
        let hostEnd: Int
        var ipv6: String?
        if first == UInt8(ascii: "[") {
            guard let close = bytes.firstIndex(of: UInt8(ascii: "]")),
                  let address = Authority.ipv6(bytes[(bytes.startIndex + 1)..<close]) else {
                throw .malformed("\(what) has an invalid IPv6 literal (only [IPv6 address] is accepted)")
            }
            ipv6 = address
            hostEnd = close + 1
        } else {
            hostEnd = bytes.firstIndex(of: UInt8(ascii: ":")) ?? bytes.endIndex
            guard Authority.isNameOrIPv4(bytes[..<hostEnd]) else {
                throw .malformed("\(what) is not a valid host name or IPv4 address")
            }
        }
        guard hostEnd < bytes.endIndex else { return (hostEnd, ipv6, nil) }
        let digits = bytes[(hostEnd + 1)...]
        guard bytes[hostEnd] == UInt8(ascii: ":"), digits.count <= 5, digits.allSatisfy(isDigit) else {
            throw .malformed("\(what) has something other than :port after the host")
        }
        let value = digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }
        guard value <= 65535 else { throw .malformed("\(what) has a port over 65535") }
        return (hostEnd, ipv6, digits.isEmpty || value == defaultPort ? nil : value)
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

    /// Whether `bytes` is a DNS-like name or a dotted-quad IPv4 address, in one pass over its
    /// bytes (no array of labels is built; on the buffer, where the slices' generic loops
    /// cost a Host check as much as parsing the rest of its line).
    private static func isNameOrIPv4(_ bytes: ArraySlice<UInt8>) -> Bool {
        guard bytes.count <= 254 else { return false }
        return bytes.withUnsafeBufferPointer { b in
            let dot = UInt8(ascii: ".")
            // One trailing dot (a fully qualified name) is allowed, not an empty name or label.
            let trailingDot = b.count > 1 && b[b.count - 1] == dot
            let end = trailingDot ? b.count - 1 : b.count
            var labels = 0, start = 0
            var lastIsNumber = false, allOctets = true, allNameLabels = true
            while true {
                var i = start, digitsOnly = true, nameBytes = true, value = 0
                while i < end, b[i] != dot {
                    let c = b[i]
                    if isDigit(c) {
                        if value <= 255 { value = value * 10 + Int(c - 0x30) }  // past 255 it is no octet
                    } else {
                        digitsOnly = false
                    }
                    if !isUnreserved(c) || c == UInt8(ascii: "~") { nameBytes = false }
                    i += 1
                }
                let length = i - start
                labels += 1
                lastIsNumber = length > 0 && digitsOnly
                // dec-octet (RFC 3986 §3.2.2): 0-255 without leading zeros.
                if !(lastIsNumber && length <= 3 && (length == 1 || b[start] != 0x30) && value <= 255) { allOctets = false }
                if !((1...63).contains(length) && nameBytes) { allNameLabels = false }
                if i == end { break }
                start = i + 1
            }
            // A last label that is a number makes the whole an IPv4 address: four octets exactly.
            if lastIsNumber { return labels == 4 && !trailingDot && allOctets }
            return allNameLabels
        }
    }
}

extension Authority: Equatable {
    /// The same host and port; the default port was already folded into `port`.
    static func == (a: Authority, b: Authority) -> Bool { a.host == b.host && a.port == b.port }
}
