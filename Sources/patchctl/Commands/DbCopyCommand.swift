import Foundation
import HotpatchCLI
import PatchCore
import PatchRegistry

/// `patchctl db copy --from DIR|URL --to DIR|URL`: moves a registry between SQLite and
/// PostgreSQL (Registry.copy), then proves the copy: the audit chain's head and event count
/// must be the same on both, or the command fails (exit 1).
struct DbCopyCommand: Command {
    static let spec = CommandSpec("db copy", summary: "Copy a registry between SQLite (a data directory) and PostgreSQL (a postgres:// URL); the target must be empty",
                                  options: [.value("--from", "DIR|URL", "the registry to copy: a data directory or a postgres:// URL").required,
                                            .value("--to", "DIR|URL", "an empty registry to copy into: a new data directory or a postgres:// URL (an empty database or schema)").required,
                                            .flag("--json", "print JSON"),
                                            .value("--keys", "DIR", "key directory (default ./keys, or $HOTPATCH_KEYS): not copied; both registries use it")])

    static func run(_ arguments: Arguments) throws(CLIError) {
        let keys = URL(fileURLWithPath: arguments.value("--keys") ?? ProcessInfo.processInfo.environment["HOTPATCH_KEYS"] ?? "keys", isDirectory: true)
        let from = try location(arguments.value("--from") ?? "")
        let to = try location(arguments.value("--to") ?? "")
        do {
            let source = try Registry(database: from, keysDirectory: keys, create: false)
            let before = try source.verifyAudit()
            guard case .intact(let events, let head) = before else {
                throw RegistryError.invalidInput("the source's audit chain is broken (\(before)); not copying it: investigate with `patchctl audit --verify`")
            }
            let created = Self.newSQLiteFiles(to)
            let target = try Registry(database: to, keysDirectory: keys, create: true)
            let report: Registry.CopyReport
            do { report = try Registry.copy(from: source, to: target) } catch {
                // A refused copy changes nothing: not even an empty registry file is left.
                for file in created { try? FileManager.default.removeItem(at: file) }
                throw error
            }
            let after = try target.verifyAudit()
            let same = after == .intact(events: events, head: head)
            if arguments.flag("--json") {
                Output.json(["from": .string(from.description), "to": .string(to.description),
                             "rows": .object(Dictionary(uniqueKeysWithValues: report.rows.map { ($0.table, JSON.int(Int64($0.count))) })),
                             "audit": ["events": .int(Int64(events)), "head": .string(head), "sameOnTarget": .bool(same)]])
            } else {
                let counts = report.rows.filter { $0.count > 0 }.map { "\($0.count) \($0.table)" }.joined(separator: ", ")
                Output.line("copied \(report.total) rows from \(from) to \(to)\(counts.isEmpty ? "" : ": \(counts)")")
                Output.line("audit chain: \(events) events, head \(head) on both")
            }
            guard same else { throw CLIError.verificationFailed("the copy's audit chain differs from the source's (\(after)): do not use it") }
        } catch let error as CLIError {
            throw error
        } catch let error as RegistryError {
            throw error.cliError
        } catch { throw .failed("\(error)") }
    }

    /// The registry files opening `database` would create (none when it exists, or on PostgreSQL).
    private static func newSQLiteFiles(_ database: RegistryDatabase) -> [URL] {
        guard case .sqlite(let directory) = database else { return [] }
        let file = directory.appendingPathComponent("registry.sqlite")
        guard !FileManager.default.fileExists(atPath: file.path) else { return [] }
        return ["", "-wal", "-shm"].map { URL(fileURLWithPath: file.path + $0) }
    }

    /// A postgres:// URL, or a data directory.
    private static func location(_ text: String) throws(CLIError) -> RegistryDatabase {
        guard !text.isEmpty else { throw .usage("--from and --to need a data directory or a postgres:// URL") }
        if text.hasPrefix("postgres://") || text.hasPrefix("postgresql://") { return .postgres(text) }
        guard !text.contains("://") else { throw .usage("\(text.debugSanitized) is neither a data directory nor a postgres:// URL") }
        return .sqlite(dataDirectory: URL(fileURLWithPath: text, isDirectory: true))
    }
}
