import Foundation
import PatchCore
import PatchSigning
import Testing

/// Spec 5.6.7, the targets search through delegated roles, as `Updater` runs it for
/// PatchClient and `patchctl verify`.
@Suite("TUF delegations: the targets search")
struct DelegationTests {
    typealias Repo = DelegatedRepository
    static let path = "2.3/1/main.js"

    /// Searches `repo` for `path` after a refresh; nil when the search finds nothing.
    func search(_ repo: Repo, _ path: String = path) async throws -> FoundTarget? {
        let (updater, trusted) = try await repo.refreshed(repo.publish())
        var state = trusted
        return try await updater.targetInfo(path: path, in: &state)
    }

    func searchError(_ repo: Repo, _ path: String = path) async throws -> UpdateError? {
        do { _ = try await search(repo, path) } catch let error as UpdateError { return error }
        return nil
    }

    @Test("a target listed by a delegated role is found there, fetched as {V}.{role}.json")
    func foundInDelegatedRole() async throws {
        var repo = try Repo()
        try repo.delegate("app-2.3", scope: .paths(["2.3/*/main.js"]))
        repo.list(Self.path, in: "app-2.3")
        let source = try repo.publish()
        var (updater, trusted) = try await repo.refreshed(source)
        let found = try #require(try await updater.targetInfo(path: Self.path, in: &trusted))
        #expect(found.role == "app-2.3")
        #expect(found.file == Repo.file())
        #expect(trusted.delegatedTargets["app-2.3"]?.body.version == 1)
        #expect(source.requests.contains(.metadata("1.app-2.3.json")))
        #expect(try await updater.targetInfo(path: "2.3/9/main.js", in: &trusted) == nil)
        // Top-level targets come first; the role already loaded is not downloaded again.
        #expect(source.requests.filter { $0 == .metadata("1.app-2.3.json") }.count == 1)
    }

    @Test("a role lists a path outside its paths: the search does not find it, the listing calls it unreachable")
    func outsidePathsRefused() async throws {
        var repo = try Repo()
        try repo.delegate("app-2.3", scope: .paths(["2.3/*/main.js"]))
        repo.list("2.4/1/main.js", in: "app-2.3")
        repo.list("2.3/1/x/main.js", in: "app-2.3")  // `*` does not cross a `/`
        repo.list(Self.path, in: "app-2.3")
        var (updater, trusted) = try await repo.refreshed(repo.publish())
        #expect(try await updater.targetInfo(path: "2.4/1/main.js", in: &trusted) == nil)
        #expect(try await updater.targetInfo(path: "2.3/1/x/main.js", in: &trusted) == nil)
        let listing = try await updater.listTargets(in: &trusted)
        #expect(listing.found.map(\.path) == [Self.path])
        #expect(listing.unreachable.map(\.path) == ["2.3/1/x/main.js", "2.4/1/main.js"])
    }

    @Test("preorder depth-first: a delegation's own delegations come before its next sibling")
    func preorder() async throws {
        var repo = try Repo()
        try repo.delegate("a", scope: .paths(["2.3/*/*"]))
        try repo.delegate("b", scope: .paths(["2.3/*/*"]))
        try repo.delegate("a-child", from: "a", scope: .paths(["2.3/1/*"]))
        repo.list(Self.path, in: "a-child", Repo.file("from a-child"))
        repo.list(Self.path, in: "b", Repo.file("from b"))
        #expect(try await search(repo)?.role == "a-child")
    }

    @Test("terminating: a matching terminating delegation ends the search, siblings after it are not consulted")
    func terminatingStops() async throws {
        var repo = try Repo()
        try repo.delegate("a", scope: .paths(["2.3/*/*"]), terminating: true)
        try repo.delegate("b", scope: .paths(["2.3/*/*"]))
        repo.list(Self.path, in: "b")
        #expect(try await search(repo) == nil)
        // Not matching, it terminates nothing.
        repo.bodies["targets"]!.delegations!.roles[0].scope = .paths(["2.4/*/*"])
        #expect(try await search(repo)?.role == "b")
        // Without terminating, b is found after a.
        repo.bodies["targets"]!.delegations!.roles[0] = DelegatedRole(name: "a", keyIDs: repo.signers["a"]!.map(\.tufKey.keyID),
                                                                      scope: .paths(["2.3/*/*"]))
        #expect(try await search(repo)?.role == "b")
    }

