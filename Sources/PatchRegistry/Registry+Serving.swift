import Foundation

/// Whether a patchd serves this registry now: what a command asks before it changes what a
/// running server would serve for longer than it means to (`patchctl export --expires` signs
/// the registry's own timestamp and snapshot to last up to 90 days, and patchd then serves
/// those, so devices would accept that state for as long).
///
/// Each backend answers from something a live patchd keeps true and a dead one cannot:
/// - PostgreSQL: the upkeep lease (PostgresStore+Lease.swift). Some live patchd always holds
///   it, renewed every pass; a dead holder's deadline passes `--upkeep-lease` seconds later.
/// - SQLite has no lease, so every patchd holds a shared `flock` on `{data}/patchd.serving`
///   from its first upkeep pass (at start-up) until it stops. The kernel drops the lock of a
///   process that dies however it dies, so a crash leaves nothing stale; the file itself is
///   inert, and a backup that copies it copies no claim.
extension Registry {
    /// Who serves this registry, for a message; nil when no patchd does.
    public func servingPatchd() -> String? {
        switch database {
        case .postgres:
            return (db as? PostgresStore)?.upkeepLeaseHolder().map { "patchd \($0) (it holds the registry's upkeep lease)" }
        case .sqlite(let directory):
            let path = directory.appendingPathComponent(ServingMarker.fileName).path
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { return nil }  // never served, or not by a patchd of this version
            defer { close(fd) }
            // A probe, released at once: patchd's shared lock makes an exclusive one fail.
            guard flock(fd, LOCK_EX | LOCK_NB) != 0 else { flock(fd, LOCK_UN); return nil }
            return errno == EWOULDBLOCK ? "a patchd on this machine (it holds \(path))" : nil
        }
    }

    /// Called on each upkeep pass (`renewUpkeepLease`) on SQLite: takes the shared lock once
    /// and keeps it while this Registry is open.
    func markServing() {
        guard servingMarker == nil, case .sqlite(let directory) = database else { return }
        servingMarker = ServingMarker(directory: directory)
    }
}

/// The shared lock a serving patchd holds on `{data}/patchd.serving` (SQLite): one open file
/// description, closed, and so unlocked, when the Registry holding it goes.
final class ServingMarker {
    static let fileName = "patchd.serving"
    private let fd: Int32

    /// nil when the file cannot be opened or locked; the next upkeep pass tries again.
    init?(directory: URL) {
        let fd = open(directory.appendingPathComponent(ServingMarker.fileName).path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return nil }
        // A probe (`servingPatchd`) holds the exclusive lock for microseconds: a few tries get
        // past it without ever blocking an upkeep pass on a lock someone else might keep.
        for _ in 0..<50 {
            if flock(fd, LOCK_SH | LOCK_NB) == 0 { self.fd = fd; return }
            guard errno == EWOULDBLOCK || errno == EINTR else { break }
            usleep(1_000)
        }
        close(fd)
        return nil
    }

    deinit { close(fd) }
}

@available(*, unavailable) extension ServingMarker: Sendable {}
