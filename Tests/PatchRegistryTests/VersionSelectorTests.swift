import Foundation
import Testing
import PatchCore
@testable import PatchRegistry

/// `publish --app-version`'s grammar (issue 44): what parses, what it matches, what it expands
/// to, and what is refused with which words.
@Suite("Version selectors")
struct VersionSelectorTests {
    func versions(_ names: String...) throws -> [AppVersion] { try names.map { try AppVersion($0) } }

    @Test("one version is that exact string and expands to itself, known or not: the publish of today")
    func single() throws {
        let selector = try VersionSelector("2.3")
        #expect(selector.single?.rawValue == "2.3" && !selector.expands)
        #expect(selector.expand(known: []).map(\.rawValue) == ["2.3"])
        // 2.3.0 is another version: an exact name never matches it.
        #expect(selector.expand(known: try versions("2.3.0", "2.3.1")).map(\.rawValue) == ["2.3"])
        #expect(try VersionSelector("10.0.0-beta.2").single?.rawValue == "10.0.0-beta.2")
    }

    @Test("a list is every version as given, once each, in version order")
    func list() throws {
        let selector = try VersionSelector("2.3.2, 2.3,2.3.1,2.3")
        #expect(selector.single == nil && !selector.expands)
        #expect(selector.expand(known: []).map(\.rawValue) == ["2.3", "2.3.1", "2.3.2"])
        #expect(selector.description == "2.3.2,2.3,2.3.1,2.3")
    }

    @Test("ranges compare numbers, missing components as 0; space is AND; each known version matched once")
    func ranges() throws {
        let known = try versions("2.2.9", "2.3", "2.3.0", "2.3.1", "2.3.10", "2.4", "2.4.0-beta.1", "3.0")
        #expect(try VersionSelector(">=2.3 <2.4").expand(known: known).map(\.rawValue) == ["2.3", "2.3.0", "2.3.1", "2.3.10"])
        #expect(try VersionSelector(">= 2.3  < 2.4").description == ">=2.3 <2.4")
        #expect(try VersionSelector(">2.3 <=2.4").expand(known: known).map(\.rawValue) == ["2.3.1", "2.3.10", "2.4"])
        #expect(try VersionSelector("=2.3").expand(known: known).map(\.rawValue) == ["2.3", "2.3.0"])
        #expect(try VersionSelector("<2.3").expand(known: known).map(\.rawValue) == ["2.2.9"])
        #expect(try VersionSelector(">=2.4 <2.3").expand(known: known).isEmpty)
        // A range and a list together; the exact one is kept even when unknown.
        #expect(try VersionSelector(">=3,2.5").expand(known: known).map(\.rawValue) == ["2.5", "3.0"])
    }

    @Test("X.Y.* is every known release version whose leading numbers are X.Y (2.3 counts as 2.3.0)")
    func wildcard() throws {
        let known = try versions("2", "2.3", "2.3.0", "2.3.4.1", "2.30", "2.4", "2.3.1-rc.1")
        #expect(try VersionSelector("2.3.*").expand(known: known).map(\.rawValue) == ["2.3", "2.3.0", "2.3.4.1"])
        #expect(try VersionSelector("2.*").expand(known: known).map(\.rawValue) == ["2", "2.3", "2.3.0", "2.3.4.1", "2.4", "2.30"])
        #expect(try VersionSelector("2.0.*").expand(known: known).map(\.rawValue) == ["2"])
    }

    @Test("a pre-release is never in a range or wildcard, only named exactly")
    func prerelease() throws {
        let beta = try AppVersion("2.4.0-beta.1")
        #expect(!(try VersionSelector(">=2.3")).matches(beta))
        #expect(!(try VersionSelector("2.4.*")).matches(beta))
        #expect(try VersionSelector("2.4.0-beta.1,2.4.*").expand(known: [beta]).map(\.rawValue) == ["2.4.0-beta.1"])
    }

    @Test("malformed selectors are refused with what was wrong and the forms that work", arguments: [
        ("", "an empty item"), ("2.3,", "an empty item"), (",2.3", "an empty item"),
        ("*", "`*` alone"), ("2.*.*", "numbers followed by .*"), ("2.3.4.5.*", "numbers followed by .*"), (".*", "numbers then .*"),
        ("2.3 2.4", "has a space"), (">=2.3-beta", "pre-release"), (">=", "is not a version"), (">=x", "is not a version"),
        ("~2.3", "invalid app version"), ("^2.3", "invalid app version"), ("2.03", "invalid app version"), (">=2.3 ~2.4", "does not start with"),
        (">=2.3<2.4", "is not a version"),
    ])
    func malformed(text: String, why: String) {
        #expect {
            _ = try VersionSelector(text)
        } throws: { error in
            let message = (error as? ValidationError)?.message ?? ""
            return message.contains(why) && message.contains("'>=2.3 <2.4'") && message.hasPrefix("invalid app version selector")
        }
    }

    @Test("bounds: 1,024 bytes, 64 items, 8 comparisons")
    func bounds() throws {
        #expect(throws: ValidationError.self) { try VersionSelector(String(repeating: "1,", count: 600) + "1") }
        #expect(throws: ValidationError.self) { try VersionSelector((1...65).map(String.init).joined(separator: ",")) }
        #expect(try VersionSelector((1...64).map(String.init).joined(separator: ",")).alternatives.count == 64)
        #expect(throws: ValidationError.self) { try VersionSelector(Array(repeating: ">=1", count: 9).joined(separator: " ")) }
        #expect(try VersionSelector(Array(repeating: ">=1", count: 8).joined(separator: " ")).expands)
    }

    @Test("the warning names what devices ask for and what they do not, and the 2.3 / 2.3.0 mix-up outright")
    func warning() throws {
        let asked = [AskedVersion(appVersion: try AppVersion("2.3"), checks: 90, lastDay: "2026-12-07"),
                     AskedVersion(appVersion: try AppVersion("2.3.1"), checks: 10, lastDay: "2026-12-07")]
        let warning = try #require(VersionWarning(versions: try versions("2.3.0"), asked: asked, strict: false))
        #expect(warning.message == "devices ask for 2.3 and 2.3.1, none for 2.3.0 (2.3 and 2.3.0 are different versions: apps send what they send)")
        #expect(VersionWarning(versions: try versions("2.3", "2.3.1"), asked: asked, strict: true) == nil)
        #expect(VersionWarning(versions: try versions("2.4", "2.3"), asked: asked, strict: false)?.message == "devices ask for 2.3 and 2.3.1, none for 2.4")
        // Nothing asked at all: no mix-up to point at, unless strict.
        #expect(VersionWarning(versions: try versions("2.3"), asked: [], strict: false) == nil)
        #expect(VersionWarning(versions: try versions("2.3"), asked: [], strict: true)?.message.hasPrefix("no device has checked for any version") == true)
        let many = try (1...10).map { AskedVersion(appVersion: try AppVersion("1.\($0)"), checks: 100 - $0, lastDay: "2026-12-07") }
        #expect(VersionWarning(versions: try versions("2.0"), asked: many, strict: false)?.message
            == "devices ask for 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8 and 2 more, none for 2.0")
    }
}
