import Foundation
import HTTPTransport
import Locking
import PatchCore
import Synchronization

/// The minimum refetch interval per device. Each device is one 64-bit key (a keyed hash of
/// app, device ID and the device's secret when it sends one, so IDs are not kept and an
/// attacker cannot aim collisions) mapped to the second it may check again. Entries expire
/// after the interval; memory is bounded by `capacity` (about 30 bytes an entry: one million
/// devices take ~30 MB).
///
/// The secret (`X-Device-Secret`, `DeviceSecret`) is what makes a device's slot its own: the
/// ID alone is known to others, and a request naming it without the secret lands in another
/// slot, so it spends neither the device's interval nor the one check a lift or a push grants
/// it (issue 43, item 4). Nothing is stored to bind a secret to an ID: a made-up pair costs
/// one entry, as a made-up ID always did.
public final class DeviceThrottle: Sendable {
    public enum Decision: Equatable, Sendable {
        case allowed
        case throttled(retryAfter: Int)
    }

    private static let shardCount = 64

    /// One shard of the table and what decides when it is next swept of expired entries.
    private struct Shard {
        var entries: [UInt64: UInt32] = [:]
        /// Sweep when the shard reaches this size (doubling: amortised O(1) per check)…
        var sweepAt: Int
        /// …but not before the earliest expiry among its entries: until then a sweep would
        /// drop nothing. Without this, a shard full of live entries was swept on every
        /// check of a new device (an O(shard) copy each), so filling the table with made-up
        /// device IDs slowed every new device's check to a crawl.
        var noSweepBefore: UInt32 = 0
    }

    private let shards: [Locked<Shard>]
    /// When a change last took code away from devices ("app|appVersion|channel", and "app|*"
    /// for checks that do not say their version): checks recorded at or before it do not
    /// count against the interval (`lift`). One entry per served version and channel, so
    /// bounded by what publishers created, never by what devices send.
    private let lifts = Locked<[String: UInt32]>([:])
    /// When this server began serving each of an app's recent timestamp versions (its clock):
    /// a push-triggered check (`X-Push-Timestamp: N`) whose last check predates the first
    /// version at least N passes its interval once. A few versions per app, bounded by what
    /// publishers did, never by what devices send.
    private let timestamps = Locked<[String: [(version: Int64, since: UInt32)]]>([:])
    static let keptTimestamps = 16
    private let perShard: Int
    /// Sweeps done (tests check that a full table is not swept on every check).
    let sweeps = AtomicCounter()
    private let hash = KeyedHash()
    private let clock: @Sendable () -> UInt32
    public let capacity: Int

    /// - Parameter clock: seconds on a monotonic scale (tests pass their own).
    public init(capacity: Int = 4_000_000, clock: @escaping @Sendable () -> UInt32 = DeviceThrottle.monotonicSeconds) {
        self.capacity = capacity
        self.clock = clock
        let perShard = max(1, capacity / DeviceThrottle.shardCount)
        self.perShard = perShard
        shards = (0..<DeviceThrottle.shardCount).map { _ in Locked(Shard(sweepAt: min(perShard, 1024))) }
    }

