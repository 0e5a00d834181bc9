import Foundation

/// A blocked caller's thread, lent to the task it waits for (`PatchClient.syncBlocking`): the
/// task prefers this executor, so its jobs (every step of a sync: PatchClient is no actor, so
/// none is owed to another executor) run here instead of hopping to Swift concurrency's pool
/// and back, and `HTTPClient` runs its transfers here rather than on its queue — this thread
/// is the caller's, so blocking it in libcurl starves no pool thread. Each hop it saves was a
/// thread wake-up (futex calls and a context switch); a cold sync made ~26 futex calls (issue 23).
///
/// The thread serves jobs from `run()` until the task `start` made is done; a job that comes
/// later (nothing of a sync should, but a task executor cannot refuse one) goes to the global
/// executor. A task on a pool thread that inherits `current` is told apart by `isRunningHere`.
@available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
package final class LentThread: TaskExecutor, @unchecked Sendable {
    // @unchecked: `jobs` and `open` are only touched under `condition`; `thread` is set once.
    // A condition variable rather than `Locked`: `run()` sleeps on it until a job comes.
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var open = true
    private let thread = pthread_self()

    /// Made on the thread that will call `run()`.
    package init() {}

    /// The lent thread of the current task, when the task is running on it right now.
    @TaskLocal package static var current: LentThread?

    /// Whether the calling code runs on this thread while it is lent (blocking is then the
    /// caller's choice, not the pool's loss).
    var isRunningHere: Bool { pthread_equal(pthread_self(), thread) != 0 }

    package func enqueue(_ job: consuming ExecutorJob) {
        condition.lock()
        guard open else {
            condition.unlock()
            globalConcurrentExecutor.enqueue(job)
            return
        }
        jobs.append(UnownedJob(job))
        condition.signal()
        condition.unlock()
    }

    /// Runs the jobs given to this executor on the calling thread (the one that made it) until
    /// the task `start` made is done, and the ones already queued then.
    package func run() {
        let executor = asUnownedTaskExecutor()
        while true {
            condition.lock()
            while jobs.isEmpty && open { condition.wait() }
            if jobs.isEmpty {
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: executor)
        }
    }

    /// A task that runs `operation` on this thread, with `current` naming it; `run()` serves
    /// it, and returns once the task is done.
    package func start<Value: Sendable>(_ operation: @escaping @Sendable () async -> Value) -> Task<Value, Never> {
        Task(executorPreference: self) {
            defer { self.close() }
            return await LentThread.$current.withValue(self) { await operation() }
        }
    }

    /// The task is done with the thread: `run()` returns once the queue is empty.
    private func close() {
        condition.lock()
        open = false
        condition.signal()
        condition.unlock()
    }
}

/// Whether the calling code runs on a thread a blocked caller lent to its task (`LentThread`).
func onLentThread() -> Bool {
    if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) { return LentThread.current?.isRunningHere ?? false }
    return false
}
