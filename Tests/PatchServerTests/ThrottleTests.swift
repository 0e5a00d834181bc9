import Foundation
import Testing
@testable import HTTPTransport
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

    @Test("a table full of live devices is not swept on every new device's check (that made each one O(shard))")
    func fullTableIsNotSweptPerCheck() {
        let clock = FakeClock()
        let throttle = DeviceThrottle(capacity: 64 * 2048, clock: { clock.seconds })
        for i in 0..<400_000 { _ = throttle.check(app: "a", device: "flood-\(i)", interval: 3600) }
        #expect(throttle.count <= 64 * 2048)
        // Growth sweeps only: about two per shard. Before, every check past capacity swept.
        #expect(throttle.sweeps.load < 1_000, "\(throttle.sweeps.load) sweeps for 400,000 checks")
        // Once the flood's entries expire, sweeping resumes and new devices are tracked again.
        clock.advance(3601)
        #expect(throttle.check(app: "a", device: "later", interval: 3600) == .allowed)
        #expect(throttle.check(app: "a", device: "later", interval: 3600) == .throttled(retryAfter: 3600))
    }

    @Test("a small table still sweeps expired devices (its shards never reach the usual first sweep size)")
    func smallTableSweeps() {
        let clock = FakeClock()
        let throttle = DeviceThrottle(capacity: 64 * 100, clock: { clock.seconds })
        for i in 0..<20_000 { _ = throttle.check(app: "a", device: "d\(i)", interval: 60) }
        clock.advance(61)
        for i in 0..<64 * 50 { _ = throttle.check(app: "a", device: "e\(i)", interval: 60) }
        #expect(throttle.check(app: "a", device: "fresh", interval: 60) == .allowed)
        #expect(throttle.check(app: "a", device: "fresh", interval: 60) == .throttled(retryAfter: 60), "tracked again: expired entries were dropped")
    }

    @Test("a short interval in one app is swept on time next to long ones in another")
    func mixedIntervals() {
        let clock = FakeClock()
        let throttle = DeviceThrottle(capacity: 64 * 2048, clock: { clock.seconds })
        // ~1,200 hour-long entries a shard (swept once on the way, at 1,024, so the shard
        // then knows nothing expires for an hour), then ~600 of ten seconds.
        for i in 0..<64 * 1200 { _ = throttle.check(app: "slow", device: "s\(i)", interval: 3600) }
        for i in 0..<64 * 600 { _ = throttle.check(app: "fast", device: "f\(i)", interval: 10) }
        clock.advance(11)
        // ~400 new devices a shard only fit if the expired ten-second entries are dropped
        // when the shard fills, not an hour later.
        let fresh = (0..<64 * 400).map { "g\($0)" }
        for device in fresh { #expect(throttle.check(app: "fast", device: device, interval: 10) == .allowed) }
        let tracked = fresh.filter { throttle.check(app: "fast", device: $0, interval: 10) == .throttled(retryAfter: 10) }.count
        #expect(tracked == fresh.count)
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