    public static func monotonicSeconds() -> UInt32 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt32(truncatingIfNeeded: now.tv_sec)
    }

    /// `secret` nil (a client that sends none: python-tuf, older apps) is a slot of its own,
    /// never the slot of any secret (Hasher marks an absent optional apart from every value).
    private func key(app: String, device: String, secret: DeviceSecret?) -> UInt64 { hash(app, device, secret?.rawValue) }

    /// A revoke, halt or rollback of `appVersion`/`channel` of `app` happened now: each
    /// device of it whose last check was at or before now gets its next check answered, so
    /// the kill switch reaches a device that asks (a forced sync, a push) within seconds,
    /// not after the rest of its interval. It is one more check per device per change: the
    /// check it lets through is recorded as usual.
    public func lift(app: String, appVersion: String, channel: String) {
        let now = clock()
        lifts.withLock { lifts in
            lifts["\(app)|\(appVersion)|\(channel)"] = now
            // A check that does not name its version (an older client, python-tuf) may be
            // a device of this one.
            lifts["\(app)|*"] = now
        }
    }

    /// `app` now serves timestamp `version` (a catalog build): remembered with the moment it
    /// was first served, the last `keptTimestamps` versions.
    public func noteTimestamp(app: String, version: Int64) {
        let now = clock()
        timestamps.withLock { all in
            var versions = all[app, default: []]
            guard !versions.contains(where: { $0.version >= version }) else { return }
            versions.append((version, now))
            all[app] = Array(versions.suffix(DeviceThrottle.keptTimestamps))
        }
    }

    /// When the first served timestamp version at least `announced` began being served; nil
    /// when none is (a push announcing what this server does not serve yet, or a forgery).
    func servedSince(app: String, announced: Int64) -> UInt32? {
        timestamps.withLock { $0[app]?.first { $0.version >= announced }?.since }
    }

    /// Records a check by `device` (with its `secret`, when it sent one) and says whether it
    /// was allowed. A refused check does not extend the wait: the device may retry exactly
    /// when Retry-After says. `scope` (app version and channel, when the request says them)
    /// picks the lift that applies. `announced`: the timestamp version a push named
    /// (`X-Push-Timestamp`), lifting the interval as a revoke does when the device's last
    /// check predates it.
    public func check(app: String, device: String, secret: DeviceSecret? = nil, interval: Int,
                      scope: (appVersion: String, channel: String)? = nil, announced: Int64? = nil) -> Decision {
        guard interval > 0 else { return .allowed }
        let key = key(app: app, device: device, secret: secret)
        let now = clock()
        let perShard = self.perShard
        return shards[Int(key % UInt64(DeviceThrottle.shardCount))].withLock { shard in
            if let until = shard.entries[key], until > now {
                // The last check was `until - interval`; at or before the lift it was made
                // against what the change took away. (The same second counts: a lift is
                // second-grained, and a check in it may have seen the state before.) Looked
                // up only here, for a device inside its interval: an allowed check, the
                // common case, never touches the lifts.
                let last = until &- UInt32(clamping: interval)
                let liftKey = scope.map { "\(app)|\($0.appVersion)|\($0.channel)" } ?? "\(app)|*"
                let pushed = announced.flatMap { servedSince(app: app, announced: $0) }
                guard let lifted = [lifts.withLock({ $0[liftKey] }), pushed].compactMap({ $0 }).max(), last <= lifted else {
                    return .throttled(retryAfter: Int(until - now))
                }
                // Recorded one second on, so this check reads as after the lift (a second
                // check in the lift's own second is not let through again).
                shard.entries[key] = now &+ UInt32(clamping: interval) &+ 1
                return .allowed
            }
            if shard.entries.count >= shard.sweepAt, now >= shard.noSweepBefore {
                var earliest = UInt32.max
                shard.entries = shard.entries.filter { _, until in
                    guard until > now else { return false }
                    earliest = min(earliest, until)
                    return true
                }
                shard.sweepAt = min(perShard, max(1024, shard.entries.count * 2))
                shard.noSweepBefore = earliest == .max ? now : earliest
                sweeps.add(1)
            }
            if shard.entries.count >= perShard {
                // Full of live entries: admit without tracking rather than evict someone
                // who is legitimately waiting. Capacity is sized so this does not happen.
                return .allowed
            }
            let until = now &+ UInt32(clamping: interval)
            shard.entries[key] = until
            // Apps have different intervals: a new entry may expire before the others.
            shard.noSweepBefore = min(shard.noSweepBefore, until)
            return .allowed
        }
    }

    /// Devices currently tracked (including expired entries not yet swept).
    public var count: Int { shards.reduce(0) { total, shard in total + shard.withLock { $0.entries.count } } }
}
