import Foundation
import Locking
import PatchCore

/// The events not yet accepted by the server, in `{cache}/{app}/reports.json`: one queue for
/// every app version of the app, written atomically on every change, bounded to `capacity`
/// events with the oldest dropped first, so a device offline for months keeps its newest news.
struct ReportQueue: Sendable {
    /// The file's layout: the request body's, so a batch is a slice of it.
    struct Batch: Codable {
        var events: [ReportEvent]
    }

    static let capacity = 500
    /// The most events one request carries (the contract's limit).
    static let batchSize = 100

    let url: URL

    /// The queue files, one reader or writer at a time for every queue in the process:
    /// clients of two versions of one app share a file, and each change rewrites it whole.
    private static let files = Locked(QueueFiles())

    func append(_ event: ReportEvent) { append(contentsOf: [event]) }

    /// Several at once: one read and one write of the file (each change rewrites it whole).
    func append(contentsOf new: [ReportEvent]) {
        Self.files.withLock { files in
            var events = files.load(url)
            events.append(contentsOf: new)
            if events.count > Self.capacity { events.removeFirst(events.count - Self.capacity) }
            files.save(events, to: url)
        }
    }

    /// The oldest events, at most one request's worth.
    func pending() -> [ReportEvent] {
        Self.files.withLock { Array($0.load(url).prefix(Self.batchSize)) }
    }

    /// Drops the events the server answered for; events queued meanwhile stay.
    func remove(_ ids: Set<String>) {
        Self.files.withLock { files in
            let events = files.load(url)
            let kept = events.filter { !ids.contains($0.id) }
            if kept.count != events.count { files.save(kept, to: url) }
        }
    }

    var all: [ReportEvent] {
        Self.files.withLock { $0.load(url) }
    }

    static func encode(_ events: [ReportEvent]) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(Batch(events: events))
    }
}

/// Reading and writing queue files: reached only inside `ReportQueue.files`' lock, the one
/// value of this type.
private struct QueueFiles {
    func load(_ url: URL) -> [ReportEvent] {
        guard let bytes = CacheFiles.read(url), let batch = try? JSONDecoder().decode(ReportQueue.Batch.self, from: Data(bytes)) else { return [] }
        return batch.events
    }

    /// A report lost to a full disk or a power cut is news lost, never a broken device: no
    /// fsync, and a failed write is ignored.
    func save(_ events: [ReportEvent], to url: URL) {
        guard let data = try? ReportQueue.encode(events) else { return }
        try? CacheFiles.write(Array(data), to: url, sync: false)
    }
}
