internal import CPostgres
#if canImport(Glibc)
import Glibc
#endif

/// One NOTIFY as a listener receives it.
public struct PostgresNotification: Sendable, Equatable {
    public let channel: String
    public let payload: String
    /// The server process of the connection that sent it (compare with `backendPID` to skip
    /// one's own notifications).
    public let senderPID: Int32

    public init(channel: String, payload: String, senderPID: Int32) {
        self.channel = channel
        self.payload = payload
        self.senderPID = senderPID
    }
}

/// LISTEN/NOTIFY: how one process learns, without polling, that another committed a change.
extension PostgresConnection {
    /// Starts receiving notifications sent on `channel` (any string; it is quoted here).
    public func listen(_ channel: String) throws(PostgresError) {
        try execute("LISTEN \(try quotedIdentifier(channel))")
    }

    public func unlisten(_ channel: String) throws(PostgresError) {
        try execute("UNLISTEN \(try quotedIdentifier(channel))")
    }

    /// Sends a notification. Inside a transaction the server holds it until COMMIT (and drops it
    /// on ROLLBACK), so listeners never hear of a change they cannot yet read.
    public func notify(_ channel: String, payload: String = "") throws(PostgresError) {
        try query("SELECT pg_notify($1, $2)", [.text(channel), .text(payload)])
    }

    /// The next notification on a channel this connection listens to, or nil when none came
    /// within `timeout`. Waits in poll(2) on the connection's socket, so a waiting listener
    /// costs no CPU and wakes as soon as the server writes.
    public func nextNotification(timeout: Duration) throws(PostgresError) -> PostgresNotification? {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while true {
            // Notifications that arrived with an earlier result, or in the last read, are
            // already queued in libpq.
            if let notification = PQnotifies(handle) {
                defer { PQfreemem(notification) }
                return PostgresNotification(
                    channel: String(cString: notification.pointee.relname),
                    payload: notification.pointee.extra.map { String(cString: $0) } ?? "",
                    senderPID: notification.pointee.be_pid)
            }
            let remaining = deadline - clock.now
            guard remaining > .zero else { return nil }
            let socket = PQsocket(handle)
            guard socket >= 0 else { throw PostgresError(kind: .connection, message: "the connection has no socket: \(lastMessage)") }
            var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, Self.milliseconds(remaining))
            if ready < 0 {
                if errno == EINTR { continue }
                throw PostgresError(kind: .client, message: "poll failed with errno \(errno)")
            }
            // Readable (or hung up: PQconsumeInput then reports the broken connection).
            if ready > 0, PQconsumeInput(handle) == 0 {
                throw PostgresError(kind: .connection, message: lastMessage)
            }
        }
    }

    /// Rounded up, so a wait never returns before the deadline and spins on a 0 ms poll.
    private static func milliseconds(_ duration: Duration) -> Int32 {
        let (seconds, attoseconds) = duration.components
        let ms = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int32(clamping: ms)
    }

    /// LISTEN takes an identifier, not a parameter: libpq quotes it for the connection's encoding.
    private func quotedIdentifier(_ name: String) throws(PostgresError) -> String {
        guard let quoted = PQescapeIdentifier(handle, name, name.utf8.count) else {
            throw PostgresError(kind: .client, message: lastMessage)
        }
        defer { PQfreemem(quoted) }
        return String(cString: quoted)
    }
}