    @Test("path_hash_prefixes: a role is trusted for the paths whose sha256 starts with a listed prefix")
    func hashPrefixes() async throws {
        let hash = Digest.sha256Hex(Array(Self.path.utf8))
        var repo = try Repo()
        try repo.delegate("bin", scope: .pathHashPrefixes([String(hash.prefix(2))]))
        repo.list(Self.path, in: "bin")
        #expect(try await search(repo)?.role == "bin")
        let other = hash.first == "0" ? "1" : "0"
        repo.bodies["targets"]!.delegations!.roles[0].scope = .pathHashPrefixes([other + String(hash.dropFirst().prefix(1))])
        #expect(try await search(repo) == nil)
    }

    @Test("a delegated role signed by a key its delegator did not list is refused")
    func unlistedKeyRefused() async throws {
        var repo = try Repo()
        try repo.delegate("a", scope: .paths(["2.3/*/*"]))
        repo.list(Self.path, in: "a")
        repo.signers["a"] = [try Ed25519PrivateKey.generate()]
        #expect(try await searchError(repo) == .verification(.unsignedThreshold(role: "a", valid: 0, threshold: 1)))
        // The top-level targets keys sign nothing for a delegated role either.
        repo.signers["a"] = repo.repo.keys(.targets)
        #expect(try await searchError(repo) == .verification(.unsignedThreshold(role: "a", valid: 0, threshold: 1)))
    }

    @Test("a delegated role signed below its threshold is refused")
    func belowThresholdRefused() async throws {
        var repo = try Repo()
        let keys = try (0..<2).map { _ in try Ed25519PrivateKey.generate() }
        try repo.delegate("a", scope: .paths(["2.3/*/*"]), threshold: 2, keys: keys)
        repo.list(Self.path, in: "a")
        #expect(try await search(repo)?.role == "a")
        repo.signers["a"] = [keys[0]]
        #expect(try await searchError(repo) == .verification(.unsignedThreshold(role: "a", valid: 1, threshold: 2)))
    }

    @Test("a delegated role whose version is not the one snapshot names is refused")
    func versionMismatchRefused() async throws {
        var repo = try Repo()
        try repo.delegate("a", scope: .paths(["2.3/*/*"]))
        repo.list(Self.path, in: "a")
        repo.pins["a"] = MetaFile(version: 2)  // served as 2.a.json, which says version 1
        #expect(try await searchError(repo) == .verification(.versionMismatch(role: "a", expected: 2, got: 1)))
    }

    @Test("a delegated role is pinned by snapshot's length and hashes")
    func pinnedBytes() async throws {
        var repo = try Repo()
        try repo.delegate("a", scope: .paths(["2.3/*/*"]))
        repo.list(Self.path, in: "a")
        repo.pins["a"] = MetaFile(version: 1, length: 10)
        guard case .tooLarge? = try await searchError(repo) else {
            Issue.record("a role longer than its signed length must be refused at the cap")
            return
        }
        repo.pins["a"] = MetaFile(version: 1, hashes: ["sha256": String(repeating: "0", count: 64)])
        #expect(try await searchError(repo) == .verification(.hashMismatch(what: "a metadata", algorithm: "sha256")))
        repo.pins["a"] = nil
        repo.bodies.removeValue(forKey: "a")  // delegated, but snapshot does not list it
        #expect(try await searchError(repo) == .verification(.malformed(role: "snapshot", reason: "no a.json for a delegated role")))
    }

    @Test("an expired delegated role is refused")
    func expiredRefused() async throws {
        var repo = try Repo()
        try repo.delegate("a", scope: .paths(["2.3/*/*"]))
        repo.list(Self.path, in: "a")
        repo.bodies["a"]!.expires = TestRepository.yesterday
        #expect(try await searchError(repo) == .verification(.expired(role: "a", expires: TUFTime.format(TestRepository.yesterday))))
    }

    @Test("rollback: a delegated role older than the trusted one, or a snapshot taking its version down, is refused")
    func rollbackRefused() async throws {
        var repo = try Repo()
        try repo.delegate("a", scope: .paths(["2.3/*/*"]))
        repo.list(Self.path, in: "a")
        repo.bodies["a"]!.version = 2
        repo.pins["a"] = MetaFile(version: 2)  // by version only, as python-tuf's repositories pin
        let (_, refreshed) = try await repo.refreshed(repo.publish())
        var trusted = refreshed
        let v2 = try #require(try repo.metadataFiles()["2.a.json"])
        try trusted.updateDelegatedTargets(v2, role: "a", delegator: "targets")

        var older = repo
        older.bodies["a"]!.version = 1
        let v1 = try #require(try older.metadataFiles()["2.a.json"])
        #expect(throws: TUFError.rollback(role: "a", trusted: 2, offered: 1)) {
            try trusted.updateDelegatedTargets(v1, role: "a", delegator: "targets")
        }
        // The next snapshot may not take a.json down, nor drop it.
        older.pins["a"] = nil
        older.snapshotVersion = 2
        let files = try older.metadataFiles()
        try trusted.updateTimestamp(try #require(files["timestamp.json"]))
        #expect(throws: TUFError.rollback(role: "a.json", trusted: 2, offered: 1)) {
            try trusted.updateSnapshot(try #require(files["2.snapshot.json"]))
        }
    }

