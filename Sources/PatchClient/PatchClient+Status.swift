import Foundation
import PatchCore

/// Why the last sync failed, as the client remembers it across launches.
public struct SyncFailure: Sendable, Equatable {
    public let at: Date
    /// The reason code the failure is reported with (`network`, `timeout`, `signature`…).
    public let code: String
    /// `PatchClientError.description`.
    public let message: String
}

/// What an app shows about the client: the last check, the last error, and a way to start over.
extension PatchClient {
    /// When the client last asked the server (kept in `state.json`).
    public var lastCheck: Date? {
        lockedState().lastCheck.map { Date(timeIntervalSince1970: $0) }
    }

    /// The failure of the last sync that got an answer, nil once a sync succeeds (a throttled
    /// or cancelled sync changes nothing here).
    public var lastError: SyncFailure? {
        lockedState().lastError.map { SyncFailure(at: Date(timeIntervalSince1970: $0.at), code: $0.code, message: $0.message) }
    }

    /// Deletes what this client cached for its app version — the script, the state — and the
    /// app's trusted metadata, after any sync under way has finished: the next sync starts
    /// from the pinned root, as on a new install. Reports not yet sent are kept.
    public func clearCache() async throws(PatchClientError) {
        while let running = inFlightSync { _ = await running.value }
        try files.withLock { (files) throws(PatchClientError) in try files.removeAll() }
    }

    /// Keeps the last error for `lastError`; `observed` is the one the sync read, if it read one.
    func remember(_ outcome: SyncOutcome, observed: ClientState.Failure??, now: Date) {
        let failure: ClientState.Failure?
        switch outcome {
        case .updated, .unchanged, .removed: failure = nil
        case .throttled, .failed(.cancelled): return
        case .failed(let error):
            failure = ClientState.Failure(at: now.timeIntervalSince1970, code: ReportReason.code(error), message: error.description)
        }
        // A success after a sync that read the state and saw no error changes nothing.
        if failure == nil, case .some(.none) = observed { return }
        guard lockedState().lastError != failure else { return }
        try? updateState { $0.lastError = failure }
    }
}
