import Foundation
import Locking
import PatchCore

/// The two ways the registry reaches its database. The SQLite layer throws `StorageError`
/// and knows nothing of the registry; these are the one place its errors become
/// `RegistryError`.
extension Registry {
    /// Every change goes through here: one BEGIN IMMEDIATE … COMMIT around `body`, which does
    /// its reads as well as its writes, so nothing it decides on can be changed by another
    /// process before it commits. A crash or any error leaves the registry as it was.
    ///
    /// With `dryRun`, `body` runs exactly as it would (every check, every signature) and its
    /// result is returned, but the transaction is rolled back: `--dry-run` reports what the
    /// change would be from the same code that makes it, and changes nothing.
    ///
    /// Called inside another write (a guard halting a patch through `setRollout`), `body` is
    /// part of that transaction: it commits or rolls back with it.
    func write<T>(dryRun: Bool = false, _ body: () throws -> T) throws(RegistryError) -> T {
        if db.inTransaction, !dryRun {
            do { return try body() } catch { throw .wrapping(error) }
        }
        guard dryRun else {
            do { return try db.transaction(body) } catch { throw .wrapping(error) }
        }
        do {
            _ = try db.transaction { () throws -> T in throw Rehearsal(result: try body()) }
            throw RegistryError.internalError("a dry run committed")
        } catch let rehearsal as Rehearsal<T> {
            return rehearsal.result
        } catch { throw .wrapping(error) }
    }

    /// Several reads that must see one state of the registry, such as the timestamp, snapshot
    /// and targets an export writes, which pin each other: read one by one, a publish
    /// committed in between would pair a new timestamp with old targets.
    func consistentRead<T>(_ body: () throws -> T) throws(RegistryError) -> T {
        do { return try db.readTransaction(body) } catch { throw .wrapping(error) }
    }

    /// One read that decides nothing another write depends on (a listing, a lookup).
    /// Reads that decide what is signed belong inside `write`.
    func read<T>(_ body: () throws(StorageError) -> T) throws(RegistryError) -> T {
        do { return try body() } catch { throw .storage(error) }
    }

    /// A feed of changes committed by anyone, for a server to reload on (PostgreSQL); nil on
    /// SQLite, where a server polls `dataVersion` (PRAGMA data_version) instead.
    public func changeFeed() -> RegistryChangeFeed? {
        guard let store = db as? PostgresStore else { return nil }
        return RegistryChangeFeed(conninfo: store.conninfo, channel: store.channel)
    }

    /// The root that says which keys sign, read inside the write transaction that signs with
    /// them. Read before BEGIN, a rotation committed by another process in between would make
    /// this change sign with the key it replaced, and every client would refuse the repository.
    func signingRoot(app: AppName) throws(RegistryError) -> RootBody {
        guard db.inTransaction else { throw .internalError("the signing root of \(app) was read outside a write transaction") }
        let root = try parsedRoot(app: app, bytes: try latestMetadata(app: app, role: .root).bytes)
        CrashPoint.hit("signing-root.read")
        return root
    }

    /// `bytes` (an app's stored root) parsed, or the body parsed from the same bytes before.
    func parsedRoot(app: AppName, bytes: [UInt8]) throws(RegistryError) -> RootBody {
        if let root = parsedRoots.root(app: app, bytes: bytes) { return root }
        let root: RootBody
        do { root = try SignedRoot(bytes: bytes).body } catch { throw .internalError("stored root of \(app) does not parse: \(error)") }
        parsedRoots.store(root, app: app, bytes: bytes)
        return root
    }
}

/// The last root parsed per app, with the bytes it was parsed from: a root is read inside
/// every write transaction that signs, and is the same bytes from one rotation to the next.
final class ParsedRoots: Sendable {
    private let roots = Locked<[AppName: (bytes: [UInt8], body: RootBody)]>([:])

    func root(app: AppName, bytes: [UInt8]) -> RootBody? {
        roots.withLock { roots in
            guard let entry = roots[app], entry.bytes == bytes else { return nil }
            return entry.body
        }
    }

    func store(_ body: RootBody, app: AppName, bytes: [UInt8]) {
        roots.withLock { $0[app] = (bytes, body) }
    }
}

/// Carries a dry run's result out of the transaction it rolls back.
private struct Rehearsal<T>: Error, @unchecked Sendable {
    let result: T
}
