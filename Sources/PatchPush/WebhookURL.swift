import Foundation
import PatchCore

/// Why a webhook URL or its host is refused; the registry answers these as its own errors
/// (`invalid` a bad call, `unresolved` bad input, `forbidden` a refused destination).
public enum WebhookURLError: Error, Sendable, Equatable, CustomStringConvertible {
    case invalid(String)
    case unresolved(String)
    case forbidden(String)

    public var description: String {
        switch self {
        case .invalid(let message), .unresolved(let message), .forbidden(let message): return message
        }
    }
}

/// A subscription's URL, checked once where it is added: `https://`, or `http://` only to a
/// loopback host (a receiver on the same machine) or with `insecureHTTP`, which is recorded
/// with the subscription and in the audit log. No user name or password (they would show in
/// every listing), no fragment, at most 2048 bytes.
public struct WebhookURL: Sendable, Equatable {
    public static let maxLength = 2048

    public let url: URL
    public let host: String
    public let port: Int
    public let isHTTPS: Bool

    public init(_ text: String, insecureHTTP: Bool) throws(WebhookURLError) {
        guard !text.isEmpty, text.utf8.count <= WebhookURL.maxLength else { throw .invalid("url must be 1 to \(WebhookURL.maxLength) bytes") }
        guard text.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }), let parts = URLComponents(string: text),
              let url = parts.url, let scheme = parts.scheme?.lowercased(), let rawHost = parts.host, !rawHost.isEmpty else {
            throw .invalid("url must be an absolute http(s) URL, got \(text.debugSanitized)")
        }
        guard scheme == "https" || scheme == "http" else { throw .invalid("url must be https:// (or http:// to a loopback host), got \(scheme.debugSanitized)://") }
        guard parts.user == nil, parts.password == nil else { throw .invalid("url must not carry a user name or password: the secret signs each delivery") }
        guard parts.fragment == nil else { throw .invalid("url must not have a fragment") }
        let host = rawHost.hasPrefix("[") && rawHost.hasSuffix("]") ? String(rawHost.dropFirst().dropLast()) : rawHost
        self.url = url
        self.host = host.lowercased()
        self.isHTTPS = scheme == "https"
        self.port = parts.port ?? (isHTTPS ? 443 : 80)
        if !isHTTPS, !insecureHTTP, !WebhookURL.isLoopbackName(self.host) {
            throw .invalid("url: http:// is refused except to a loopback host (127.0.0.1, ::1, localhost); use https://, or give insecureHttp (--insecure-http), which is recorded")
        }
    }

    /// `localhost` or a loopback address written out: what plain HTTP may reach unasked.
    static func isLoopbackName(_ host: String) -> Bool {
        if host == "localhost" || host.hasSuffix(".localhost") { return true }
        guard let bytes = WebhookAddress.literal(host) else { return false }
        return WebhookAddress.refusal(bytes) == "loopback"
    }

    /// What listings, answers and the audit log show: the scheme, host and port. The path and
    /// query are left out, as a secret: a Slack incoming-webhook URL is its own credential.
    public var shown: String {
        let host = self.host.contains(":") ? "[\(self.host)]" : self.host
        let defaultPort = isHTTPS ? 443 : 80
        return "\(isHTTPS ? "https" : "http")://\(host)\(port == defaultPort ? "" : ":\(port)")/…"
    }
}