    @Test("a delegation cycle ends: each role is visited once, and a long chain stops at the bound of 32 roles")
    func visitBound() async throws {
        var repo = try Repo()
        let keysA = try repo.delegate("a", scope: .paths(["*/*/*"]))
        let keysB = try repo.delegate("b", from: "a", scope: .paths(["*/*/*"]))
        try repo.delegate("a", from: "b", scope: .paths(["*/*/*"]), keys: keysA)
        try repo.delegate("b", from: "b", scope: .paths(["*/*/*"]), keys: keysB)
        let source = try repo.publish()
        var (updater, trusted) = try await repo.refreshed(source)
        #expect(try await updater.targetInfo(path: Self.path, in: &trusted) == nil)
        #expect(try await updater.listTargets(in: &trusted).found.isEmpty)
        let roleFetches = source.requests.filter { $0 == .metadata("1.a.json") || $0 == .metadata("1.b.json") }
        #expect(roleFetches.count == 2)

        var chain = try Repo()
        var delegator = "targets"
        for index in 1...40 {
            try chain.delegate("r\(index)", from: delegator, scope: .paths(["*/*/*"]))
            delegator = "r\(index)"
        }
        chain.list(Self.path, in: "r31")
        #expect(try await search(chain)?.role == "r31")  // targets + 31 roles: the 32nd visit
        chain.bodies["r31"]!.targets = [:]
        chain.list(Self.path, in: "r32")
        let chainSource = try chain.publish()
        var (chainUpdater, chainTrusted) = try await chain.refreshed(chainSource)
        #expect(try await chainUpdater.targetInfo(path: Self.path, in: &chainTrusted) == nil)
        #expect(chainTrusted.delegatedTargets.count == 31)
        #expect(!chainSource.requests.contains(.metadata("1.r32.json")))
    }

    @Test("listing: each path is answered as the search answers it; without delegations nothing more is fetched")
    func listing() async throws {
        var repo = try Repo()
        repo.list("2.3/1/main.js", in: "targets")
        var (updater, trusted) = try await repo.refreshed(repo.publish())
        let plain = try await updater.listTargets(in: &trusted)
        #expect(plain.found == [FoundTarget(path: "2.3/1/main.js", role: "targets", file: Repo.file())])

        try repo.delegate("a", scope: .paths(["2.3/*/main.js"]))
        repo.list("2.3/1/main.js", in: "a", Repo.file("shadowed"))
        repo.list("2.3/2/main.js", in: "a")
        let source = try repo.publish()
        (updater, trusted) = try await repo.refreshed(source)
        let listing = try await updater.listTargets(in: &trusted)
        #expect(listing.found.map { "\($0.role):\($0.path)" } == ["targets:2.3/1/main.js", "a:2.3/2/main.js"])
        #expect(listing.unreachable.map { "\($0.role):\($0.path)" } == ["a:2.3/1/main.js"])
    }

    @Test("role names are percent-encoded in file names, as python-tuf quotes them")
    func roleFileNames() async throws {
        var repo = try Repo()
        try repo.delegate("team/a b", scope: .paths(["2.3/*/*"]))
        repo.list(Self.path, in: "team/a b")
        let source = try repo.publish()
        var (updater, trusted) = try await repo.refreshed(source)
        #expect(try await updater.targetInfo(path: Self.path, in: &trusted)?.role == "team/a b")
        #expect(source.requests.contains(.metadata("1.team%2Fa%20b.json")))
    }
}

@Suite("TUF delegations: metadata")
struct DelegationMetadataTests {
    func targets(delegations: JSON) throws -> TargetsBody {
        try TargetsBody(signed: ["_type": "targets", "version": 1, "expires": "2030-01-01T00:00:00Z", "spec_version": "1.0.31",
                                 "targets": [:], "delegations": delegations])
    }

    static let role: [String: JSON] = ["name": "a", "keyids": [], "threshold": 1, "terminating": false, "paths": ["*"]]

    func delegating(_ role: [String: JSON]) throws -> TargetsBody { try targets(delegations: ["keys": [:], "roles": [.object(role)]]) }

    @Test("delegations parse field by field and re-encode to what was signed, unknown fields included")
    func roundTrip() throws {
        var role = Self.role
        role["x-note"] = "kept"
        let body = try targets(delegations: ["keys": [:], "roles": [.object(role)], "x-extra": 1])
        let delegated = try #require(body.delegations?.roles.first)
        #expect(delegated.name == "a" && delegated.threshold == 1 && !delegated.terminating && delegated.scope == .paths(["*"]))
        #expect(try TargetsBody(signed: body.signedJSON) == body)
        #expect(body.signedJSON["delegations"]?["x-extra"] == 1)
        #expect(body.signedJSON["delegations"]?["roles"]?.arrayValue?.first?["x-note"] == "kept")
    }

