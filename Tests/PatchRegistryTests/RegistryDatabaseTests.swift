import Foundation
import Testing
@testable import PatchRegistry

@Suite("--database: which registry, and no password in what is printed")
struct RegistryDatabaseTests {
    @Test("a postgres URL is PostgreSQL, nothing is SQLite under --data, anything else is refused")
    func resolves() throws {
        let data = URL(fileURLWithPath: "/srv/data", isDirectory: true)
        #expect(try RegistryDatabase.resolve(database: nil, dataDirectory: data) == .sqlite(dataDirectory: data))
        #expect(try RegistryDatabase.resolve(database: "", dataDirectory: data) == .sqlite(dataDirectory: data))
        #expect(try RegistryDatabase.resolve(database: "postgres://h/db", dataDirectory: data) == .postgres("postgres://h/db"))
        #expect(try RegistryDatabase.resolve(database: "postgresql://h/db", dataDirectory: data).isPostgres)
        for wrong in ["/srv/data", "mysql://h/db", "host=/tmp dbname=x", "sqlite:///srv/data"] {
            #expect(throws: RegistryError.self, "\(wrong)") { try RegistryDatabase.resolve(database: wrong, dataDirectory: data) }
        }
    }

    @Test("passwords are replaced in descriptions and error messages, in the user part and in the query")
    func redacts() throws {
        #expect(RegistryDatabase.postgres("postgres://u:s3cret@h:5432/db").description == "postgres://u:***@h:5432/db")
        #expect(RegistryDatabase.postgres("postgres://u@h/db?password=s3cret&sslmode=require").description == "postgres://u@h/db?password=***&sslmode=require")
        #expect(RegistryDatabase.postgres("postgres://u@h/db").description == "postgres://u@h/db")
        #expect(RegistryDatabase.hasPassword("postgres://u:x@h/db") && !RegistryDatabase.hasPassword("postgres://u@h/db"))
        let error = try #require(throws: RegistryError.self) {
            try RegistryDatabase.resolve(database: "mysql://u:s3cret@h/db", dataDirectory: URL(fileURLWithPath: "/d"))
        }
        #expect(!error.description.contains("s3cret"))
        let unreachable = try #require(throws: RegistryError.self) {
            try Registry(database: .postgres("postgres://u:s3cret@/db?host=/nonexistent-hotpatch&connect_timeout=2"), keysDirectory: URL(fileURLWithPath: "/nonexistent"))
        }
        #expect(!unreachable.description.contains("s3cret") && unreachable.description.contains("unreachable"), "\(unreachable)")
    }
}
