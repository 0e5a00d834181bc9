import Foundation
import HTTPTransport
import Locking
import PatchCore
import PatchRegistry

/// The device tokens this server stored, or read back, within `Registry.pushRefreshInterval`:
/// a refresh they coalesce (`PushTokenRecord.coalesces`) is answered on the event loop with
/// one hash lookup, with no registry lock, no queue and no read (issue 43: 100 tokens
/// re-registered 9 times a second from 300 addresses held the check path up behind them).
///
/// An entry is a keyed hash of (app, token) mapped to a keyed hash of the record's
/// `refreshIdentity` and the second it was written: no token or device ID is kept, and a
/// registration that differs in anything the identity holds misses and goes to the writer.
/// Memory is bounded by `capacity` (about 40 bytes an entry); a shard full of live entries
/// takes no more rather than evicting one (as `DeviceThrottle` does): a miss costs a read in
/// the writer, never a wrong answer.
///
/// What is remembered must stay what the registry holds, so it is forgotten when that may
/// have changed behind this server: tokens a registration evicted (`forget`), and everything
/// when another process or instance committed (patchd's reload) or tokens were deleted
/// (APNs said gone, pruning) (`removeAll`).
final class RecentRegistrations: Sendable {
    private struct Entry {
        let identity: UInt64
        /// Seconds since 1970 (`registered_at`).
        let writtenAt: UInt32
    }

    private struct Shard {
        var entries: [UInt64: Entry] = [:]
        /// No entry expires before this (seconds since 1970): until then a sweep frees nothing.
        var noSweepBefore: UInt32 = 0
    }

    private static let shardCount = 64
    private let shards: [Locked<Shard>]
    private let perShard: Int
    private let hash = KeyedHash()
    let capacity: Int

    init(capacity: Int) {
        self.capacity = max(0, capacity)
        perShard = self.capacity / RecentRegistrations.shardCount
        shards = (0..<RecentRegistrations.shardCount).map { _ in Locked(Shard()) }
    }

    private func key(_ app: AppName, _ token: String) -> UInt64 { hash(app.rawValue, token) }

    /// Whether the registry holds `registration`'s token with the same identity, written
    /// recently enough that refreshing it would change nothing.
    func coalesces(_ registration: PushDeviceRegistration, now: Date) -> Bool {
        let key = key(registration.app, registration.token)
        guard let entry = shards[shard(key)].withLock({ $0.entries[key] }) else { return false }
        return entry.identity == hash(registration.refreshIdentity)
            && Registry.refreshIsRecent(writtenAt: Date(timeIntervalSince1970: Double(entry.writtenAt)), now: now)
    }

    /// Remembers what the registry now holds of `registration`'s token (`record`).
    func note(_ registration: PushDeviceRegistration, holds record: PushTokenRecord, now: Date) {
        guard perShard > 0 else { return }
        let key = key(registration.app, registration.token)
        let writtenAt = UInt32(clamping: Int(record.registeredAt.timeIntervalSince1970))
        let entry = Entry(identity: hash(record.refreshIdentity), writtenAt: writtenAt)
        let expires = writtenAt &+ UInt32(Registry.pushRefreshInterval)
        let nowSeconds = UInt32(clamping: Int(now.timeIntervalSince1970))
        let perShard = self.perShard
        shards[shard(key)].withLock { shard in
            if shard.entries[key] == nil, shard.entries.count >= perShard {
                guard nowSeconds >= shard.noSweepBefore else { return }
                var earliest = UInt32.max
                shard.entries = shard.entries.filter { _, entry in
                    let expires = entry.writtenAt &+ UInt32(Registry.pushRefreshInterval)
                    guard expires > nowSeconds else { return false }
                    earliest = min(earliest, expires)
                    return true
                }
                shard.noSweepBefore = earliest == .max ? nowSeconds : earliest
                guard shard.entries.count < perShard else { return }
            }
            shard.entries[key] = entry
            shard.noSweepBefore = min(shard.noSweepBefore, expires)
        }
    }

    func forget(_ app: AppName, _ token: String) {
        let key = key(app, token)
        _ = shards[shard(key)].withLock { $0.entries.removeValue(forKey: key) }
    }

    func removeAll() {
        for shard in shards { shard.withLock { $0 = Shard() } }
    }

    /// Entries held (expired ones not yet swept included).
    var count: Int { shards.reduce(0) { $0 + $1.withLock { $0.entries.count } } }

    private func shard(_ key: UInt64) -> Int { Int(key % UInt64(RecentRegistrations.shardCount)) }
}
