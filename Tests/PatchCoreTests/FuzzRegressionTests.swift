import Foundation
import PatchCore
import PatchSigning
import Testing

/// Inputs libFuzzer stopped on (`make fuzz`, docs/SECURITY.md "Fuzzing"), kept as tests once
/// fixed. The files are in fuzz/crashes-fixed/<Target>/ (`make fuzz` replays them all); each
/// behaviour is spelled out by a named test, and the identifier inputs are also replayed
/// here from their files, since their invariants need no harness.
@Suite("Fuzz regressions: identifiers")
struct IdentifierFuzzRegressionTests {
    /// FuzzIdentifiers stopped on "0.." (fuzz/crashes-fixed/FuzzIdentifiers/app-name-inner-dots)
    /// under an invariant stricter than the grammar: PROTOCOL.md §8 allows `..` inside a name
    /// (`a..b`). What must hold, and does, is that such a name is one ordinary path component.
    @Test("a name with dots inside stays one path component, on disk and in a URL", arguments: ["0..", "a..b", "a...", "demo.."])
    func innerDotsStayOneComponent(_ name: String) throws {
        let app = try AppName(name)
        let base = URL(fileURLWithPath: "/registry/keys", isDirectory: true)
        let joined = base.appendingPathComponent(app.rawValue).standardizedFileURL
        #expect(joined.deletingLastPathComponent() == base && joined.lastPathComponent == name)
        let url = try #require(URL(string: "https://patches.example/v1/apps/\(app)/metadata/timestamp.json")?.standardized)
        #expect(url.path == "/v1/apps/\(name)/metadata/timestamp.json")
    }

    @Test("pre-releases that differ only in leading zeros are ordered, not equal")
    func prereleaseLeadingZeros() throws {
        let a = try AppVersion("7-07"), b = try AppVersion("7-7")
        #expect(a != b)
        #expect((a < b) != (b < a))
        // Precedence first: both sort before the release and after 7-6.
        for v in [a, b] {
            #expect(v < (try AppVersion("7")))
            #expect((try AppVersion("7-6")) < v)
        }
        // Equal numbers fall back to the text, so the order is total and any shuffle sorts alike.
        let sorted = try ["7-7", "7-8", "7-07", "7-6", "7-007"].map(AppVersion.init).sorted().map(\.rawValue)
        #expect(sorted == ["7-6", "7-007", "7-07", "7-7", "7-8"])
    }

    @Test("every saved FuzzIdentifiers crash input now holds the invariants", arguments: try FuzzCrashes.inputs("FuzzIdentifiers"))
    func replay(_ input: FuzzCrashes.Input) {
        let texts = input.records.map { String(decoding: $0, as: UTF8.self) }
        let names = texts.compactMap { try? AppName($0) }
        let versions = texts.compactMap { try? AppVersion($0) }
        for raw in names.map(\.rawValue) + versions.map(\.rawValue) {
            #expect(raw != "." && raw != ".." && !raw.contains("/") && !raw.contains("\\"), "\(input.name): \(raw)")
        }
        expectTotalOrder(names, input.name)
        expectTotalOrder(versions, input.name)
    }

    private func expectTotalOrder<T: Comparable>(_ values: [T], _ name: String) {
        for a in values {
            for b in values {
                #expect([a < b, a == b, b < a].filter { $0 }.count == 1, "\(name): \(a) and \(b)")
            }
        }
    }
}

@Suite("Fuzz regressions: TUF metadata")
struct TUFFuzzRegressionTests {
    /// FuzzTUF trapped on `root.version + 1` (fuzz/crashes-fixed/FuzzTUF/root-version-overflow):
    /// a root at Int64.max was trusted, then the next root's expected version overflowed.
    @Test("a root at the largest version is refused, pinned or as an update, instead of overflowing")
    func rootVersionAtTheLimit() throws {
        let repo = try TestRepository()
        let malformed = TUFError.malformed(role: "root", reason: "version \(Int64.max) leaves no version for the next root")
        #expect(throws: malformed) { try TrustedMetadata(trustedRoot: repo.root(version: .max), referenceTime: TestRepository.now) }

        var client = try TrustedMetadata(trustedRoot: repo.root(version: .max - 1), referenceTime: TestRepository.now)
        #expect(throws: malformed) { try client.updateRoot(repo.root(version: .max)) }
        #expect(client.root.body.version == .max - 1)
        #expect(throws: TUFError.versionMismatch(role: "root", expected: .max, got: 1)) { try client.updateRoot(repo.root(version: 1)) }
    }
}

/// The crash inputs of one fuzz target, from fuzz/crashes-fixed/<Target>/ in the repository.
enum FuzzCrashes {
    struct Input: CustomTestStringConvertible, Sendable {
        let name: String
        let bytes: [UInt8]
        /// Harness inputs are records separated by 0xFF (fuzz/FuzzSupport).
        var records: [[UInt8]] { bytes.split(separator: 0xFF, omittingEmptySubsequences: false).map(Array.init) }
        var testDescription: String { name }
    }

    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("fuzz/crashes-fixed")

    static func inputs(_ target: String) throws -> [Input] {
        let folder = directory.appendingPathComponent(target)
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { !$0.hasPrefix(".") }.sorted()
        return try names.map { Input(name: "\(target)/\($0)", bytes: Array(try Data(contentsOf: folder.appendingPathComponent($0)))) }
    }
}
