import Foundation
import Testing
import Postgres

/// The cluster `make test` starts (scripts/pg-test-cluster.sh) names itself in
/// HOTPATCH_TEST_DATABASE; without it these suites are skipped, never passed.
enum TestDatabase {
    static let url = ProcessInfo.processInfo.environment["HOTPATCH_TEST_DATABASE"].flatMap { $0.isEmpty ? nil : $0 }
    static let isAvailable = url != nil
    static let skipReason: Comment =
        "HOTPATCH_TEST_DATABASE is unset: run `make test`, or `scripts/pg-test-cluster.sh run swift test --filter PostgresTests`"

    static func connect() throws -> PostgresConnection {
        try PostgresConnection(try #require(url))
    }

    /// A name no other test (or earlier run) uses: the suites share one database and run in
    /// parallel.
    static func uniqueName(_ prefix: String) -> String {
        "\(prefix)_\(UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased())"
    }

    /// "0.068 ms": printed figures, never assertions.
    static func milliseconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        return String(format: "%.3f ms", Double(seconds) * 1000 + Double(attoseconds) / 1e15)
    }
}
