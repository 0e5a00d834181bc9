import Foundation

/// A client's IPv4 or IPv6 address, parsed (never compared as text: `2001:DB8::1` and
/// `2001:0db8:0::0001` are one address). An IPv4-mapped IPv6 address (`::ffff:192.0.2.1`,
/// what a dual-stack socket reports for an IPv4 client) is the IPv4 address.
public struct IPAddress: Hashable, Sendable, CustomStringConvertible {
    /// The 128 bits of an IPv6 address, or the 32 bits of an IPv4 one in `low`.
    package let high: UInt64
    package let low: UInt64
    public let isIPv4: Bool

    public init?(_ text: String) {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { self.init(ipv4: UInt32(bigEndian: v4.s_addr)); return }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        self.init(ipv6: withUnsafeBytes(of: v6) { Array($0) })
    }

    package init(ipv4: UInt32) {
        high = 0
        low = UInt64(ipv4)
        isIPv4 = true
    }

    /// 16 bytes in network order.
    package init(ipv6 bytes: [UInt8]) {
        let high = bytes[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let low = bytes[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        if high == 0, low >> 32 == 0xFFFF {
            self.init(ipv4: UInt32(truncatingIfNeeded: low))
        } else {
            self.init(high: high, low: low, isIPv4: false)
        }
    }

    /// The peer of an accepted socket; nil for a family other than IPv4/IPv6.
    package init?(socketAddress storage: sockaddr_storage) {
        var storage = storage
        switch Int32(storage.ss_family) {
        case AF_INET:
            let sin = withUnsafeBytes(of: &storage) { $0.load(as: sockaddr_in.self) }
            self.init(ipv4: UInt32(bigEndian: sin.sin_addr.s_addr))
        case AF_INET6:
            let sin6 = withUnsafeBytes(of: &storage) { $0.load(as: sockaddr_in6.self) }
            self.init(ipv6: withUnsafeBytes(of: sin6.sin6_addr) { Array($0) })
        default:
            return nil
        }
    }

    /// 4 or 16 bytes in network order (what `IPNetwork` compares).
    package var bytes: [UInt8] {
        if isIPv4 { return (0..<4).map { UInt8(truncatingIfNeeded: low >> (24 - 8 * $0)) } }
        return (0..<8).map { UInt8(truncatingIfNeeded: high >> (56 - 8 * $0)) } + (0..<8).map { UInt8(truncatingIfNeeded: low >> (56 - 8 * $0)) }
    }

    /// What the per-address limits count under: the address itself for IPv4, its network of
    /// `ipv6Prefix` bits for IPv6 — one subscriber usually holds a whole /64, so counting each
    /// /128 would hand a single client 2^64 buckets.
    public func limitKey(ipv6Prefix: Int) -> IPAddress {
        guard !isIPv4 else { return self }
        let bits = max(0, min(128, ipv6Prefix))
        func mask(_ value: UInt64, keep: Int) -> UInt64 { keep >= 64 ? value : keep <= 0 ? 0 : value & ~(UInt64.max >> keep) }
        return IPAddress(high: mask(high, keep: bits), low: mask(low, keep: bits - 64), isIPv4: false)
    }

    /// The network an address is counted under where one subscriber or site must not count
    /// as many (device reports, push-token quotas): its /24 for IPv4, its /48 for IPv6 (what
    /// one site is usually assigned), as text like `203.0.113.0/24` or `2001:db8:1::/48`.
    public var network: String { prefix(ipv4: 24, ipv6: 48) }

    /// The wider block around `network`: /16 for IPv4, /32 for IPv6 (an ISP's usual
    /// allocation), where "evidence from several places" is counted.
    public var block: String { prefix(ipv4: 16, ipv6: 32) }

    private func prefix(ipv4: Int, ipv6: Int) -> String {
        if isIPv4 {
            let masked = IPAddress(ipv4: UInt32(truncatingIfNeeded: low) & ~(UInt32.max >> ipv4))
            return "\(masked)/\(ipv4)"
        }
        return "\(limitKey(ipv6Prefix: ipv6))/\(ipv6)"
    }

    private init(high: UInt64, low: UInt64, isIPv4: Bool) {
        self.high = high
        self.low = low
        self.isIPv4 = isIPv4
    }

    public var description: String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let raw = bytes
        raw.withUnsafeBytes { _ = inet_ntop(isIPv4 ? AF_INET : AF_INET6, $0.baseAddress, &text, socklen_t(text.count)) }
        let length = text.firstIndex(of: 0) ?? text.count
        return String(decoding: text[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    public static let loopback = IPAddress(ipv4: 0x7F00_0001)
}
