import Foundation

/// The 95 % Wilson score interval of a proportion (successes of trials). Unlike the plain
/// p ± z·√(p(1−p)/n), it stays inside [0, 1] and is honest for small n and for p near 0,
/// which is where a rollback rate lives: 1 rollback of 10 installs is not "10 %" but
/// "somewhere from 1.8 % to 40 %", and a guard must not act on the 10 %.
public struct WilsonInterval: Sendable, Equatable {
    /// z for a two-sided 95 % interval.
    public static let z95 = 1.959963984540054

    public let successes: Int
    public let trials: Int
    public let lower: Double
    public let upper: Double

    /// `successes` is clamped to `0...trials` (forged reports can claim more rollbacks than
    /// installs); no trials gives the uninformative [0, 1].
    public init(successes: Int, trials: Int, z: Double = WilsonInterval.z95) {
        let n = max(trials, 0)
        let k = min(max(successes, 0), n)
        self.successes = k
        self.trials = n
        guard n > 0 else { lower = 0; upper = 1; return }
        let nd = Double(n), p = Double(k) / nd, z2 = z * z
        let centre = p + z2 / (2 * nd)
        let spread = z * (p * (1 - p) / nd + z2 / (4 * nd * nd)).squareRoot()
        let scale = 1 + z2 / nd
        lower = max(0, (centre - spread) / scale)
        upper = min(1, (centre + spread) / scale)
    }

    /// A proportion in parts per million, rounded: how JSON (integers only) carries it.
    public static func ppm(_ value: Double) -> Int { Int((value * 1_000_000).rounded()) }

    /// "2.5%", "0.05%": a rate in ppm as people read it.
    public static func percentText(ppm: Int) -> String {
        var text = String(format: "%.4f", Double(ppm) / 10_000)
        while text.hasSuffix("0") { text.removeLast() }
        if text.hasSuffix(".") { text.removeLast() }
        return text + "%"
    }
}
