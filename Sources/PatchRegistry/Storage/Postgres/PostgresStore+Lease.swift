import Foundation

/// The upkeep lease on PostgreSQL: one row, `upkeep_lease(holder, expires_at, missing_keys)`,
/// that names the instance running the background passes (re-signing the online roles,
/// guards, staged rollouts, pruning) until a deadline on the server's clock. The holder
/// renews it at the start of every pass; another instance takes it over once the deadline has
/// passed (the holder died, hung under SIGSTOP, or lost the database), or at once when the
/// holder reported more apps it cannot re-sign than the taker (its keys are missing), so an
/// instance without the keys never keeps the work from one that has them, and still does it
/// when no better instance is alive.
///
/// Before (a session advisory lock) a hung holder kept the lease for as long as its TCP
/// connection lived, and a holder without the timestamp key kept it for ever: nobody
/// re-signed, and every device refused the repository once the timestamp expired.
extension PostgresStore {
    /// `host pid N`, and a random suffix: two processes never share a name, even across a
    /// restart that reuses the pid.
    static func holderName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        let host = gethostname(&buffer, buffer.count) == 0
            ? String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "unknown"
        let suffix = String(UInt32.random(in: 0...UInt32.max), radix: 16)
        return "\(host) pid \(getpid()) \(suffix)"
    }

    /// Takes or renews the lease for `seconds`, in one statement (compare-and-set on the one
    /// row, so two instances can never both be named): it succeeds when nobody holds it, when
    /// this process does, when the holder's deadline has passed, or when the holder cannot
    /// re-sign more apps than this process (`missingKeys`). True when this process holds it;
    /// false also when the database cannot be asked.
    ///
    /// The process then acts as the holder until `seconds` after it sent the statement, by
    /// its own monotonic clock, which advances while the process is stopped: the server's
    /// deadline (counted from when it ran the statement) is never earlier, so a holder that
    /// resumes after a takeover stops acting before, not after, the lease is someone else's.
    func renewUpkeepLease(seconds: Double, missingKeys: Int) -> Bool {
        let sent = ContinuousClock.now
        leaseValidUntil = nil
        leaseTerms = (seconds, missingKeys)
        guard !inTransaction else { return false }
        let rows = try? query("""
            INSERT INTO upkeep_lease(id, holder, expires_at, missing_keys)
            VALUES (1, ?, clock_timestamp() + ?::bigint * interval '1 millisecond', ?)
            ON CONFLICT (id) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at, missing_keys = excluded.missing_keys
            WHERE upkeep_lease.holder = excluded.holder OR upkeep_lease.expires_at < clock_timestamp()
               OR excluded.missing_keys < upkeep_lease.missing_keys
            RETURNING holder
            """, [.text(leaseHolder), .int(Int64(seconds * 1000)), .int(Int64(missingKeys))]) { $0.text(0) }
        guard rows == [leaseHolder] else { return false }
        leaseValidUntil = sent + .milliseconds(Int64(seconds * 1000))
        return true
    }

    /// Whether the last renewal succeeded and its time has not run out; if not, asks again
    /// on the last renewal's terms (a pass that runs without the re-signing pass before it,
    /// or one that resumed after a stop). Before any renewal it claims it cannot re-sign
    /// anything, so it takes only a lease nobody holds.
    func holdsUpkeepLease() -> Bool {
        if let until = leaseValidUntil, ContinuousClock.now < until { return true }
        return renewUpkeepLease(seconds: leaseTerms.seconds, missingKeys: leaseTerms.missingKeys)
    }

    /// Gives the lease up (patchd stopping), so another instance takes it at its next pass
    /// instead of after the deadline.
    func releaseUpkeepLease() {
        leaseValidUntil = nil
        guard !inTransaction else { return }
        try? run("DELETE FROM upkeep_lease WHERE id = 1 AND holder = ?", [.text(leaseHolder)])
    }

    /// Who holds the lease now, by the row (nil: nobody, or its deadline passed).
    func upkeepLeaseHolder() -> String? {
        (try? query("SELECT holder FROM upkeep_lease WHERE id = 1 AND expires_at >= clock_timestamp()") { $0.text(0) })?.first
    }
}
