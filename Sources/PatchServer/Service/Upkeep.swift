import Dispatch
import Synchronization

/// patchd's background work on one serial queue: picks up changes another process commits
/// to the registry (every second) and re-signs online roles before they expire (every
/// minute, the first pass right away so a registry of a thousand apps does not delay
/// start-up), then applies the guards and prunes old report ids (`reportUpkeep`).
///
/// `stop()` returns only once no pass is running. That matters at exit: `exit` runs
/// OpenSSL's and SQLite's clean-up handlers, and a re-signing pass still inside OpenSSL on
/// another thread then dereferences freed locks (patchd crashed with SIGSEGV on SIGTERM
/// this way when a pass was under way).
public final class Upkeep: @unchecked Sendable {
    // @unchecked: the timers are only touched by init and stop(), which the stopped flag
    // makes run once.
    private let queue = DispatchQueue(label: "patchd.upkeep")
    private let timers: [DispatchSourceTimer]
    private let stopped = Atomic<Bool>(false)

    public init(service: PatchService, reloadEvery: Double = 1, refreshEvery: Double = 60) {
        let reload = DispatchSource.makeTimerSource(queue: queue)
        reload.schedule(deadline: .now() + reloadEvery, repeating: reloadEvery)
        reload.setEventHandler { service.reloadChanged() }
        let refresh = DispatchSource.makeTimerSource(queue: queue)
        refresh.schedule(deadline: .now(), repeating: refreshEvery)
        timers = [reload, refresh]
        refresh.setEventHandler { [weak self] in
            service.refreshExpiring(while: { self?.stopped.load(ordering: .relaxed) == false })
            service.reportUpkeep()
        }
        timers.forEach { $0.resume() }
    }

    /// Cancels the timers, cuts a re-signing pass short after the app it is on, and waits
    /// for the pass under way (if any) to return. Idempotent.
    public func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        timers.forEach { $0.cancel() }
        // The queue is serial: this block runs after whatever handler is executing now.
        queue.sync {}
    }
}
