import Foundation
import Testing
@testable import PatchRegistry

@Suite("db copy's table list")
struct CopyTests {
    @Test("names every table of the schema except the ones each backend keeps for itself, parents before children")
    func everyTableIsCopied() throws {
        let t = try TempRegistry()
        let own: Set<String> = ["schema_info", "registry_changes", "registry_identity", "schema_script", "upkeep_lease"]
        let names = Registry.copiedTables.map(\.name)
        #expect(Set(names) == (try t.registry.tableNames()).subtracting(own), "a table added to Schema must be added to Registry.copiedTables")
        #expect(names.firstIndex(of: "apps")! < names.firstIndex(of: "patches")!)
        #expect(names.firstIndex(of: "blobs")! < names.firstIndex(of: "patches")!)
        #expect(names.firstIndex(of: "patches")! < names.firstIndex(of: "patch_conditions")!)
    }
}
