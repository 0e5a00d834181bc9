import Foundation
import HotpatchTestSupport
import PatchCore
import Testing
@testable import PatchRegistry

/// The mapping every registry test goes through (Tests/Support): if it gave two tests one
/// schema, or a reopened directory another, suites would pass or fail for the wrong reason.
@Suite("Test backend: data directory → registry")
struct TestBackendTests {
    @Test("one directory is one schema (however the path is spelt), two directories are two; the name is a plain identifier")
    func schemaNames() {
        let a = URL(fileURLWithPath: "/tmp/hotpatch-test-1/data", isDirectory: true)
        #expect(TestBackend.schema(for: a) == TestBackend.schema(for: URL(fileURLWithPath: "/tmp/hotpatch-test-1/./data/")))
        #expect(TestBackend.schema(for: a) != TestBackend.schema(for: URL(fileURLWithPath: "/tmp/hotpatch-test-2/data")))
        let name = TestBackend.schema(for: a)
        #expect(name.utf8.count <= 63 && name.hasPrefix("reg_") && name.allSatisfy { $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "_") })
    }

    @Test("the database is the backend under test: SQLite under the directory, or PostgreSQL in the directory's schema")
    func backend() throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("hotpatch-test-\(UUID().uuidString)/data")
        switch try TestBackend.database(dataDirectory: data) {
        case .sqlite(let directory):
            #expect(!TestBackend.isPostgres && directory == data)
            #expect(try TestBackend.arguments(dataDirectory: data.path) == ["--data", data.path])
        case .postgres(let url):
            #expect(TestBackend.isPostgres && url.hasSuffix("options=-csearch_path%3D" + TestBackend.schema(for: data)))
            #expect(try TestBackend.arguments(dataDirectory: data.path) == ["--database", url])
        }
    }

    @Test("a second registry on the same directory sees the first one's app; one on another directory does not")
    func reopenSeesTheSameRegistry() throws {
        let one = try TempRegistry(), two = try TempRegistry()
        _ = try one.app("demo")
        let again = try TestBackend.registry(dataDirectory: one.root.appendingPathComponent("data"), keysDirectory: one.root.appendingPathComponent("keys"))
        #expect(try again.apps().map(\.name.rawValue) == ["demo"])
        #expect(try two.registry.apps().isEmpty)
        #expect(again.database.isPostgres == TestBackend.isPostgres)
    }
}
