import Synchronization

/// Atomics and mutexes are not copyable, so they cannot sit in an array directly; these
/// reference wrappers let the throttles and metrics keep one per shard or cell.
final class AtomicCounter: Sendable {
    private let value = Atomic<Int>(0)

    init(_ initial: Int = 0) { value.store(initial, ordering: .relaxed) }
    func add(_ amount: Int) { value.add(amount, ordering: .relaxed) }
    func store(_ amount: Int) { value.store(amount, ordering: .relaxed) }
    var load: Int { value.load(ordering: .relaxed) }
    /// Stores `desired`, returning what was there.
    func exchange(_ desired: Int) -> Int { value.exchange(desired, ordering: .relaxed) }
    func compareExchange(expected: Int, desired: Int) -> Bool {
        value.compareExchange(expected: expected, desired: desired, ordering: .relaxed).exchanged
    }
}

final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: Value) { mutex = Mutex(value) }

    func withLock<R>(_ body: (inout Value) -> R) -> R { mutex.withLock { body(&$0) } }
}

/// A 64-bit hash under a random key of this process, for the tables keyed by what peers send
/// (device IDs, addresses, tokens): they keep no raw IDs, and no one can aim collisions at
/// one entry or one shard.
struct KeyedHash: Sendable {
    private let seed: (UInt64, UInt64)

    init() {
        var generator = SystemRandomNumberGenerator()
        seed = (generator.next(), generator.next())
    }

    func callAsFunction<each Part: Hashable>(_ part: repeat each Part) -> UInt64 {
        var hasher = Hasher()
        hasher.combine(seed.0)
        repeat hasher.combine(each part)
        hasher.combine(seed.1)
        return UInt64(bitPattern: Int64(hasher.finalize()))
    }
}