    @Test("refused: both or neither of paths and path_hash_prefixes, no terminating, a top-level name, a name twice, succinct_roles")
    func strict() throws {
        var both = Self.role
        both["path_hash_prefixes"] = ["ab"]
        var neither = Self.role
        neither["paths"] = nil
        var noTerminating = Self.role
        noTerminating["terminating"] = nil
        var topLevel = Self.role
        topLevel["name"] = "snapshot"
        var badThreshold = Self.role
        badThreshold["threshold"] = 0
        for role in [both, neither, noTerminating, topLevel, badThreshold] {
            #expect(throws: TUFError.self) { try delegating(role) }
        }
        #expect(throws: TUFError.self) { try targets(delegations: ["keys": [:], "roles": [.object(Self.role), .object(Self.role)]]) }
        #expect(throws: TUFError.self) { try targets(delegations: ["keys": [:], "succinct_roles": [:]]) }
        #expect(throws: TUFError.self) { try targets(delegations: ["roles": []]) }
    }

    @Test("paths patterns match as fnmatch per component: * and ? stay within a component, [seq] and [!seq]")
    func pathPatterns() throws {
        func matches(_ path: String, _ pattern: String) -> Bool {
            DelegatedRole(name: "a", keyIDs: [], scope: .paths([pattern])).isDelegated(path)
        }
        #expect(matches("2.3/1/main.js", "2.3/*/main.js"))
        #expect(matches("2.3/1/main.js", "*/*/*"))
        #expect(!matches("2.3/1/main.js", "2.3/*"))
        #expect(!matches("2.3/1/main.js", "*"))
        #expect(matches("2.3/1/main.js", "2.?/1/*.js"))
        #expect(!matches("2.3/12/main.js", "2.3/?/main.js"))
        #expect(matches("2.3/1/main.js", "2.[0-4]/[!0]/main.js"))
        #expect(!matches("2.5/1/main.js", "2.[0-4]/1/main.js"))
        #expect(matches("a[b", "a[b"))
        #expect(!matches("Main.js", "main.js"))
        #expect(matches("", "*"))
        #expect(!matches(String(repeating: "a", count: 60) + "b", String(repeating: "*a", count: 30) + "c"))
    }
}

/// `Fixtures/delegation/`: a repository with one delegation, built and signed by python-tuf
/// (`Tests/interop/gen_vectors.py`, keys from a fixed seed, expiring 2036).
@Suite("TUF delegations: python-tuf's vectors")
struct DelegationFixtureTests {
    static func directory() throws -> URL {
        try #require(Bundle.module.url(forResource: "delegation", withExtension: nil, subdirectory: "Fixtures"))
    }

    static func metadata(_ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: directory().appendingPathComponent("metadata/\(name)")))
    }

    @Test("verify finds the delegated role's target and checks it, with the top-level one")
    func verifies() async throws {
        let report = try await RepositoryVerifier.verify(fetcher: DirectorySource(directory: Self.directory()),
                                                         trustedRoot: Self.metadata("1.root.json"), now: TestRepository.now)
        #expect(report.ok)
        #expect(report.targets.map { "\($0.role):\($0.path):\($0.ok):\($0.plaintextChecked)" } ==
                ["app-2.3:2.3/1/main.js:true:true", "targets:2.4/1/main.js:true:true"])
        #expect(report.delegatedVersions == ["app-2.3": 1])
    }

    @Test("a byte changed in the delegated role's signed body refuses the repository")
    func tamperedRoleRefused() async throws {
        var files: [String: [UInt8]] = [:]
        for name in ["1.root.json", "timestamp.json", "1.snapshot.json", "1.targets.json", "1.app-2.3.json"] { files[name] = try Self.metadata(name) }
        let role = try #require(files["1.app-2.3.json"])
        let text = String(decoding: role, as: UTF8.self)
        files["1.app-2.3.json"] = text.replacingOccurrences(of: "\"rollout\":100", with: "\"rollout\":99").bytes
        #expect(files["1.app-2.3.json"] != role)
        await #expect(throws: VerificationError.rejected(TUFError.unsignedThreshold(role: "app-2.3", valid: 0, threshold: 1).description)) {
            _ = try await RepositoryVerifier.verify(fetcher: MemoryRepository(metadataFiles: files), trustedRoot: Self.metadata("1.root.json"),
                                                    now: TestRepository.now)
        }
    }
}
