import Foundation

/// Runs async work to completion for synchronous code (command-line tools), blocking the
/// calling thread. That thread must not be one of Swift concurrency's own: blocking a pool
/// thread can starve the very task it waits for.
public func blockingWait<Value: Sendable>(_ operation: @escaping @Sendable () async -> Value) -> Value {
    let box = BlockingBox<Value>()
    Task { box.finish(await operation()) }
    return box.wait()
}

/// Hands one value from a task to the thread waiting for it.
private final class BlockingBox<Value: Sendable>: @unchecked Sendable {
    // @unchecked: `value` is written once before `done` is signalled and read after the wait.
    private let done = DispatchSemaphore(value: 0)
    private var value: Value?

    func finish(_ value: Value) {
        self.value = value
        done.signal()
    }

    func wait() -> Value {
        done.wait()
        return value!
    }
}
