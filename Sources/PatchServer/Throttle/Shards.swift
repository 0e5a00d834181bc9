import Synchronization

/// Atomics and mutexes are not copyable, so they cannot sit in an array directly; these
/// reference wrappers let the throttles and metrics keep one per shard or cell.
final class AtomicCounter: Sendable {
    private let value = Atomic<Int>(0)

    init(_ initial: Int = 0) { value.store(initial, ordering: .relaxed) }
    func add(_ amount: Int) { value.add(amount, ordering: .relaxed) }
    func store(_ amount: Int) { value.store(amount, ordering: .relaxed) }
    var load: Int { value.load(ordering: .relaxed) }
    func compareExchange(expected: Int, desired: Int) -> Bool {
        value.compareExchange(expected: expected, desired: desired, ordering: .relaxed).exchanged
    }
}

final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: Value) { mutex = Mutex(value) }

    func withLock<R>(_ body: (inout Value) -> R) -> R { mutex.withLock { body(&$0) } }
}
