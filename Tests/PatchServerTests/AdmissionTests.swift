import Foundation
import PatchCore
import PatchRegistry
import Testing
@testable import HTTPTransport
@testable import PatchServer

/// What the service decides from a request's head, before the transport reads a body byte
/// (the transport's side of the same rules is FrontDoorTests).
@Suite("Admission from the request head")
struct AdmissionTests {
    /// A head as the transport builds it: a body declared, none read yet.
    static func head(_ method: String, _ path: String, headers: [(String, String)] = [], query: [(String, String)] = [],
                     declared: HTTPRequest.DeclaredBody = .length(10 << 20), from ip: String = "127.0.0.1") -> HTTPRequest {
        HTTPRequest(method: method, path: path, fields: HeaderFields(headers), arguments: query,
                    declaredBody: declared, peer: IPAddress(ip)!)
    }

    static func answer(_ admission: HTTPAdmission) -> HTTPResponse? {
        if case .answer(let response) = admission { return response }
        return nil
    }

    @Test("an upload is authenticated and authorized from the head: no token 401, unknown token 401, wrong app or role 403")
    func uploadsNeedAToken() throws {
        let f = try ServiceFixture()
        let path = "/v1/apps/demo/patches"
        let cases: [([(String, String)], Int)] = [
            ([], 401), ([("Authorization", "Bearer hp_nope")], 401),
            ([("Authorization", "Bearer \(f.otherAppToken)")], 403), ([("Authorization", "Bearer \(f.auditorToken)")], 403),
        ]
        for (headers, status) in cases {
            let response = try #require(Self.answer(f.service.admit(Self.head("POST", path, headers: headers, query: [("appVersion", "2.3")]))))
            #expect(response.status == status)
        }
        let admitted = f.service.admit(Self.head("POST", path, headers: [("Authorization", "Bearer \(f.publisherToken)")],
                                                 query: [("appVersion", "2.3")], declared: .length(100)))
        guard case .readBody(let limit, let charge, _) = admitted else { Issue.record("a publisher's upload is admitted"); return }
        #expect(limit == Registry.maxBundleSize)
        guard case .token(let holder) = charge else { Issue.record("a token's upload is charged to the token pool: \(charge)"); return }
        #expect(!holder.isEmpty)
    }

