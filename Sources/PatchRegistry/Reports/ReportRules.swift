import Foundation
import PatchCore
import PatchSigning

/// What a report must cost before it counts (docs/SECURITY.md, "Device reports"). Reports
/// need no token, so anyone can send them; these rules decide how much of what is sent
/// becomes evidence a guard or a staged rollout acts on, and how much storage a sender can
/// take:
///
/// - an event about a patch counts only with that patch's receipt (`ReportReceipt`), which
///   patchd hands out with the patch itself to the device ID that fetched it;
/// - a device counts only once admitted, and each hour admits at most `devicesPerNetwork`
///   new devices per network (/24 · /48), `devicesPerBlock` per block (/16 · /32) and
///   `devicesPerApp` per app;
/// - each hour stores at most `eventsPerNetwork` events per network and `eventsPerApp` per app;
/// - a schedule steps on installs only when those devices came from at least `minBlocks`
///   distinct blocks; a guard trips on rollbacks only when they came from at least
///   `rollbackQuorum(rolledBack:installBlocks:)` blocks, which grows with the installs.
///
/// What goes past a budget is dropped and counted (`ReportOutcome.dropped`, `/metrics`).
public struct ReportRules: Sendable, Equatable {
    public var devicesPerNetwork = 20
    public var devicesPerBlock = 200
    public var devicesPerApp = 20_000
    public var eventsPerNetwork = 1_000
    public var eventsPerApp = 100_000
    public var minBlocks = 5
    /// A guard's trip needs its rollbacks from at least one block in this many of the blocks
    /// the patch's installs came from (`rollbackQuorum`).
    public var installBlocksPerRollbackBlock = 8

    public init() {}

    /// The distinct blocks a guard's rollbacks must come from before it trips (issue 43):
    /// `minBlocks`, or one in `installBlocksPerRollbackBlock` of the blocks the patch's
    /// installs came from, whichever is more. It grows with the installing devices, as they
    /// spread over more blocks, and not with the rollbacks, which a forger can pile up in the
    /// blocks it holds (200 new devices a block an hour): a forger holding A blocks trips a
    /// guard only where A ≥ (L + A) / 8 for the L blocks the genuine installs span, so on a
    /// patch whose installs span 36 blocks the review's five blocks halt nothing, and on one
    /// spanning 700 they need 100. A real regression meets it once its rollbacks come from an
    /// eighth of the install blocks; the Wilson bound already needs about that many devices
    /// while the patch is young, and a grown fleet has many devices per block
    /// (docs/SECURITY.md, "Device reports").
    public func rollbackQuorum(installBlocks: Int) -> Int {
        max(minBlocks, (installBlocks + installBlocksPerRollbackBlock - 1) / installBlocksPerRollbackBlock)
    }
}

public struct ReportOrigin: Sendable, Equatable {
    public let network: String
    public let block: String

    public init(network: String, block: String) {
        self.network = network
        self.block = block
    }
}

/// Proof that this service handed patch N to a device ID: 128 bits of HMAC-SHA256, under the
/// registry's receipt secret, over `hotpatch-receipt-v1|app|appVersion|channel|patch|deviceID`.
/// patchd sends it as `X-Patch-Receipt` with the bundle (a target download or the simple
/// check's 200) when the request names its device; PatchClient keeps it with the installed
/// patch and puts it on each event about that patch. Minting evidence for a device ID so takes
/// a download under that ID, and the per-network budgets bound how many IDs a network mints.
public struct ReportReceipt: Sendable {
    let key: [UInt8]

    public init(key: [UInt8]) { self.key = key }

    public func receipt(app: String, appVersion: String, channel: String, patch: Int, deviceID: String) -> String {
        let text = "hotpatch-receipt-v1|\(app)|\(appVersion)|\(channel)|\(patch)|\(deviceID)"
        return Hex.encode(Array(Digest.hmacSHA256(key: key, Array(text.utf8)).prefix(16)))
    }

    /// Constant-time in the receipt's bytes: a sender learns nothing from how fast a wrong one fails.
    public func verify(_ presented: String?, app: String, appVersion: String, channel: String, patch: Int, deviceID: String) -> Bool {
        guard let presented else { return false }
        let expected = Array(receipt(app: app, appVersion: appVersion, channel: channel, patch: patch, deviceID: deviceID).utf8)
        let given = Array(presented.utf8)
        guard given.count == expected.count else { return false }
        return zip(given, expected).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }
}

extension Registry {
    /// The secret receipts are made with, created on first use and shared by every instance
    /// of a PostgreSQL registry (a receipt from one verifies on another). Whoever can read the
    /// registry can mint receipts; they can change its figures anyway.
    public func reportReceipts() throws(RegistryError) -> ReportReceipt {
        let stored = try read { () throws(StorageError) in
            try db.query("SELECT value FROM registry_secrets WHERE name = 'report_receipts'") { $0.text(0) }.first
        }
        if let stored, let key = Hex.decode(stored), key.count == 32 { return ReportReceipt(key: key) }
        let fresh: [UInt8]
        do { fresh = try SecureRandom.bytes(32) } catch { throw .internalError("no random bytes for the receipt secret: \(error)") }
        let value = try write { () throws -> String in
            try db.run("INSERT INTO registry_secrets(name, value) VALUES ('report_receipts', ?) ON CONFLICT(name) DO NOTHING", [.text(Hex.encode(fresh))])
            return try db.query("SELECT value FROM registry_secrets WHERE name = 'report_receipts'") { $0.text(0) }.first ?? ""
        }
        guard let key = Hex.decode(value), key.count == 32 else { throw .internalError("a corrupt row in registry_secrets") }
        return ReportReceipt(key: key)
    }
}

/// The hour's budgets one report group uses, read once per (app, kind, scope) and written
/// back once at the end of the group's transaction (`flush`), so a group of 32 reports from
/// one network costs two rows' reads and writes, not 32 × 100.
struct ReportBudget {
    private struct Key: Hashable {
        let app: String
        let kind: String
        let scope: String
    }

    let hour: String
    private let db: any SQLStore
    private var used: [Key: (stored: Int, now: Int)] = [:]

    init(db: any SQLStore, hour: String) {
        self.db = db
        self.hour = hour
    }

    /// One unit of each scope's budget, or none when any scope is spent.
    mutating func take(app: String, kind: String, scopes: [(scope: String, limit: Int)]) throws -> Bool {
        var keys: [Key] = []
        for (scope, limit) in scopes {
            let key = Key(app: app, kind: kind, scope: scope)
            if used[key] == nil {
                let stored = try db.query("SELECT used FROM report_budget WHERE app = ? AND kind = ? AND scope = ? AND hour = ?",
                                          [.text(app), .text(kind), .text(scope), .text(hour)]) { Int($0.int(0)) }.first ?? 0
                used[key] = (stored, stored)
            }
            guard let current = used[key], current.now < limit else { return false }
            keys.append(key)
        }
        for key in keys { used[key]!.now += 1 }
        return true
    }

    func flush() throws {
        for (key, value) in used where value.now != value.stored {
            try db.run("""
                INSERT INTO report_budget(app, kind, scope, hour, used) VALUES (?,?,?,?,?)
                ON CONFLICT(app, kind, scope, hour) DO UPDATE SET used = excluded.used
                """, [.text(key.app), .text(key.kind), .text(key.scope), .text(hour), .int(Int64(value.now))])
        }
    }
}
