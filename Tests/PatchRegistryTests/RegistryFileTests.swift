import Foundation
import Testing
import HotpatchTestSupport
import PatchCore
@testable import PatchRegistry

/// Only `create: true` makes a registry; a missing, empty or schema-less one is "no registry"
/// and is left as it was (issue 21, item 2).
@Suite("Opening a registry: only create: true makes one")
struct RegistryOpeningTests {
    /// A new data directory beside the fixture's, and where its registry.sqlite would be.
    static func dataDirectory(_ name: String, in t: TempRegistry) throws -> (URL, URL) {
        let data = t.root.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
        return (data, data.appendingPathComponent("registry.sqlite"))
    }

    @Test("Registry's default opens only an existing registry: a new directory, schema or database is refused and left as it was")
    func defaultRefusesMissing() throws {
        let t = try TempRegistry()
        let fresh = t.root.appendingPathComponent("fresh")
        let database = try TestBackend.database(dataDirectory: fresh)
        let error = try #require(throws: RegistryError.self) { try Registry(database: database, keysDirectory: t.root.appendingPathComponent("keys")) }
        #expect(error.description.hasPrefix("no registry at "))
        #expect(error.description.contains("patchctl apps create NAME"))
        #expect(!FileManager.default.fileExists(atPath: fresh.path))
        if TestBackend.isPostgres { #expect(try TestBackend.tables(dataDirectory: fresh) == [], "no table was created in the empty schema") }
        _ = try Registry(database: TestBackend.database(dataDirectory: t.root.appendingPathComponent("data")), keysDirectory: t.root.appendingPathComponent("keys"))
    }

    @Test("a zero-length registry.sqlite is no registry, and stays 0 bytes with no -wal beside it",
          .enabled(if: !TestBackend.isPostgres, "about the SQLite file"))
    func emptyFileIsNoRegistry() throws {
        let t = try TempRegistry()
        let (data, file) = try Self.dataDirectory("emptied", in: t)
        #expect(FileManager.default.createFile(atPath: file.path, contents: nil))
        let error = try #require(throws: RegistryError.self) { try Registry(dataDirectory: data, keysDirectory: t.root.appendingPathComponent("keys")) }
        #expect(error.description.contains("no registry at \(data.path) (its registry.sqlite is empty)"))
        #expect(error.description.contains("patchctl apps create NAME"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: data.path) == ["registry.sqlite"])
        #expect(try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int == 0)
    }

    @Test("a SQLite file without the registry's tables is no registry, and gets none",
          .enabled(if: !TestBackend.isPostgres, "about the SQLite file"))
    func foreignFileIsNoRegistry() throws {
        let t = try TempRegistry()
        let (data, file) = try Self.dataDirectory("other", in: t)
        try SQLiteStore(path: file.path).execute("CREATE TABLE unrelated(x)")
        #expect(throws: RegistryError.self) { try Registry(dataDirectory: data, keysDirectory: t.root.appendingPathComponent("keys")) }
        let tables = try SQLiteStore(path: file.path, create: false).query("SELECT name FROM sqlite_master WHERE type = 'table'") { $0.text(0) }
        #expect(tables == ["unrelated"])
    }
}

/// A SQLite registry file deleted or replaced under an open registry: nothing is acknowledged
/// into it (issue 21, item 1).
@Suite("The registry file deleted or replaced while open",
       .enabled(if: !TestBackend.isPostgres, "about the SQLite file: a PostgreSQL registry has no file to lose"))
struct RegistryFileReplacedTests {
    static func isReplaced(_ error: RegistryError) -> Bool {
        guard case .storage(let storage) = error else { return false }
        return storage.kind == .replaced && error.description.contains("deleted or replaced") && !error.isCallerError
    }

    @Test("a deleted file (rm registry.sqlite*): a write is refused with a clear RegistryError, and the read health check fails")
    func deleted() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        let data = t.root.appendingPathComponent("data")
        for name in DataDirectory.files { try? FileManager.default.removeItem(at: data.appendingPathComponent(name)) }
        let error = try #require(throws: RegistryError.self) { try t.publish(app, "2.3", "lost()") }
        #expect(Self.isReplaced(error), "\(error)")
        #expect(error.description.contains(data.appendingPathComponent("registry.sqlite").path))
        #expect(throws: RegistryError.self) { try t.registry.checkReadable() }
    }

    @Test("another file moved over the path: a write is refused; the original moved back is written again, without the refused change")
    func replacedThenRestored() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        try t.publish(app, "2.3", "one()")
        let file = t.root.appendingPathComponent("data/registry.sqlite")
        let aside = t.root.appendingPathComponent("data/registry.sqlite.aside")
        let other = try TempRegistry()
        _ = try other.app("other")
        try FileManager.default.moveItem(at: file, to: aside)
        #expect(rename(other.root.appendingPathComponent("data/registry.sqlite").path, file.path) == 0)
        let error = try #require(throws: RegistryError.self) { try t.publish(app, "2.3", "two()") }
        #expect(Self.isReplaced(error), "\(error)")
        #expect(throws: RegistryError.self) { try t.registry.checkReadable() }

        #expect(rename(aside.path, file.path) == 0)
        #expect(try t.registry.checkReadable() == 1)
        #expect(try t.registry.patches(app: app, appVersion: nil, activeOnly: false).map(\.number) == [1], "the refused publish was rolled back")
        #expect(try t.publish(app, "2.3", "two()").number == 2)
    }
}
