import PatchCore
import Testing

/// The one rule PatchClient and the simple check apply (docs/PROTOCOL.md section 5).
@Suite("Selection: which listed patch a device runs")
struct SelectionTests {
    static let device = Selection.Device(app: "demo", appVersion: "2.3", deviceID: "device-0001", osVersion: "17.0")

    static func listed(_ entries: [(Int, Int)], conditions: DeliveryConditions? = nil) -> [Selection.Candidate] {
        entries.map { Selection.Candidate(number: $0.0, rollout: $0.1, conditions: conditions, digest: "sha-\($0.0)") }
    }

    static func running(_ number: Int, digest: String? = nil) -> Selection.Running {
        Selection.Running(number: number, digest: digest ?? "sha-\(number)")
    }

    @Test("offered: the highest number whose rollout includes the device; rollout 0 is offered to nobody")
    func offered() {
        #expect(Selection.choose(Self.listed([(1, 100), (2, 0)]), for: Self.device, running: nil) == .install(1))
        #expect(Selection.choose(Self.listed([(1, 0)]), for: Self.device, running: nil) == .none)
        #expect(Selection.choose(Self.listed([(1, 100), (2, 100)]), for: Self.device, running: Self.running(1)) == .install(2))
        let anonymous = Selection.Device(app: "demo", appVersion: "2.3", deviceID: nil, osVersion: nil)
        #expect(Selection.choose(Self.listed([(1, 100), (2, 99)]), for: anonymous, running: nil) == .install(1), "no ID: only 100 %")
    }

    @Test("kept: the running patch while listed with the same digest, at rollout 0 and over a lower offered number; not once unlisted or changed")
    func kept() {
        #expect(Selection.choose(Self.listed([(1, 100), (2, 0)]), for: Self.device, running: Self.running(2)) == .keep(2))
        #expect(Selection.choose(Self.listed([(1, 0)]), for: Self.device, running: Self.running(1)) == .keep(1))
        #expect(Selection.choose(Self.listed([(1, 100)]), for: Self.device, running: Self.running(2)) == .install(1), "revoked: unlisted")
        #expect(Selection.choose(Self.listed([(1, 0)]), for: Self.device, running: Self.running(1, digest: "other")) == .none)
    }

    @Test("delivery conditions: a patch they exclude is neither offered nor kept")
    func conditions() throws {
        let range = try DeliveryConditions(devices: nil, os: try .init(min: try OSVersion("16"), max: try OSVersion("17.4")))
        let listed = Self.listed([(1, 100)]) + Self.listed([(2, 100)], conditions: range)
        #expect(Selection.choose(listed, for: Self.device, running: Self.running(2)) == .keep(2))
        let updated = Selection.Device(app: "demo", appVersion: "2.3", deviceID: "device-0001", osVersion: "18.0")
        #expect(Selection.choose(listed, for: updated, running: Self.running(2)) == .install(1))
        let loader = Selection.Device(app: "demo", appVersion: "2.3", deviceID: "device-0001", osVersion: "17.0", conditional: false)
        #expect(Selection.choose(listed, for: loader, running: Self.running(2)) == .install(1))
    }

    @Test("rolled back on the device: that number and lower are not offered; the restored patch is kept while the one rolled back from is listed")
    func rolledBack() {
        let listed = Self.listed([(2, 0), (3, 100)])
        #expect(Selection.choose(listed, for: Self.device, running: Self.running(1), rolledBackThrough: 3) == .keep(1))
        #expect(Selection.choose(Self.listed([(2, 100)]), for: Self.device, running: Self.running(1), rolledBackThrough: 3) == .none)
        #expect(Selection.choose(listed + Self.listed([(4, 100)]), for: Self.device, running: Self.running(1), rolledBackThrough: 3) == .install(4))
    }
}
