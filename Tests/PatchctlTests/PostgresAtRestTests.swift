import Foundation
import HotpatchTestSupport
import Testing

/// The PostgreSQL twin of "Registry file permissions": there the token hashes, the audit log
/// and every bundle are in the database, so what must hold is that none of it lands in a file
/// beside the process, and that the tables are the owner's alone (no grant to PUBLIC, as
/// registry.sqlite is 0600).
@Suite("A PostgreSQL registry at rest",
       .enabled(if: TestBackend.isPostgres, "the PostgreSQL twin of the file-mode suite: runs in the HOTPATCH_TEST_REGISTRY=postgres pass"))
struct PostgresAtRestTests {
    @Test("apps create, tokens, publish and list on --database write nothing under $HOTPATCH_DATA or ./data, and grant nothing to PUBLIC")
    func nothingOnDiskNothingPublic() throws {
        let w = try Workspace()
        // An exported HOTPATCH_DATA must not pull the registry (or an empty file) back to disk.
        let environment = ["HOTPATCH_DATA": w.path("data")]
        #expect(try w.run(["apps", "create", "demo"], environment: environment).status == 0)
        #expect(try w.run(["tokens", "create", "--app", "demo", "--role", "publisher", "--name", "ci"], environment: environment).status == 0)
        let published = try w.run(["publish", "--app", "demo", "--app-version", "1.0", try w.write("a.js", "a()")], environment: environment)
        #expect(published.status == 0, "\(published.stderr)")
        let listed = try w.run(["list"], environment: environment)
        #expect(listed.status == 0 && !listed.stderr.contains("warning"), "\(listed.stderr)")
        #expect(!FileManager.default.fileExists(atPath: w.path("data")))

        let data = URL(fileURLWithPath: w.path("data"))
        let tables = try TestBackend.tables(dataDirectory: data)
        #expect(tables.contains("tokens") && tables.contains("blobs") && tables.contains("audit"))
        let grants = try TestBackend.rows("""
            SELECT table_name, privilege_type FROM information_schema.role_table_grants
            WHERE table_schema = current_schema() AND grantee = 'PUBLIC'
            """, dataDirectory: data)
        #expect(grants.isEmpty, "\(grants)")
    }
}
