import Synchronization

/// Atomics are not copyable, so they cannot sit in an array directly; this reference wrapper
/// lets the throttles and metrics keep one per shard or cell. `@inlinable` here and in
/// `KeyedHash`: PatchServer calls them on every request, and across a module a call is not
/// inlined (and a generic one not specialized) unless the body is visible.
package final class AtomicCounter: Sendable {
    @usableFromInline let value = Atomic<Int>(0)

    @inlinable package init(_ initial: Int = 0) { value.store(initial, ordering: .relaxed) }
    @inlinable package func add(_ amount: Int) { value.add(amount, ordering: .relaxed) }
    @inlinable package func store(_ amount: Int) { value.store(amount, ordering: .relaxed) }
    @inlinable package var load: Int { value.load(ordering: .relaxed) }
    /// Stores `desired`, returning what was there.
    @inlinable package func exchange(_ desired: Int) -> Int { value.exchange(desired, ordering: .relaxed) }
    @inlinable package func compareExchange(expected: Int, desired: Int) -> Bool {
        value.compareExchange(expected: expected, desired: desired, ordering: .relaxed).exchanged
    }
}

/// A 64-bit hash under a random key of this process, for the tables keyed by what peers send
/// (device IDs, addresses, tokens): they keep no raw IDs, and no one can aim collisions at
/// one entry or one shard.
package struct KeyedHash: Sendable {
    @usableFromInline let seed: (UInt64, UInt64)

    package init() {
        var generator = SystemRandomNumberGenerator()
        seed = (generator.next(), generator.next())
    }

    @inlinable package func callAsFunction<each Part: Hashable>(_ part: repeat each Part) -> UInt64 {
        var hasher = Hasher()
        hasher.combine(seed.0)
        repeat hasher.combine(each part)
        hasher.combine(seed.1)
        return UInt64(bitPattern: Int64(hasher.finalize()))
    }
}
