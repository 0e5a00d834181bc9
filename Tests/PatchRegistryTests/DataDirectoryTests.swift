import Foundation
import Testing
import HotpatchTestSupport
import PatchCore
@testable import PatchRegistry

@Suite("Data directory permissions",
       .enabled(if: !TestBackend.isPostgres, "the modes of the SQLite data directory and registry.sqlite: a PostgreSQL registry has no data directory (the server's files and the database's grants decide who reads it)"))
struct DataDirectoryTests {
    @Test("a registry opened in a fresh directory is private: 0700 directory, 0600 file, nothing to report")
    func freshIsPrivate() throws {
        let r = try TempRegistry()
        _ = try r.app("demo")
        let data = r.root.appendingPathComponent("data")
        #expect(DataDirectory.exposures(of: data).isEmpty)
        var info = stat()
        #expect(stat(data.appendingPathComponent("registry.sqlite").path, &info) == 0 && info.st_mode & 0o777 == 0o600)
    }

    @Test("an exposed directory is reported once per process, however often a registry is opened there")
    func warnsOnce() throws {
        let r = try TempRegistry()
        let data = r.root.appendingPathComponent("data")
        chmod(data.path, 0o755)
        #expect(DataDirectory.exposures(of: data).count == 1)
        #expect(DataDirectory.warnIfExposed(data))
        #expect(!DataDirectory.warnIfExposed(data))
        _ = try Registry(dataDirectory: data, keysDirectory: r.root.appendingPathComponent("keys"))
        #expect(!DataDirectory.warnIfExposed(data))
    }
}
