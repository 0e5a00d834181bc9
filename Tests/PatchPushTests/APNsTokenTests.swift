import Foundation
import PatchCore
import PatchPush
import PatchSigning
import PatchRegistry
import Synchronization
import Testing
@testable import PatchPush

@Suite("APNs provider token (ES256 JWT) and the announcement")
struct APNsTokenTests {
    static func base64URLDecode(_ text: Substring) -> [UInt8]? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64).map(Array.init)
    }

    /// r ‖ s back to DER, written here independently of the code under test.
    static func der(raw: [UInt8]) -> [UInt8] {
        func integer(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
            var value = Array(bytes.drop { $0 == 0 })
            if value.isEmpty { value = [0] }
            if value[0] & 0x80 != 0 { value.insert(0, at: 0) }
            return [0x02, UInt8(value.count)] + value
        }
        let body = integer(raw[0..<32]) + integer(raw[32..<64])
        return [0x30, UInt8(body.count)] + body
    }

    @Test("the JWT has header {alg ES256, kid}, claims {iss team, iat}, and an r‖s signature the key's public half verifies")
    func jwtVerifies() throws {
        let key = try ECDSAPrivateKey.generate()
        let jwt = try APNsToken.sign(teamID: "TEAM123456", keyID: "KEY1234567", key: key, issuedAt: Date(timeIntervalSince1970: 1_764_583_200))
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        #expect(parts.count == 3)
        #expect(!jwt.contains("=") && !jwt.contains("+") && !jwt.contains("/"), "base64url without padding")
        let header = try JSONParser.parse(try #require(Self.base64URLDecode(parts[0])))
        let claims = try JSONParser.parse(try #require(Self.base64URLDecode(parts[1])))
        #expect(header == ["alg": "ES256", "kid": "KEY1234567"])
        #expect(claims == ["iss": "TEAM123456", "iat": 1_764_583_200])
        let signature = try #require(Self.base64URLDecode(parts[2]))
        #expect(signature.count == 64)
        #expect(key.publicKey.isValidSignature(Self.der(raw: signature), for: Array("\(parts[0]).\(parts[1])".utf8), algorithm: .ecdsa(.sha256)))
    }

    @Test("DER signatures with short and padded integers convert to 64 bytes; malformed DER is refused", arguments: 0..<20)
    func derConversion(_ round: Int) throws {
        let key = try ECDSAPrivateKey.generate()
        let message = Array("message \(round)".utf8)
        let der = try key.signature(for: message)
        let raw = try #require(ECDSAPrivateKey.rawSignature(der: der))
        #expect(raw.count == 64)
        #expect(Self.der(raw: raw) == der)
        #expect(ECDSAPrivateKey.rawSignature(der: Array(der.dropLast())) == nil)
        #expect(ECDSAPrivateKey.rawSignature(der: [0x31] + der.dropFirst()) == nil)
    }

    @Test("one token is reused for 50 minutes, then replaced; invalidate replaces it at once")
    func cached() throws {
        let token = APNsToken(teamID: "TEAM123456", keyID: "KEY1234567", key: try ECDSAPrivateKey.generate())
        let start = Date(timeIntervalSince1970: 1_764_583_200)
        let first = try token.bearer(now: start)
        #expect(try token.bearer(now: start.addingTimeInterval(49 * 60)) == first)
        let renewed = try token.bearer(now: start.addingTimeInterval(50 * 60))
        #expect(renewed != first)
        #expect(try token.bearer(now: start.addingTimeInterval(51 * 60)) == renewed)
        token.invalidate()
        #expect(try token.bearer(now: start.addingTimeInterval(51 * 60)) != renewed)
    }

    @Test("a time read a moment before the cached token's issue reuses it; a clock set back a minute or more renews it")
    func clockBehindTheToken() throws {
        let token = APNsToken(teamID: "TEAM123456", keyID: "KEY1234567", key: try ECDSAPrivateKey.generate())
        let start = Date(timeIntervalSince1970: 1_764_583_200)
        let first = try token.bearer(now: start)
        // A worker that read the clock just before another worker signed (the test_push race).
        #expect(try token.bearer(now: start.addingTimeInterval(-0.004)) == first)
        #expect(try token.bearer(now: start.addingTimeInterval(-59)) == first)
        #expect(try token.bearer(now: start.addingTimeInterval(-60)) != first)
    }

    @Test("payload: content-available 1 and nothing else in aps; hotpatch names app, version, channel, timestamp; background headers")
    func announcement() throws {
        let expiration = Date(timeIntervalSince1970: 1_764_669_600)
        let a = PushAnnouncement(app: try AppName("demo"), appVersion: try AppVersion("2.3"), channel: .production, timestampVersion: 42, expiration: expiration)
        #expect(try JSONParser.parse(a.payload) == ["aps": ["content-available": 1],
                                                     "hotpatch": ["app": "demo", "version": "2.3", "channel": "production", "timestamp": 42]])
        let headers = Dictionary(uniqueKeysWithValues: a.headers(topic: "com.example.demo"))
        #expect(headers["apns-push-type"] == "background")
        #expect(headers["apns-priority"] == "5")
        #expect(headers["apns-topic"] == "com.example.demo")
        #expect(headers["apns-expiration"] == "1764669600")
        #expect(headers["apns-collapse-id"] == "hotpatch:demo:2.3:production")
        let every = PushAnnouncement(app: try AppName("demo"), appVersion: nil, channel: nil, timestampVersion: 7, expiration: expiration)
        #expect(try JSONParser.parse(every.payload)["hotpatch"] == ["app": "demo", "timestamp": 7])
    }

    @Test("HOTPATCH_APNS_URL and HOTPATCH_APNS_CA replace host and trust only when set; Apple's hosts otherwise; a URL that is not https is refused")
    func endpoint() throws {
        #expect(try APNsEndpoint.current(environment: [:]) == .apple)
        #expect(APNsEndpoint.apple.url(for: .sandbox).absoluteString == "https://api.sandbox.push.apple.com")
        #expect(APNsEndpoint.apple.url(for: .production).absoluteString == "https://api.push.apple.com")
        #expect(APNsEndpoint.apple.caFile == nil)
        let local = try APNsEndpoint.current(environment: ["HOTPATCH_APNS_URL": "https://127.0.0.1:9", "HOTPATCH_APNS_CA": "/tmp/ca.pem"])
        #expect(local.url(for: .production).absoluteString == "https://127.0.0.1:9" && local.url(for: .sandbox) == local.production)
        #expect(local.caFile == "/tmp/ca.pem")
        #expect(throws: PushError.self) { try APNsEndpoint.current(environment: ["HOTPATCH_APNS_URL": "http://127.0.0.1:9"]) }
        #expect(throws: PushError.self) { try APNsEndpoint.current(environment: ["HOTPATCH_APNS_URL": "ftp://x"]) }
    }
}

@Suite("APNs provider token shared by concurrent workers")
struct APNsTokenConcurrencyTests {
    @Test("workers asking at once get one token, not one each")
    func oneTokenForAll() throws {
        let token = APNsToken(teamID: "TEAM123456", keyID: "KEY1234567", key: try ECDSAPrivateKey.generate())
        let seen = Mutex<Set<String>>([])
        DispatchQueue.concurrentPerform(iterations: 16) { _ in
            if let jwt = try? token.bearer() { seen.withLock { _ = $0.insert(jwt) } }
        }
        #expect(seen.withLock { $0.count } == 1)
    }
}
