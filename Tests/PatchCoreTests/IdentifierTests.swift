import PatchCore
import Testing

@Suite("App names")
struct AppNameTests {
    @Test("accepts lowercase names that are safe path components", arguments: [
        "demo", "a", "0", "shop-app", "my.app_v2", "com.example.shop", "9lives", String(repeating: "a", count: 64),
    ])
    func accepts(_ name: String) throws {
        #expect(try AppName(name).rawValue == name)
    }

    @Test("refuses names that could escape a directory, hide a file or alias another", arguments: [
        "", ".", "..", ".hidden", "a/b", "a\\b", "%2e", "%2e%2e", "a\0b", "Demo", "DEMO", "-app", "_app",
        "app name", "café", "app\n", String(repeating: "a", count: 65), "a:b", "a?b",
    ])
    func refuses(_ name: String) {
        #expect(throws: ValidationError.self) { try AppName(name) }
    }

    @Test("error messages neutralise control characters and cut long input")
    func sanitisesErrors() {
        do {
            _ = try AppName("evil\nINFO forged log line")
            Issue.record("accepted a newline")
        } catch {
            #expect(!error.message.contains("\n"))
            #expect(error.message.contains("evil?INFO"))
        }
        do {
            _ = try AppName(String(repeating: "X", count: 500))
            Issue.record("accepted 500 characters")
        } catch {
            #expect(error.message.count < 300)
        }
    }

    @Test("orders names by their bytes")
    func ordersByBytes() throws {
        let names = try ["shop", "demo", "demo-2", "a", "demo.x"].map(AppName.init)
        #expect(names.sorted().map(\.rawValue) == ["a", "demo", "demo-2", "demo.x", "shop"])
    }
}

@Suite("App versions")
struct AppVersionTests {
    @Test("accepts numeric versions with an optional pre-release", arguments: [
        "2.3", "2.3.1", "10.0.0-beta.2", "1", "0", "0.0.1", "1.2.3.4", "2.3-rc1", "1.0.0-x-y.7", "999999999.0",
    ])
    func accepts(_ version: String) throws {
        #expect(try AppVersion(version).rawValue == version)
    }

    @Test("refuses anything that is not such a version", arguments: [
        "", ".", "..", "2.03", "02.3", "a/b", "%2e", "2.3\0", "\02.3", "2..3", ".2", "2.", "1.2.3.4.5", "v2.3", "2.3-",
        "2.3-beta..1", "2.3-beta_1", "2.3-beta/1", "-1", " 2.3", "2.3\n", "2.3+build", "1234567890", "2.3-é",
        "1.2.3-" + String(repeating: "a", count: 60), "2,3",
    ])
    func refuses(_ version: String) {
        #expect(throws: ValidationError.self) { try AppVersion(version) }
    }

    @Test("splits numbers and pre-release identifiers")
    func parsesComponents() throws {
        let version = try AppVersion("10.0.0-beta.2")
        #expect(version.numbers == [10, 0, 0])
        #expect(version.prerelease == ["beta", "2"])
        let release = try AppVersion("2.3")
        #expect(release.numbers == [2, 3])
        #expect(release.prerelease.isEmpty)
    }

    @Test("orders by semantic-version precedence")
    func ordersLikeSemver() throws {
        // The precedence example of semver.org section 11, then numeric components.
        let ordered = [
            "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11",
            "1.0.0-rc.1", "1.0.0", "1.0.1", "1.2", "2.3", "2.3.1", "2.10", "10.0.0-beta.2", "10.0.0",
        ]
        let versions = try ordered.map(AppVersion.init)
        #expect(versions.shuffled().sorted().map(\.rawValue) == ordered)
        for (lower, higher) in zip(versions, versions.dropFirst()) {
            #expect(lower < higher, "\(lower) should sort before \(higher)")
            #expect(!(higher < lower))
        }
    }

    @Test("orders versions of equal precedence by their text, so the order is total")
    func breaksTiesByText() throws {
        let short = try AppVersion("2.3")
        let long = try AppVersion("2.3.0")
        #expect(short != long)
        #expect(short < long)
        #expect(!(long < short))
    }
}
