import Foundation
import Locking

/// A token bucket per (scope, client IP): `ratePerMinute` tokens a minute, bursting up to a
/// minute's worth. Anonymous requests (no X-Device-ID) are limited only by this, so a
/// carrier NAT with thousands of devices behind one address is not cut to one check an hour.
public final class IPRateLimiter: Sendable {
    private struct Bucket: Sendable {
        var tokens: Double
        var updated: Double
    }

    private static let shardCount = 32
    private let shards: [Locked<[UInt64: Bucket]>]
    private let hash = KeyedHash()
    private let clock: @Sendable () -> Double
    private let maxEntriesPerShard: Int

    public init(maxEntries: Int = 1_000_000, clock: @escaping @Sendable () -> Double = IPRateLimiter.monotonicTime) {
        shards = (0..<IPRateLimiter.shardCount).map { _ in Locked([:]) }
        self.clock = clock
        maxEntriesPerShard = max(64, maxEntries / IPRateLimiter.shardCount)
    }

    public static func monotonicTime() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    /// nil when allowed, else the seconds until one token is available. A rate of 0 is off.
    /// `ip` is the client's key: a parsed address (grouped, see `IPAddress.limitKey`), or
    /// any other identity a scope counts by (a token). The bucket holds `burst` tokens (a
    /// minute's worth unless given).
    public func take(scope: String, ip: some Hashable, ratePerMinute: Int, burst: Int? = nil) -> Int? {
        guard ratePerMinute > 0 else { return nil }
        return take(scope: scope, ip: ip, perSecond: Double(ratePerMinute) / 60, burst: burst ?? ratePerMinute)
    }

    /// The same bucket for a quota counted per hour (new push tokens per network): `perHour`
    /// tokens, refilled over the hour. 0 is off.
    public func take(scope: String, ip: some Hashable, perHour: Int) -> Int? {
        guard perHour > 0 else { return nil }
        return take(scope: scope, ip: ip, perSecond: Double(perHour) / 3600, burst: perHour)
    }

    private func take(scope: String, ip: some Hashable, perSecond rate: Double, burst: Int) -> Int? {
        let key = hash(scope, ip)
        let now = clock()
        let burst = Double(max(1, burst))
        return shards[Int(key % UInt64(IPRateLimiter.shardCount))].withLock { buckets in
            var bucket = buckets[key] ?? Bucket(tokens: burst, updated: now)
            bucket.tokens = min(burst, bucket.tokens + (now - bucket.updated) * rate)
            bucket.updated = now
            guard bucket.tokens >= 1 else {
                buckets[key] = bucket
                return Int(((1 - bucket.tokens) / rate).rounded(.up))
            }
            bucket.tokens -= 1
            if buckets.count >= maxEntriesPerShard, buckets[key] == nil {
                // Full buckets carry no information: drop them to stay bounded. If none is
                // full, admit this address untracked rather than grow past the bound.
                buckets = buckets.filter { $0.value.tokens + (now - $0.value.updated) * rate < burst }
                if buckets.count >= maxEntriesPerShard { return nil }
            }
            buckets[key] = bucket
            return nil
        }
    }
}
