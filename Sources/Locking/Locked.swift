import Foundation
#if os(Linux) && !HOTPATCH_APPLE_SHAPED
import Synchronization
#endif

/// The project's one lock: a value that one thread at a time reads or changes, inside
/// `withLock`. It is the only way state shared between threads is guarded here (counters
/// that need no lock use `Atomic`), on the server and in the client library alike.
///
/// Two backends behind one type, as with `HTTPClient`: on Linux (patchd, patchctl, the
/// tests) `Synchronization.Mutex`, a futex word inline in the object; on Apple platforms
/// `NSLock`, because the client library runs on iOS 15, where `Mutex` does not exist (iOS
/// 18; `make test-apple-shaped` builds and runs that backend here). Mutex, not NSLock, where it can be: patchd takes several of these per request (the
/// catalog's path table, a throttle shard, an address bucket), and with NSLock on each the
/// check path served 8 % fewer requests a second (docs/BENCHMARKS.md, issue 46). A class, so
/// it can be stored in arrays (shards) and shared by reference; unconditionally `Sendable`
/// like `Mutex`, because guarding a value that is not is what a lock is for: the value goes
/// in and out only as `sending`, so the compiler still sees it cross no thread outside the lock.
/// `@inlinable`: a generic method called across modules is otherwise not specialized, and
/// every call looked its type's metadata up at run time (perf on the check path).
public final class Locked<Value>: @unchecked Sendable {
    #if os(Linux) && !HOTPATCH_APPLE_SHAPED
    @usableFromInline let mutex: Mutex<Value>

    public init(_ value: sending Value) { mutex = Mutex(value) }

    /// Runs `body` with the value while holding the lock. `body` must not call `withLock` on
    /// the same instance (the lock is not recursive: that deadlocks).
    @inlinable
    public func withLock<Result, Failure: Error>(_ body: (inout sending Value) throws(Failure) -> sending Result) throws(Failure) -> sending Result {
        try mutex.withLock(body)
    }

    /// `body`'s result if the lock is free right now, else nil without waiting (a health
    /// probe that must not queue behind a long change).
    @inlinable
    public func withLockIfAvailable<Result, Failure: Error>(_ body: (inout sending Value) throws(Failure) -> sending Result) throws(Failure) -> sending Result? {
        try mutex.withLockIfAvailable(body)
    }
    #else
    @usableFromInline var value: Value
    @usableFromInline let lock = NSLock()

    public init(_ value: sending Value) { self.value = value }

    /// Runs `body` with the value while holding the lock. `body` must not call `withLock` on
    /// the same instance (the lock is not recursive: that deadlocks).
    @inlinable
    public func withLock<Result, Failure: Error>(_ body: (inout sending Value) throws(Failure) -> sending Result) throws(Failure) -> sending Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }

    /// `body`'s result if the lock is free right now, else nil without waiting (a health
    /// probe that must not queue behind a long change).
    @inlinable
    public func withLockIfAvailable<Result, Failure: Error>(_ body: (inout sending Value) throws(Failure) -> sending Result) throws(Failure) -> sending Result? {
        guard lock.try() else { return nil }
        defer { lock.unlock() }
        return try body(&value)
    }
    #endif
}