/// Where a delivery may connect when patchd refuses its own networks
/// (`patchd --webhook-deny-private`): never to loopback, link-local, private, shared
/// (carrier NAT), multicast, reserved or unspecified addresses, IPv4 or IPv6 (an IPv4-mapped
/// IPv6 address is its IPv4 address), so a publisher token cannot make patchd a probe of the
/// network it runs in. Checked when a subscription is added and again, on the addresses the
/// name resolves to then, before every delivery, which connects to the address checked.
public enum WebhookAddress {
    /// The class of address `bytes` (4 or 16, network order) falls in when it is refused, or
    /// nil for a public one.
    public static func refusal(_ bytes: [UInt8]) -> String? {
        if bytes.count == 16 {
            if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF { return refusal(Array(bytes[12..<16])) }
            if bytes[0..<15].allSatisfy({ $0 == 0 }) { return bytes[15] == 1 ? "loopback" : "unspecified" }
            // NAT64 (64:ff9b::/96) reaches the IPv4 address in its last 32 bits.
            if bytes[0..<12] == [0x00, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0] { return refusal(Array(bytes[12..<16])) }
            if bytes[0] & 0xFE == 0xFC { return "private" }                       // fc00::/7 unique local
            if bytes[0] == 0xFE, bytes[1] & 0xC0 == 0x80 { return "link-local" }  // fe80::/10
            if bytes[0] == 0xFE, bytes[1] & 0xC0 == 0xC0 { return "private" }     // fec0::/10 site-local
            if bytes[0] == 0xFF { return "multicast" }
            return nil
        }
        guard bytes.count == 4 else { return "unspecified" }
        let (a, b) = (bytes[0], bytes[1])
        switch a {
        case 0: return "unspecified"
        case 10: return "private"
        case 127: return "loopback"
        case 100 where b & 0xC0 == 64: return "private"            // 100.64.0.0/10, carrier NAT
        case 169 where b == 254: return "link-local"
        case 172 where b & 0xF0 == 16: return "private"
        case 192 where b == 168: return "private"
        case 192 where b == 0 && bytes[2] == 0: return "reserved"  // 192.0.0.0/24
        case 198 where b & 0xFE == 18: return "reserved"           // 198.18.0.0/15
        case 224...239: return "multicast"
        case 240...255: return "reserved"
        default: return nil
        }
    }

    /// The bytes of `host` when it is an address written out.
    static func literal(_ host: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, host, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }

    /// Every address `host` resolves to (4 or 16 bytes each), in the resolver's order.
    public static func resolve(_ host: String) throws(WebhookURLError) -> [[UInt8]] {
        if let literal = literal(host) { return [literal] }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        guard status == 0, let first = list else {
            throw .unresolved("cannot resolve \(host.debugSanitized): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(first) }
        var out: [[UInt8]] = []
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let info = entry {
            if info.pointee.ai_family == AF_INET, let address = info.pointee.ai_addr {
                address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sin in
                    var a = sin.pointee.sin_addr
                    out.append(withUnsafeBytes(of: &a) { Array($0) })
                }
            } else if info.pointee.ai_family == AF_INET6, let address = info.pointee.ai_addr {
                address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { sin in
                    var a = sin.pointee.sin6_addr
                    out.append(withUnsafeBytes(of: &a) { Array($0) })
                }
            }
            entry = info.pointee.ai_next
        }
        guard !out.isEmpty else { throw .unresolved("\(host.debugSanitized) resolves to no IPv4 or IPv6 address") }
        return out
    }

    /// The addresses `host` resolves to, every one public, or why not (`.forbidden`): one
    /// refused address refuses the name, since a resolver may hand out either.
    public static func publicAddresses(_ host: String) throws(WebhookURLError) -> [[UInt8]] {
        let addresses = try resolve(host)
        for address in addresses {
            if let refusal = refusal(address) {
                throw .forbidden("webhook host \(host.debugSanitized) resolves to \(text(address)), a \(refusal) address: this patchd refuses private destinations (--webhook-deny-private)")
            }
        }
        return addresses
    }

    /// An address as text (`192.0.2.1`, `2001:db8::1`).
    public static func text(_ bytes: [UInt8]) -> String {
        var buffer = [CChar](repeating: 0, count: 64)
        let family = bytes.count == 4 ? AF_INET : AF_INET6
        let ok = bytes.withUnsafeBytes { inet_ntop(family, $0.baseAddress, &buffer, socklen_t(buffer.count)) } != nil
        return ok ? String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "?"
    }
}

/// Whether a registry's subscriptions may name private destinations: patchd's
/// `--webhook-deny-private` (on by default when it listens beyond loopback) sets `publicOnly`.
public enum WebhookAddressPolicy: Sendable {
    case any
    case publicOnly
}
