import Foundation
import PatchCore

/// What a `PatchClient` keeps in memory between calls, behind its `session` lock. That lock is
/// never held across a file or network operation, so starting or joining a sync never waits
/// for a disk.
struct Session {
    /// The sync under way: a second `sync()` joins it and returns its outcome, and
    /// `syncBlocking` waits on it without a task of its own (issue 23).
    var running: SyncRun?
    /// The timestamp version a push announced (handlePush), sent once with the next check's
    /// timestamp request as `X-Push-Timestamp`, so patchd lets it through the interval.
    var pushAnnounced: Int64?
    /// The installation's `X-Device-Secret`, read (or made) by the first sync that asks the
    /// server, then kept: later syncs of this client do not read the file again.
    var secret: DeviceSecret?
}

/// One sync under way: its task, which `sync()` callers await, and its outcome, which
/// `syncBlocking` callers block on.
struct SyncRun: Sendable {
    let task: Task<SyncOutcome, Never>
    /// Also the run's identity: a finished sync clears the session's slot only if it still
    /// holds this run.
    let outcome: Outcome

    /// The outcome of one sync, once it is over.
    final class Outcome: @unchecked Sendable {
        // @unchecked: `value` is only touched under `condition`. A condition variable rather
        // than `Locked`: a blocked caller sleeps on it until the value comes, which a lock
        // alone cannot do.
        private let condition = NSCondition()
        private var value: SyncOutcome?

        func deliver(_ outcome: SyncOutcome) {
            condition.lock()
            value = outcome
            condition.broadcast()
            condition.unlock()
        }

        /// Blocks until the outcome is delivered.
        func wait() -> SyncOutcome {
            condition.lock()
            defer { condition.unlock() }
            while true {
                if let value { return value }
                condition.wait()
            }
        }
    }
}

/// What one sync learns on its way, for what follows its outcome. The sync's own, passed
/// `inout` from step to step, so no other call sees it and no lock guards it.
struct SyncProgress {
    /// The patch being downloaded: a refusal names it.
    var attempting: Int?
    /// Whether the sync got past the local interval checks and asked the server (only then
    /// does the reports request follow).
    var askedServer = false
    /// `lastError` as the sync read it from the state (nil: not read), so `remember` need not
    /// read state.json again to see that a success changes nothing.
    var observedLastError: ClientState.Failure??
}