    @Test("a body is charged to its token's line of issue (a child's to its parent's); an anonymous one to the client a trusted proxy names, or to the anonymous pool alone when the proxy names none")
    func bodyCharges() throws {
        let f = try ServiceFixture(trustedProxies: [try IPNetwork("10.0.0.0/8")])
        func charge(_ request: HTTPRequest) -> BodyCharge? {
            if case .readBody(_, let charge, _) = f.service.admit(request) { return charge }
            return nil
        }
        func publish(_ token: String) -> HTTPRequest {
            Self.head("POST", "/v1/apps/demo/patches", headers: [("Authorization", "Bearer \(token)")], query: [("appVersion", "2.3")], declared: .length(100))
        }
        let parent = try f.service.authenticate(publish(f.publisherToken))
        #expect(charge(publish(f.publisherToken)) == .token(holder: parent.tree))
        let child = try f.registry { try $0.createToken(app: AppName("demo"), role: .publisher, name: "child", actor: Actor("fixture"), parent: parent.id) }
        #expect(charge(publish(child.secret)) == .token(holder: parent.tree), "issuing children does not multiply a share")

        func report(from peer: String, forwardedFor: String?) -> HTTPRequest {
            Self.head("POST", "/v1/apps/demo/reports", headers: [("X-Device-ID", "d")] + (forwardedFor.map { [("X-Forwarded-For", $0)] } ?? []),
                      declared: .length(100), from: peer)
        }
        #expect(charge(report(from: "10.0.0.5", forwardedFor: "203.0.113.9")) == .anonymous(client: IPAddress("203.0.113.9")))
        #expect(charge(report(from: "10.0.0.5", forwardedFor: nil)) == .anonymous(client: nil), "a proxy's clients are many")
        #expect(charge(report(from: "198.51.100.7", forwardedFor: "203.0.113.9")) == .anonymous(client: IPAddress("198.51.100.7")),
                "a header from a peer not trusted names nobody")
    }

    @Test("routes that take no body refuse a declared one from the head; an upload over its route's limit is 413")
    func bodies() throws {
        let f = try ServiceFixture()
        f.publish("x()")
        for (method, path) in [("GET", "/healthz"), ("GET", "/v1/apps/demo/metadata/timestamp.json"), ("GET", "/v1/apps/demo/versions/2.3/patch"),
                               ("POST", "/v1/apps/demo/versions/2.3/revoke"), ("GET", "/metrics")] {
            let token = [("Authorization", "Bearer \(f.publisherToken)")]
            for declared in [HTTPRequest.DeclaredBody.length(1), .chunked] {
                let response = try #require(Self.answer(f.service.admit(Self.head(method, path, headers: token, declared: declared))), "\(method) \(path)")
                #expect(response.status == 413, "\(method) \(path)")
                #expect(response.bodyString.contains("takes no request body"))
            }
        }
        #expect(try #require(Self.answer(f.service.admit(Self.head("POST", "/healthz", declared: .length(1))))).status == 405)
        let huge = Self.head("POST", "/v1/apps/demo/patches", headers: [("Authorization", "Bearer \(f.publisherToken)")],
                             query: [("appVersion", "2.3")], declared: .length(Registry.maxBundleSize + 1))
        #expect(try #require(Self.answer(f.service.admit(huge))).status == 413)
        let rollout = Self.head("POST", "/v1/apps/demo/versions/2.3/patches/1/rollout", headers: [("Authorization", "Bearer \(f.publisherToken)")],
                                declared: .length(5000))
        #expect(try #require(Self.answer(f.service.admit(rollout))).status == 413)
    }

    @Test("X-Device-ID sent on two lines is 400 on the check and on metadata files")
    func duplicateDeviceID() throws {
        let f = try ServiceFixture()
        f.publish("x()")
        for path in ["/v1/apps/demo/versions/2.3/patch", "/v1/apps/demo/metadata/timestamp.json", "/v1/apps/demo/metadata/1.root.json"] {
            let request = HTTPRequest(method: "GET", path: path, fields: [("X-Device-ID", "a"), ("X-Device-ID", "b")])
            let response = f.service.respond(to: request)
            #expect(response.status == 400, "\(path)")
            #expect(response.bodyString.contains("X-Device-ID must be sent once"))
        }
    }

    @Test("per-IP buckets key on the parsed address: one IPv6 /64 is one client, a mapped IPv4 address is the IPv4 one")
    func bucketKeys() throws {
        let f = try ServiceFixture(minInterval: 0, ipRate: 3, trustedProxies: [try IPNetwork("127.0.0.1")])
        func get(_ client: String) -> Int {
            f.service.respond(to: HTTPRequest(method: "GET", path: "/v1/apps/demo/metadata/1.root.json", fields: [("X-Forwarded-For", client)])).status
        }
        #expect(get("2001:DB8::1") == 200)
        #expect(get("2001:db8:0::1") == 200)
        #expect(get("2001:0db8::0001") == 200)
        #expect(get("2001:db8::ffff:2") == 429, "the same /64 shares the bucket")
        #expect(get("2001:db8:0:1::1") == 200, "another /64 has its own")
        for _ in 0..<3 { #expect(get("10.1.2.3") == 200) }
        #expect(get("::ffff:10.1.2.3") == 429, "an IPv4-mapped address counts as the IPv4 address")
    }

    @Test("addresses parse to one key whatever their spelling; limit keys group IPv6 by prefix")
    func addresses() throws {
        let spellings = ["2001:DB8::1", "2001:db8:0::1", "2001:0db8:0000:0000:0000:0000:0000:0001"]
        #expect(Set(spellings.compactMap(IPAddress.init)).count == 1)
        #expect(IPAddress("::ffff:192.0.2.1") == IPAddress("192.0.2.1"))
        #expect(IPAddress("::ffff:192.0.2.1")?.isIPv4 == true)
        #expect(IPAddress("2001:db8::1")?.description == "2001:db8::1")
        let a = try #require(IPAddress("2001:db8:1:2:aaaa::1")), b = try #require(IPAddress("2001:db8:1:2:bbbb::2"))
        #expect(a.limitKey(ipv6Prefix: 64) == b.limitKey(ipv6Prefix: 64))
        #expect(a.limitKey(ipv6Prefix: 128) != b.limitKey(ipv6Prefix: 128))
        #expect(a.limitKey(ipv6Prefix: 48) == IPAddress("2001:db8:1:ffff::")?.limitKey(ipv6Prefix: 48))
        #expect(IPAddress("203.0.113.77")?.network == "203.0.113.0/24")
        #expect(IPAddress("::ffff:203.0.113.77")?.block == "203.0.0.0/16")
        #expect(a.network == "2001:db8:1::/48")
        #expect(a.block == "2001:db8::/32")
        #expect(a.limitKey(ipv6Prefix: 64).description == "2001:db8:1:2::")
        #expect(IPAddress("10.0.0.1")?.limitKey(ipv6Prefix: 64) == IPAddress("10.0.0.1"))
        for bad in ["", "1.2.3", "::g", "localhost", "1.2.3.4/8"] { #expect(IPAddress(bad) == nil, "\(bad)") }
    }
}
