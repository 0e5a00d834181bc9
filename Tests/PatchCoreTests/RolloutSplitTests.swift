import PatchCore
import Testing

@Suite("Rollout split: what the devices of a version are served")
struct RolloutSplitTests {
    @Test("a newer patch at 25 % over one at 100 %: 25 % and 75 %")
    func overFull() {
        #expect(Rollout.split([(2, 100), (3, 25)]) == [.init(patch: 3, basisPoints: 2500), .init(patch: 2, basisPoints: 7500)])
        #expect(Rollout.split([(2, 100), (3, 25)]).map(\.text) == ["patch 3 → 25 %", "patch 2 → 75 %"])
    }

    @Test("independent samples: 25 % over 50 % leaves 37.5 % with none; no patches is none for all")
    func partial() {
        #expect(Rollout.split([(1, 50), (2, 25)]) == [.init(patch: 2, basisPoints: 2500), .init(patch: 1, basisPoints: 3750),
                                                      .init(patch: nil, basisPoints: 3750)])
        #expect(Rollout.split([(1, 50), (2, 25)]).map(\.text) == ["patch 2 → 25 %", "patch 1 → 37.5 %", "none → 37.5 %"])
        #expect(Rollout.split([]) == [.init(patch: nil, basisPoints: 10_000)])
    }

    @Test("a patch at 0 % or behind a newer 100 % reaches no device and is left out")
    func unreached() {
        #expect(Rollout.split([(1, 100), (2, 100), (3, 0)]) == [.init(patch: 2, basisPoints: 10_000)])
        let exact = Rollout.exactShares([(1, 100), (2, 100), (3, 0)])
        #expect(exact.map(\.patch) == [3, 2, 1] && exact.map(\.share) == [0, 1, 0])
    }

    @Test("rounded shares always add up to every device", arguments: [[33, 33, 33], [1, 7, 13, 99], [50, 50, 50, 50, 50, 50, 50]])
    func sumsToAll(_ percents: [Int]) {
        let split = Rollout.split(percents.enumerated().map { (patch: $0.offset + 1, percent: $0.element) })
        #expect(split.reduce(0) { $0 + $1.basisPoints } == 10_000)
    }

    @Test("the split is what selecting the newest patch that includes each device gives 10 000 devices")
    func matchesSelection() {
        let listed = [(patch: 1, percent: 100), (patch: 2, percent: 40), (patch: 3, percent: 10)]
        var counts: [Int: Int] = [:]
        for device in RolloutTests.devices {
            // The rule of AppCatalog.patch(for:deviceID:) and PatchClient: the newest listed patch that includes the device.
            let picked = listed.sorted { $0.patch > $1.patch }
                .first { Rollout.includes(percent: $0.percent, app: "demo", appVersion: "2.3", patch: $0.patch, deviceID: device) }
            counts[picked?.patch ?? 0, default: 0] += 1
        }
        for share in Rollout.split(listed) {
            let seen = counts[share.patch ?? 0, default: 0]
            // 10 000 devices: within ±2.5 points of the computed share (well over four standard deviations).
            #expect(abs(seen - share.basisPoints) <= 250, "patch \(share.patch ?? 0): \(seen) devices, share \(share.basisPoints)")
        }
    }
}
