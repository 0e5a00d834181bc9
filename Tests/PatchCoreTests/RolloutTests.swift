import PatchCore
import Testing

struct RolloutVectors: Decodable {
    struct Vector: Decodable, Sendable, CustomTestStringConvertible {
        let patch: Int
        let deviceID: String
        let bucket: Int
        var testDescription: String { "patch \(patch), device \"\(deviceID.debugSanitized)\"" }
    }

    let app: String
    let appVersion: String
    let vectors: [Vector]

    static func load() throws -> RolloutVectors { try Fixture.load("rollout") }
}

@Suite("Staged rollout")
struct RolloutTests {
    static let devices = (0..<10_000).map { "device-\($0)" }

    @Test("puts each device in the bucket python computes", arguments: try RolloutVectors.load().vectors)
    func matchesPython(_ vector: RolloutVectors.Vector) throws {
        let fixture = try RolloutVectors.load()
        let bucket = Rollout.bucket(app: fixture.app, appVersion: fixture.appVersion, patch: vector.patch, deviceID: vector.deviceID)
        #expect(bucket == vector.bucket)
        // The bucket is the boundary: in at one percent more, out at exactly the bucket.
        #expect(Rollout.includes(percent: vector.bucket + 1, app: fixture.app, appVersion: fixture.appVersion,
                                 patch: vector.patch, deviceID: vector.deviceID))
        #expect(!Rollout.includes(percent: vector.bucket, app: fixture.app, appVersion: fixture.appVersion,
                                  patch: vector.patch, deviceID: vector.deviceID))
    }

    @Test("0 percent reaches no device and 100 percent reaches every device")
    func boundaries() {
        for device in Self.devices.prefix(1_000) {
            #expect(!Rollout.includes(percent: 0, app: "demo", appVersion: "2.3", patch: 1, deviceID: device))
            #expect(Rollout.includes(percent: 100, app: "demo", appVersion: "2.3", patch: 1, deviceID: device))
        }
    }

    @Test("percentages outside 0...100 clamp instead of misbehaving", arguments: [-1, -100, Int.min, 101, 1_000, Int.max])
    func clamps(_ percent: Int) {
        let expected = percent > 0
        for device in Self.devices.prefix(100) {
            #expect(Rollout.includes(percent: percent, app: "demo", appVersion: "2.3", patch: 1, deviceID: device) == expected)
        }
    }

    @Test("buckets stay within 0..<100")
    func bucketRange() {
        for device in Self.devices.prefix(2_000) {
            #expect((0..<100).contains(Rollout.bucket(app: "demo", appVersion: "2.3", patch: 7, deviceID: device)))
        }
    }

    @Test("a 30 percent rollout reaches roughly 30 percent of devices")
    func reachesTheRequestedShare() {
        let reached = Self.devices.filter { Rollout.includes(percent: 30, app: "demo", appVersion: "2.3", patch: 1, deviceID: $0) }.count
        // Binomial(10000, 0.3) has a standard deviation of about 46; 2700...3300 is over six of them.
        #expect((2_700...3_300).contains(reached), "reached \(reached) of 10000")
    }

    @Test("raising the percentage only adds devices")
    func growsMonotonically() {
        for device in Self.devices.prefix(2_000) {
            let in30 = Rollout.includes(percent: 30, app: "demo", appVersion: "2.3", patch: 1, deviceID: device)
            let in50 = Rollout.includes(percent: 50, app: "demo", appVersion: "2.3", patch: 1, deviceID: device)
            #expect(!in30 || in50)
        }
    }

    @Test("each patch samples devices independently")
    func patchesSampleIndependently() {
        let first = Set(Self.devices.filter { Rollout.includes(percent: 50, app: "demo", appVersion: "2.3", patch: 1, deviceID: $0) })
        let second = Set(Self.devices.filter { Rollout.includes(percent: 50, app: "demo", appVersion: "2.3", patch: 2, deviceID: $0) })
        // Independent 50% samples overlap on about a quarter of all devices, not half.
        let overlap = first.intersection(second).count
        #expect((2_200...2_800).contains(overlap), "overlap \(overlap) of 10000")
    }
}
