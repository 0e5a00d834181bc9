import Foundation
import Synchronization

/// The minimum refetch interval per device. Each device is one 64-bit key (a keyed hash of
/// app and device ID, so IDs are not kept and an attacker cannot aim collisions) mapped to
/// the second it may check again. Entries expire after the interval; memory is bounded by
/// `capacity` (about 30 bytes an entry: one million devices take ~30 MB).
public final class DeviceThrottle: Sendable {
    public enum Decision: Equatable, Sendable {
        case allowed
        case throttled(retryAfter: Int)
    }

    private static let shardCount = 64
    private let shards: [Locked<[UInt64: UInt32]>]
    /// Per shard: the size at which expired entries are next swept out.
    private let sweepThresholds: [AtomicCounter]
    private let seed: (UInt64, UInt64)
    private let clock: @Sendable () -> UInt32
    public let capacity: Int

    /// - Parameter clock: seconds on a monotonic scale (tests pass their own).
    public init(capacity: Int = 4_000_000, clock: @escaping @Sendable () -> UInt32 = DeviceThrottle.monotonicSeconds) {
        self.capacity = capacity
        self.clock = clock
        shards = (0..<DeviceThrottle.shardCount).map { _ in Locked([:]) }
        sweepThresholds = (0..<DeviceThrottle.shardCount).map { _ in AtomicCounter(1024) }
        var generator = SystemRandomNumberGenerator()
        seed = (generator.next(), generator.next())
    }

    public static func monotonicSeconds() -> UInt32 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt32(truncatingIfNeeded: now.tv_sec)
    }

    private func key(app: String, device: String) -> UInt64 {
        var hasher = Hasher()
        hasher.combine(seed.0)
        hasher.combine(app)
        hasher.combine(device)
        hasher.combine(seed.1)
        return UInt64(bitPattern: Int64(hasher.finalize()))
    }

    /// Records a check by `device` and says whether it was allowed. A refused check does
    /// not extend the wait: the device may retry exactly when Retry-After says.
    public func check(app: String, device: String, interval: Int) -> Decision {
        guard interval > 0 else { return .allowed }
        let key = key(app: app, device: device)
        let now = clock()
        let index = Int(key % UInt64(DeviceThrottle.shardCount))
        let perShard = max(1, capacity / DeviceThrottle.shardCount)
        return shards[index].withLock { entries in
            if let until = entries[key], until > now {
                return .throttled(retryAfter: Int(until - now))
            }
            if entries.count >= sweepThresholds[index].load {
                entries = entries.filter { $0.value > now }
                // Sweep again when the live set has doubled: amortised O(1) per check.
                sweepThresholds[index].store(max(1024, min(perShard, entries.count * 2)))
            }
            if entries.count >= perShard {
                // Full of live entries: admit without tracking rather than evict someone
                // who is legitimately waiting. Capacity is sized so this does not happen.
                return .allowed
            }
            entries[key] = now &+ UInt32(clamping: interval)
            return .allowed
        }
    }

    /// Devices currently tracked (including expired entries not yet swept).
    public var count: Int { shards.reduce(0) { total, shard in total + shard.withLock { $0.count } } }
}
