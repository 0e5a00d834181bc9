import Testing
@testable import HTTPTransport
@testable import PatchServer

/// X-Forwarded-For is believed only from configured proxies, and only as far as the chain
/// of trusted hops goes: a client cannot pick its own per-IP bucket.
@Suite("Trusted proxies and X-Forwarded-For")
struct TrustedProxyTests {
    static func networks(_ texts: String...) throws -> [IPNetwork] { try texts.map { try IPNetwork($0) } }

    @Test("networks parse as address or CIDR, IPv4 and IPv6, host bits cleared", arguments: [
        ("10.1.2.3", "10.1.2.3/32"), ("10.1.2.3/8", "10.0.0.0/8"), ("192.168.7.255/23", "192.168.6.0/23"),
        ("0.0.0.0/0", "0.0.0.0/0"), ("::1", "::1/128"), ("fd12:3456::1/16", "fd12::/16"), ("2001:db8::ff/127", "2001:db8::fe/127"),
    ])
    func parse(text: String, canonical: String) throws {
        #expect(try IPNetwork(text).description == canonical)
    }

    @Test("anything else is refused with a message naming it", arguments: [
        "", "10.0.0", "10.0.0.0/33", "10.0.0.0/-1", "10.0.0.0/08", "10.0.0.0/", "::1/129", "example.com", "10.0.0.0/8/8", " 10.0.0.1",
    ])
    func refuse(text: String) {
        #expect(throws: IPNetwork.ParseError.self) { try IPNetwork(text) }
    }

    @Test("membership: inside, outside, and never across address families")
    func contains() throws {
        let v4 = try IPNetwork("10.0.0.0/8"), v6 = try IPNetwork("fd00::/8")
        #expect(v4.contains(IPNetwork.parseAddress("10.255.0.1")!))
        #expect(!v4.contains(IPNetwork.parseAddress("11.0.0.1")!))
        #expect(v6.contains(IPNetwork.parseAddress("fd99::5")!))
        #expect(!v6.contains(IPNetwork.parseAddress("fe80::1")!))
        #expect(!v4.contains(IPNetwork.parseAddress("::ffff:10.0.0.1")!), "an IPv4-mapped IPv6 address is IPv6 here")
        #expect(try IPNetwork("0.0.0.0/0").contains(IPNetwork.parseAddress("203.0.113.9")!))
    }

    @Test("who the client is", arguments: [
        // (trusted, peer, X-Forwarded-For, client)
        ("", "10.0.0.5", "203.0.113.9", "10.0.0.5"),                                // no proxies configured: header ignored
        ("10.0.0.0/8", "198.51.100.7", "203.0.113.9", "198.51.100.7"),              // peer is not a proxy: header ignored
        ("10.0.0.0/8", "10.0.0.5", nil, "10.0.0.5"),                                // proxy without the header
        ("10.0.0.0/8", "10.0.0.5", "203.0.113.9", "203.0.113.9"),                   // one proxy
        ("10.0.0.0/8", "10.0.0.5", "1.1.1.1, 203.0.113.9", "203.0.113.9"),          // the client's own entry is ignored
        ("10.0.0.0/8", "10.0.0.5", "203.0.113.9, 10.9.9.9", "203.0.113.9"),         // two proxies
        ("10.0.0.0/8", "10.0.0.5", "10.1.1.1, 10.2.2.2", "10.1.1.1"),               // only proxies: the farthest one
        ("10.0.0.0/8", "10.0.0.5", "junk, 203.0.113.9", "203.0.113.9"),             // junk left of the client does not matter
        ("10.0.0.0/8", "10.0.0.5", "203.0.113.9, junk", "10.0.0.5"),                // junk in the trusted part: stop at the last trusted hop
        ("10.0.0.0/8", "10.0.0.5", "", "10.0.0.5"),                                 // empty header
        ("10.0.0.0/8,fd00::/8", "10.0.0.5", "2001:db8::7, fd00::1", "2001:db8::7"), // IPv6 entries
    ] as [(String, String, String?, String)])
    func client(trusted: String, peer: String, forwardedFor: String?, expected: String) throws {
        let proxies = try trusted.split(separator: ",").map { try IPNetwork(String($0)) }
        #expect(proxies.client(peer: try #require(IPAddress(peer)), forwardedFor: forwardedFor).description == expected)
    }

    @Test("through the service: behind a trusted proxy each forwarded client has its own bucket; a direct client's header changes nothing")
    func perClientBuckets() throws {
        let f = try ServiceFixture(minInterval: 0, ipRate: 2, trustedProxies: Self.networks("10.0.0.0/8"))
        let path = "/v1/apps/demo/metadata/1.root.json"
        for _ in 0..<2 { #expect(f.get(path, headers: ["X-Forwarded-For": "203.0.113.1"], from: "10.0.0.5").status == 200) }
        #expect(f.get(path, headers: ["X-Forwarded-For": "203.0.113.1"], from: "10.0.0.5").status == 429)
        // Another device behind the same balancer, and the same device through another one.
        #expect(f.get(path, headers: ["X-Forwarded-For": "203.0.113.2"], from: "10.0.0.5").status == 200)
        #expect(f.get(path, headers: ["X-Forwarded-For": "203.0.113.1"], from: "10.0.0.6").status == 429)
        // A forged entry to the left of what the proxy added does not buy a new bucket.
        #expect(f.get(path, headers: ["X-Forwarded-For": "9.9.9.9, 203.0.113.1"], from: "10.0.0.5").status == 429)
        // A client reaching patchd directly cannot name someone else.
        for _ in 0..<2 { #expect(f.get(path, headers: ["X-Forwarded-For": "203.0.113.77"], from: "198.51.100.7").status == 200) }
        #expect(f.get(path, headers: ["X-Forwarded-For": "203.0.113.78"], from: "198.51.100.7").status == 429)
    }
}
