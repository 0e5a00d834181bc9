import Foundation

/// An IPv4 or IPv6 network written as an address ("10.1.2.3", "::1") or in CIDR form
/// ("10.0.0.0/8", "fd00::/8"): the proxies patchd trusts to say who the client is.
public struct IPNetwork: Sendable, Equatable, CustomStringConvertible {
    package let address: [UInt8]   // 4 or 16 bytes, host bits cleared
    package let prefixLength: Int

    public struct ParseError: Error, CustomStringConvertible {
        public let description: String
    }

    public init(_ text: String) throws(ParseError) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let bytes = IPNetwork.parseAddress(String(parts[0])) else {
            throw ParseError(description: "\(text.debugDescription) is not an IPv4 or IPv6 address or network (like 10.0.0.0/8 or fd00::/8)")
        }
        let bits = bytes.count * 8
        var length = bits
        if parts.count == 2 {
            guard let n = Int(parts[1]), String(n) == parts[1], (0...bits).contains(n) else {
                throw ParseError(description: "\(text.debugDescription): the prefix length must be 0 to \(bits)")
            }
            length = n
        }
        prefixLength = length
        address = IPNetwork.masked(bytes, length)
    }

    public var description: String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        address.withUnsafeBytes { raw in
            _ = inet_ntop(address.count == 4 ? AF_INET : AF_INET6, raw.baseAddress, &text, socklen_t(text.count))
        }
        let length = text.firstIndex(of: 0) ?? text.count
        return String(decoding: text[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self) + "/\(prefixLength)"
    }

    /// Whether `candidate` (4 or 16 bytes from `parseAddress`) lies in this network. An
    /// IPv4 address is never inside an IPv6 network or the other way round.
    package func contains(_ candidate: [UInt8]) -> Bool {
        candidate.count == address.count && IPNetwork.masked(candidate, prefixLength) == address
    }

    /// The bytes of a textual IPv4 (4) or IPv6 (16) address, nil for anything else.
    package static func parseAddress(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: v6) { Array($0) } }
        return nil
    }

    private static func masked(_ bytes: [UInt8], _ length: Int) -> [UInt8] {
        bytes.enumerated().map { index, byte in
            let kept = min(8, max(0, length - index * 8))
            return kept == 8 ? byte : byte & ~(UInt8(0xFF) >> kept)
        }
    }
}

extension [IPNetwork] {
    /// The client a request speaks for. The TCP peer, unless it is one of these proxies and
    /// the request carries X-Forwarded-For: then the list is walked from the right (the
    /// entry the nearest proxy added) past every trusted address, and the first untrusted
    /// one is the client. Entries further left were written by the client and are ignored;
    /// a malformed entry stops the walk at the last trusted hop. The header is read only
    /// when the peer is trusted.
    package func client(peer: IPAddress, forwardedFor: @autoclosure () -> String?) -> IPAddress {
        guard !isEmpty, trusts(peer), let forwardedFor = forwardedFor() else { return peer }
        var client = peer
        for entry in forwardedFor.split(separator: ",").reversed() {
            guard let address = IPAddress(entry.trimmingCharacters(in: .whitespaces)) else { break }
            client = address
            if !trusts(address) { break }
        }
        return client
    }

    package func trusts(_ address: IPAddress) -> Bool {
        let bytes = address.bytes
        return contains { $0.contains(bytes) }
    }
}
