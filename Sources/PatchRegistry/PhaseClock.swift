import Foundation

/// TEMPORARY (issue 23 item 4 profiling; not committed): wall time per labelled phase.
public enum PhaseClock {
    nonisolated(unsafe) static let enabled = ProcessInfo.processInfo.environment["HOTPATCH_PHASES"] != nil
    nonisolated(unsafe) static var totals: [String: (Double, Int)] = [:]
    @inline(__always)
    static func measure<T, E: Error>(_ label: @autoclosure () -> String, _ body: () throws(E) -> T) throws(E) -> T {
        guard enabled else { return try body() }
        var t0 = timespec(); clock_gettime(CLOCK_MONOTONIC, &t0)
        defer {
            var t1 = timespec(); clock_gettime(CLOCK_MONOTONIC, &t1)
            let d = Double(t1.tv_sec - t0.tv_sec) + Double(t1.tv_nsec - t0.tv_nsec) / 1e9
            let l = label()
            let (s, n) = totals[l] ?? (0, 0)
            totals[l] = (s + d, n + 1)
        }
        return try body()
    }
    public static func reset() { totals = [:] }
    public static func dump(per count: Int) {
        guard enabled else { return }
        for (l, (s, n)) in totals.sorted(by: { $0.value.0 > $1.value.0 }) {
            FileHandle.standardError.write(Data(String(format: "%9.1f µs/publish  %6.2f calls/publish  %@\n", s * 1e6 / Double(count), Double(n) / Double(count), l).utf8))
        }
    }
    static func sqlLabel(_ sql: String) -> String {
        "sql " + sql.replacingOccurrences(of: "\n", with: " ").split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ").prefix(70)
    }
}
