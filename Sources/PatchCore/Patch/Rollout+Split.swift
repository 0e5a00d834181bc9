extension Rollout {
    /// A share of one app version's devices and the patch they are served (`nil`: none).
    public struct Share: Sendable, Equatable {
        public let patch: Int?
        /// In hundredths of a percent (10 000 is every device); the shares sum to 10 000.
        public let basisPoints: Int

        public init(patch: Int?, basisPoints: Int) {
            self.patch = patch
            self.basisPoints = basisPoints
        }

        /// "patch 3 → 25 %", "none → 37.5 %".
        public var text: String {
            let whole = basisPoints / 100, fraction = basisPoints % 100
            let percent = fraction == 0 ? "\(whole)" : fraction % 10 == 0 ? "\(whole).\(fraction / 10)" : "\(whole).\(fraction < 10 ? "0" : "")\(fraction)"
            return "\(patch.map { "patch \($0)" } ?? "none") → \(percent) %"
        }
    }

    /// What the devices of one app version are served, given its listed patches and their
    /// rollout percentages: the share of devices each patch reaches under the rule server
    /// and client apply (`Selection.choose`) for a device checking afresh: the newest listed
    /// patch whose rollout `includes` the device (a device keeps a listed patch it runs). Each patch hashes its own number into the
    /// bucket, so the samples are independent: patch k reaches r_k × Π(1 − r_j) over the
    /// newer patches j. Patches that reach no device are left out; so is "none" when every
    /// device gets a patch. The exact shares, one per listed patch in order, are `exact`.
    public static func split(_ listed: [(patch: Int, percent: Int)]) -> [Share] {
        let exact = exactShares(listed)
        var parts = exact.filter { $0.share > 0 }.map { (patch: Optional($0.patch), share: $0.share) }
        let none = 1 - exact.reduce(0) { $0 + $1.share }
        if none > 1e-12 { parts.append((nil, none)) }
        // Largest remainder, so the rounded shares still add up to every device.
        let scaled = parts.map { $0.share * 10_000 }
        var points = scaled.map { Int($0.rounded(.down)) }
        let order = scaled.indices.sorted { scaled[$0] - Double(points[$0]) > scaled[$1] - Double(points[$1]) }
        for index in order.prefix(max(0, 10_000 - points.reduce(0, +))) { points[index] += 1 }
        return zip(parts, points).map { Share(patch: $0.patch, basisPoints: $1) }
    }

    /// The fraction of devices (0...1) each listed patch is served, newest first; 0 exactly
    /// when its rollout is 0 or a newer patch is at 100 %.
    public static func exactShares(_ listed: [(patch: Int, percent: Int)]) -> [(patch: Int, share: Double)] {
        var remaining = 1.0
        return listed.sorted { $0.patch > $1.patch }.map { entry in
            let rate = Double(min(100, max(0, entry.percent))) / 100
            let share = remaining * rate
            remaining *= 1 - rate
            return (entry.patch, share)
        }
    }
}
