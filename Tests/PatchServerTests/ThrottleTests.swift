import Foundation
import Testing
@testable import PatchServer

@Suite("Throttle state")
struct ThrottleTests {
    @Test("entries expire after the interval and are swept, so memory follows live devices")
    func expiry() {
        let clock = FakeClock()
        let throttle = DeviceThrottle(capacity: 1_000_000, clock: { clock.seconds })
        for i in 0..<100_000 { #expect(throttle.check(app: "a", device: "d\(i)", interval: 60) == .allowed) }
        #expect(throttle.count == 100_000)
        clock.advance(61)
        for i in 0..<100_000 { _ = throttle.check(app: "a", device: "e\(i)", interval: 60) }
        #expect(throttle.count < 200_000, "expired entries are swept as new ones arrive")
    }

    @Test("the same device ID in another app is another device")
    func perApp() {
        let throttle = DeviceThrottle(clock: { 5 })
        #expect(throttle.check(app: "a", device: "x", interval: 60) == .allowed)
        #expect(throttle.check(app: "b", device: "x", interval: 60) == .allowed)
        #expect(throttle.check(app: "a", device: "x", interval: 60) == .throttled(retryAfter: 60))
    }

    @Test("a full table admits without tracking instead of growing")
    func capacity() {
        let throttle = DeviceThrottle(capacity: 64 * 100, clock: { 5 })
        for i in 0..<20_000 { _ = throttle.check(app: "a", device: "d\(i)", interval: 60) }
        #expect(throttle.count <= 64 * 100)
    }

    @Test("one million tracked devices stay well under 200 MB of resident memory")
    func millionDevices() throws {
        let throttle = DeviceThrottle(capacity: 4_000_000, clock: { 5 })
        let before = try residentBytes()
        for i in 0..<1_000_000 { _ = throttle.check(app: "demo", device: "device-\(i)", interval: 3600) }
        let after = try residentBytes()
        #expect(throttle.count == 1_000_000)
        let grown = after - before
        #expect(grown < 100 << 20, "grew \(grown >> 20) MB for one million devices")
    }

    private func residentBytes() throws -> Int {
        let statm = try String(contentsOfFile: "/proc/self/statm", encoding: .utf8).split(separator: " ")
        return Int(statm[1])! * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}
