import Foundation
import HTTPTransport
import Locking
import PatchRegistry

/// Which app versions devices check for (issue 44), counted on the check path in memory and
/// added to the registry once a minute by the upkeep pass (`PatchService.flushAskedVersions`).
///
/// A check costs one lock of its app's shard (16 shards by app name), one dictionary lookup
/// and an increment: no allocation once a version is known, no I/O. What a device sends is
/// any string the version grammar admits, so each app's table is bounded, and shaped so that
/// made-up versions cannot push out the ones real fleets ask for:
/// - `established`: the versions the registry has on record (the `establishedLimit` most
///   asked in the last 30 days, and every version with an active patch), loaded at each flush.
///   They are counted exactly and never evicted: no number of other versions removes them.
/// - `newcomers`: every other version, in a space-saving table of `newcomerCapacity`
///   entries (Metwally et al.): a version not in a full table replaces the least counted,
///   taking over its count as its possible error. Any version asked more than 1/capacity of
///   the newcomers' checks in a minute is kept; what a flush adds is each entry's guaranteed
///   count (count − error), so a version that came in on an evicted one's count adds only the
///   checks it had itself. A new version that reaches the registry is established from the
///   next flush on.
/// docs/SECURITY.md "Asked-for versions" says how that holds against a flood.
public final class AskedVersions: Sendable {
    public static let establishedLimit = 256
    public static let newcomerCapacity = 64
    static let shardCount = 16

    struct Tally: Sendable {
        var established: [String: Int] = [:]
        var newcomers: [String: (count: Int, error: Int)] = [:]

        mutating func note(_ version: String) {
            if let count = established[version] {
                established[version] = count + 1
            } else if let entry = newcomers[version] {
                newcomers[version] = (entry.count + 1, entry.error)
            } else if newcomers.count < AskedVersions.newcomerCapacity {
                newcomers[version] = (1, 0)
            } else if let least = newcomers.min(by: { $0.value.count < $1.value.count }) {
                // Bounded work: one pass over a fixed-size table, only when a new version
                // meets a full one.
                newcomers[least.key] = nil
                newcomers[version] = (least.value.count + 1, least.value.count)
            }
        }

        /// What a flush adds: every established count, every newcomer's guaranteed count.
        var counts: [String: Int] {
            var out = established.filter { $0.value > 0 }
            for (version, entry) in newcomers where entry.count > entry.error { out[version] = entry.count - entry.error }
            return out
        }
    }

    private let shards: [Locked<[String: Tally]>] = (0..<AskedVersions.shardCount).map { _ in Locked([:]) }
    /// 1 once a flush has loaded every app's established versions.
    private let loadedEveryApp = AtomicCounter()
    /// The UTC day of the last prune of days past the window (empty: none yet).
    private let prunedDay = Locked("")

    public init() {}

    /// True for the first flush only: it loads the established versions of every app.
    func firstFlush() -> Bool { loadedEveryApp.compareExchange(expected: 0, desired: 1) }

    /// True once per UTC day (the first flush of each): prune then.
    func pruneDue(today: String) -> Bool {
        prunedDay.withLock { day in
            defer { day = today }
            return day != today
        }
    }

    private func shard(_ app: String) -> Locked<[String: Tally]> {
        var hasher = Hasher()
        hasher.combine(app)
        return shards[Int(UInt(bitPattern: hasher.finalize()) % UInt(AskedVersions.shardCount))]
    }

    /// One check of `app` for `version` (a version the grammar admits; the app one the
    /// catalog serves, so the apps are bounded by the registry's).
    public func note(app: String, version: String) {
        shard(app).withLock { $0[app, default: Tally()].note(version) }
    }

    /// Takes every app's counts, leaving each table empty but its established versions.
    func take() -> [String: [String: Int]] {
        var out: [String: [String: Int]] = [:]
        for shard in shards {
            shard.withLock { tallies in
                for (app, tally) in tallies {
                    let counts = tally.counts
                    if !counts.isEmpty { out[app] = counts }
                    tallies[app] = Tally(established: tally.established.mapValues { _ in 0 })
                }
            }
        }
        return out
    }

    /// The versions of `app` counted exactly from now on (what the registry has on record).
    func establish(app: String, versions: Set<String>) {
        shard(app).withLock { tallies in
            var tally = tallies[app] ?? Tally()
            var established: [String: Int] = [:]
            for version in versions { established[version] = tally.established[version] ?? 0 }
            // A newcomer now on record keeps the checks it has not flushed yet.
            for version in versions {
                if let entry = tally.newcomers.removeValue(forKey: version), entry.count > entry.error {
                    established[version, default: 0] += entry.count - entry.error
                }
            }
            tally.established = established
            tallies[app] = tally
        }
    }

    /// How many versions `app` counts exactly and as newcomers now (tests).
    func entries(app: String) -> (established: Int, newcomers: Int) {
        shard(app).withLock { tallies in (tallies[app]?.established.count ?? 0, tallies[app]?.newcomers.count ?? 0) }
    }

    /// The versions `app` has in its table now, established or not: for tests.
    func tracked(app: String) -> [String: Int] {
        shard(app).withLock { tallies in
            guard let tally = tallies[app] else { return [:] }
            var out = tally.established
            for (version, entry) in tally.newcomers { out[version] = entry.count }
            return out
        }
    }
}
