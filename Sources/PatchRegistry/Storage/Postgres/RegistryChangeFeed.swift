import Foundation
import Locking
import Postgres

/// Tells a long-running server that another instance (or patchctl) committed a change to a
/// PostgreSQL registry, within milliseconds: a connection of its own LISTENs on the
/// registry's channel, which every write transaction NOTIFYs on commit (`PostgresStore`).
/// `wait` blocks in poll(2) on that connection's socket, so an idle feed costs no CPU.
///
/// A lost connection is replaced on the next `wait`. Notifications sent while it was down
/// are gone, so `wait` then reports a change: the caller re-reads `dataVersion`, which is the
/// truth; the feed only says when to look.
public final class RegistryChangeFeed: Sendable {
    private let conninfo: String
    private let channel: String
    /// Used by one thread (patchd's listener); the lock makes that safe to share.
    private let connection = Locked<PostgresConnection?>(nil)

    init(conninfo: String, channel: String) {
        self.conninfo = conninfo
        self.channel = channel
    }

    /// True when a change was committed (or may have been, after a reconnect) since the last
    /// call; false when `timeout` passed quietly.
    public func wait(timeout: Duration) -> Bool {
        connection.withLock { connection in
            do {
                if connection == nil || connection?.isConnected == false {
                    let fresh = try PostgresConnection(PostgresStore.boundedConnect(conninfo))
                    try fresh.listen(channel)
                    connection = fresh
                    return true
                }
                guard let listener = connection, try listener.nextNotification(timeout: timeout) != nil else { return false }
                // A burst of commits is one reload: take what is already queued.
                while try listener.nextNotification(timeout: .zero) != nil {}
                return true
            } catch {
                connection = nil
                // The database is unreachable: do not spin; the caller's next wait retries.
                Thread.sleep(forTimeInterval: min(1, Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18))
                return true
            }
        }
    }
}
