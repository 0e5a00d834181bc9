import Foundation
import Testing
import PatchCore
@testable import HTTPTransport
@testable import PatchServer

/// Issue 43, item 4: whoever knew a device's ID could spend its checks — 5 requests a second
/// with the victim's `X-Device-ID` left it 1 answered check in 45 s, and took the one check a
/// revoke grants it. The slot is now keyed by ID and `X-Device-Secret` together.
@Suite("A device's checks are its own (X-Device-Secret)")
struct DeviceSecretTests {
    static let victim = try! DeviceSecret(String(repeating: "a1", count: 32))
    static let other = try! DeviceSecret(String(repeating: "b2", count: 32))

    @Test("the same ID without the secret, or with another, lands in another slot: the device's interval is spent only by itself")
    func slotIsTheDevicesOwn() {
        let clock = FakeClock()
        let throttle = DeviceThrottle(clock: { clock.seconds })
        #expect(throttle.check(app: "a", device: "phone", secret: Self.victim, interval: 10) == .allowed)
        clock.advance(10)
        for _ in 0..<50 {
            _ = throttle.check(app: "a", device: "phone", interval: 10)
            _ = throttle.check(app: "a", device: "phone", secret: Self.other, interval: 10)
        }
        #expect(throttle.check(app: "a", device: "phone", interval: 10) == .throttled(retryAfter: 10),
                "a client without a secret is metered by its ID, as before")
        #expect(throttle.check(app: "a", device: "phone", secret: Self.victim, interval: 10) == .allowed,
                "the interval passed: the device's check is answered whatever others sent with its ID")
        #expect(throttle.check(app: "a", device: "phone", secret: Self.victim, interval: 10) == .throttled(retryAfter: 10),
                "and its own interval still holds")
    }

    @Test("a revoke's lift and a push's pass are the device's: others naming its ID cannot use them up")
    func passesSurvive() {
        let clock = FakeClock()
        let throttle = DeviceThrottle(clock: { clock.seconds })
        throttle.noteTimestamp(app: "a", version: 1)
        #expect(throttle.check(app: "a", device: "phone", secret: Self.victim, interval: 3600, scope: ("2.3", "production")) == .allowed)
        #expect(throttle.check(app: "a", device: "phone", interval: 3600, scope: ("2.3", "production")) == .allowed)
        clock.advance(5)
        throttle.lift(app: "a", appVersion: "2.3", channel: "production")
        #expect(throttle.check(app: "a", device: "phone", interval: 3600, scope: ("2.3", "production")) == .allowed,
                "the secretless slot has its own pass")
        for _ in 0..<20 {
            #expect(throttle.check(app: "a", device: "phone", interval: 3600, scope: ("2.3", "production")) != .allowed)
            _ = throttle.check(app: "a", device: "phone", secret: Self.other, interval: 3600, scope: ("2.3", "production"))
        }
        #expect(throttle.check(app: "a", device: "phone", secret: Self.victim, interval: 3600, scope: ("2.3", "production")) == .allowed,
                "the forced check right after the revoke")
        #expect(throttle.check(app: "a", device: "phone", secret: Self.victim, interval: 3600, scope: ("2.3", "production")) != .allowed)
        clock.advance(5)
        throttle.noteTimestamp(app: "a", version: 2)
        for _ in 0..<20 {
            _ = throttle.check(app: "a", device: "phone", interval: 3600, announced: 2)
            _ = throttle.check(app: "a", device: "phone", secret: Self.other, interval: 3600, announced: 2)
        }
        #expect(throttle.check(app: "a", device: "phone", secret: Self.victim, interval: 3600, announced: 2) == .allowed,
                "the push-triggered check")
    }

    @Test("through the service: the victim's check after its interval and its forced check after a revoke are answered while others hammer its ID")
    func throughTheService() throws {
        let f = try ServiceFixture(minInterval: 10)
        #expect(f.publish("one()").status == 201)
        #expect(f.publish("two()").status == 201)
        let path = "/v1/apps/demo/metadata/timestamp.json"
        let victim = ["X-Device-ID": "phone-7", "X-Device-Secret": Self.victim.rawValue, "X-App-Version": "2.3"]
        func hammer() {
            for _ in 0..<5 {
                _ = f.get(path, headers: ["X-Device-ID": "phone-7", "X-App-Version": "2.3"])
                _ = f.get(path, headers: ["X-Device-ID": "phone-7", "X-Device-Secret": Self.other.rawValue])
                _ = f.get("/v1/apps/demo/versions/2.3/patch", headers: ["X-Device-ID": "phone-7"])
            }
        }
        #expect(f.get(path, headers: victim).status == 200)
        for _ in 0..<10 {
            f.clock.advance(1)
            hammer()
        }
        #expect(f.get(path, headers: victim).status == 200, "10 s on: its interval passed")
        f.clock.advance(2)
        hammer()
        let inside = f.get(path, headers: victim)
        #expect(inside.status == 429 && inside.header("X-Throttle-Scope") == "device")
        #expect(f.post("/v1/apps/demo/versions/2.3/patches/2/revoke", token: f.publisherToken).status == 200)
        hammer()
        #expect(f.get(path, headers: victim).status == 200, "the revoke's check is still the device's")
        #expect(f.get(path, headers: victim).status == 429)
    }

    @Test("clients without the header keep today's rules: metered by their ID, lifted by a revoke; without an ID, only the per-IP bucket")
    func withoutTheHeader() throws {
        let f = try ServiceFixture(minInterval: 3600, ipRate: 5)
        #expect(f.publish("one()").status == 201)
        let path = "/v1/apps/demo/metadata/timestamp.json"
        // From addresses of their own: each address's bucket holds 5.
        #expect(f.get(path, headers: ["X-Device-ID": "tuf-1"], from: "10.0.0.8").status == 200)
        #expect(f.get(path, headers: ["X-Device-ID": "tuf-1"], from: "10.0.0.8").status == 429)
        #expect(f.post("/v1/apps/demo/versions/2.3/patches/1/revoke", token: f.publisherToken, query: ["confirm": "true"]).status == 200)
        #expect(f.get(path, headers: ["X-Device-ID": "tuf-1"], from: "10.0.0.8").status == 200)
        let anonymous = (0..<6).map { _ in f.get(path, from: "10.0.0.9").status }
        #expect(anonymous == [200, 200, 200, 200, 200, 429], "\(anonymous)")
    }

    @Test("X-Device-Secret is checked wherever X-Device-ID is on the check path: a wrong length or alphabet, or two lines, is 400 naming the rule")
    func headerValidation() throws {
        let f = try ServiceFixture(minInterval: 3600)
        #expect(f.publish("one()").status == 201)
        let paths = ["/v1/apps/demo/versions/2.3/patch", "/v1/apps/demo/metadata/timestamp.json", "/v1/apps/demo/metadata/1.root.json"]
        let malformed = [String(repeating: "a", count: 31), String(repeating: "a", count: 129), String(repeating: "a", count: 31) + "=",
                         String(repeating: "a", count: 31) + ".", String(repeating: "a", count: 31) + "é", ""]
        for path in paths {
            for secret in malformed {
                let answer = f.get(path, headers: ["X-Device-ID": "d", "X-Device-Secret": secret])
                #expect(answer.status == 400, "\(path) \(secret)")
                #expect(answer.bodyString.contains("X-Device-Secret must be 32 to 128 characters"), "\(answer.bodyString)")
            }
            let twice = f.service.respond(to: HTTPRequest(method: "GET", path: path, fields: [
                ("X-Device-ID", "d2"), ("X-Device-Secret", Self.victim.rawValue), ("x-device-secret", Self.victim.rawValue),
            ]))
            #expect(twice.status == 400 && twice.bodyString.contains("X-Device-Secret must be sent once"), "\(path)")
        }
        for secret in [String(repeating: "A", count: 32), String(repeating: "z9-_", count: 32), Self.victim.rawValue] {
            #expect(f.get(paths[0], headers: ["X-Device-ID": "ok-\(secret.count)-\(secret.prefix(1))", "X-Device-Secret": secret]).status == 200)
        }
        #expect(f.get(paths[1], headers: ["X-Device-Secret": Self.victim.rawValue]).status == 200,
                "without X-Device-ID there is no slot: it changes nothing")
    }

    @Test("the secret changes only the slot: rollout buckets and allow-lists stay on the device ID")
    func rolloutStaysOnTheID() throws {
        let f = try ServiceFixture(minInterval: 0)
        #expect(f.publish("one()", rollout: 50).status == 201)
        for i in 0..<20 {
            let device = "phone-\(i)"
            let plain = f.get("/v1/apps/demo/versions/2.3/patch", headers: ["X-Device-ID": device]).status
            let secret = DeviceSecret.generate().rawValue
            #expect(f.get("/v1/apps/demo/versions/2.3/patch", headers: ["X-Device-ID": device, "X-Device-Secret": secret]).status == plain)
        }
    }

    @Test("the grammar: 32 to 128 of A-Z a-z 0-9 - _; generated secrets are 64 lowercase hex digits, each new")
    func grammar() throws {
        #expect(throws: ValidationError.self) { try DeviceSecret(String(repeating: "x", count: 31)) }
        #expect(throws: ValidationError.self) { try DeviceSecret(String(repeating: "x", count: 129)) }
        #expect(throws: ValidationError.self) { try DeviceSecret(String(repeating: "x", count: 40) + " ") }
        #expect(try DeviceSecret(String(repeating: "x", count: 128)).rawValue.count == 128)
        let made = (0..<100).map { _ in DeviceSecret.generate().rawValue }
        #expect(Set(made).count == 100)
        #expect(made.allSatisfy { $0.utf8.count == 64 && $0.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) } })
    }
}
