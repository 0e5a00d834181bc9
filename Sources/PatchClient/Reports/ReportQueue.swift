import Foundation
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

    /// One lock for every queue in the process: clients of two versions of one app share the file.
    private static let lock = NSLock()

    func append(_ event: ReportEvent) { append(contentsOf: [event]) }

    /// Several at once: one read and one write of the file (each change rewrites it whole).
    func append(contentsOf new: [ReportEvent]) {
        Self.lock.lock()
        defer { Self.lock.unlock() }
        var events = load()
        events.append(contentsOf: new)
        if events.count > Self.capacity { events.removeFirst(events.count - Self.capacity) }
        save(events)
    }

    /// The oldest events, at most one request's worth.
    func pending() -> [ReportEvent] {
        Self.lock.lock()
        defer { Self.lock.unlock() }
        return Array(load().prefix(Self.batchSize))
    }

    /// Drops the events the server answered for; events queued meanwhile stay.
    func remove(_ ids: Set<String>) {
        Self.lock.lock()
        defer { Self.lock.unlock() }
        let events = load()
        let kept = events.filter { !ids.contains($0.id) }
        if kept.count != events.count { save(kept) }
    }

    var all: [ReportEvent] {
        Self.lock.lock()
        defer { Self.lock.unlock() }
        return load()
    }

    private func load() -> [ReportEvent] {
        guard let bytes = CacheFiles.read(url), let batch = try? JSONDecoder().decode(Batch.self, from: Data(bytes)) else { return [] }
        return batch.events
    }

    /// A report lost to a full disk or a power cut is news lost, never a broken device: no
    /// fsync, and a failed write is ignored.
    private func save(_ events: [ReportEvent]) {
        guard let data = try? Self.encode(events) else { return }
        try? CacheFiles.write(Array(data), to: url, sync: false)
    }

    static func encode(_ events: [ReportEvent]) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(Batch(events: events))
    }
}
