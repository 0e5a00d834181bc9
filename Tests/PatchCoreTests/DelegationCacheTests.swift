import Foundation
@testable import PatchCore
import PatchSigning
import Testing

/// Delegated roles in the client's metadata cache (issue 44, part 3; spec 5.6.7 as python-tuf's
/// `_load_targets` and `_persist_metadata` run it): kept like the top-level roles, read back
/// only when they still verify, never a path outside the cache directory.
@Suite("TUF delegations: delegated roles in the metadata cache")
struct DelegationCacheTests {
    typealias Repo = DelegatedRepository
    static let path = "staging/2.3/1/main.js"
    static let topLevel: Set<String> = ["timestamp.json", "snapshot.json", "targets.json"]

    /// A device's cache directory, one level down in a directory of its own, so a test can
    /// see that nothing was written beside it.
    struct Device {
        let parent: URL
        let cache: MetadataCache

        init() throws {
            parent = FileManager.default.temporaryDirectory.appendingPathComponent("delegation-cache-\(UUID().uuidString)", isDirectory: true)
            try FileManager.default.createDirectory(at: parent, withIntermediateDirectories: true)
            cache = MetadataCache(directory: parent.appendingPathComponent("metadata", isDirectory: true))
        }

        func files() throws -> Set<String> { Set(try FileManager.default.contentsOfDirectory(atPath: cache.directory.path)) }
        func besideCache() throws -> [String] { try FileManager.default.contentsOfDirectory(atPath: parent.path) }
        func bytes(_ name: String) -> [UInt8]? { FileContents.read(atPath: cache.directory.appendingPathComponent(name).path) }
        func write(_ name: String, _ bytes: [UInt8]) throws { try Data(bytes).write(to: cache.directory.appendingPathComponent(name)) }
        func remove(_ name: String) throws { try FileManager.default.removeItem(at: cache.directory.appendingPathComponent(name)) }
        func discard() { try? FileManager.default.removeItem(at: parent) }
    }

    /// What a device's sync did: what the search found (as PatchClient lists targets), and
    /// every file served to it in full.
    struct Sync {
        let listing: TargetListing
        let downloaded: Set<RepositoryFile>
    }

    /// One sync as PatchClient runs it: refresh, then the listing, over a recording fetcher.
    func sync(_ repo: Repo, _ device: Device, now: Date = TestRepository.now) async throws -> Sync {
        let recorder = RecordingFetcher(try repo.publish())
        let updater = Updater(fetcher: recorder, pinnedRoot: try repo.repo.root(), cache: device.cache)
        var trusted = try await updater.refresh(now: now)
        let listing = try await updater.listTargets(in: &trusted)
        return Sync(listing: listing, downloaded: Set(recorder.files.keys))
    }

    func syncError(_ repo: Repo, _ device: Device, now: Date = TestRepository.now) async throws -> UpdateError? {
        do { _ = try await sync(repo, device, now: now) } catch let error as UpdateError { return error }
        return nil
    }

    /// Top-level targets delegate staging's paths to `role`, which lists `path`.
    static func staging(_ role: String = "staging", _ file: TargetFile = Repo.file()) throws -> Repo {
        var repo = try Repo()
        try repo.delegate(role, scope: .paths(["staging/*/*/main.js"]), terminating: true)
        repo.list(path, in: role, file)
        return repo
    }

    @Test("the first sync keeps the verified role as staging.json beside the top-level roles, byte for byte as served")
    func persistedAfterFirstSync() async throws {
        let device = try Device()
        defer { device.discard() }
        let repo = try Self.staging()
        let first = try await sync(repo, device)
        #expect(first.listing.found.map(\.role) == ["staging"])
        #expect(first.downloaded.contains(.metadata("1.staging.json")))
        #expect(try device.files() == Self.topLevel.union(["staging.json"]))
        #expect(try device.bytes("staging.json") == repo.metadataFiles()["1.staging.json"])
    }

    @Test("an unchanged snapshot entry means no download: not with the same snapshot, nor with a new one that pins the role's same version")
    func unchangedEntryNotDownloaded() async throws {
        let device = try Device()
        defer { device.discard() }
        var repo = try Self.staging()
        _ = try await sync(repo, device)
        let again = try await sync(repo, device)
        #expect(again.downloaded == [.metadata("timestamp.json")])
        #expect(again.listing.found.map(\.role) == ["staging"])
        // Top-level targets change; staging.json stays version 1 in snapshot 2.
        repo.list("2.3/1/main.js", in: "targets")
        repo.bodies["targets"]!.version = 2
        repo.snapshotVersion = 2
        let moved = try await sync(repo, device)
        #expect(moved.downloaded == [.metadata("timestamp.json"), .metadata("2.snapshot.json"), .metadata("2.targets.json")])
        #expect(moved.listing.found.map(\.role) == ["targets", "staging"])
        // A search for one path reads the cached role too.
        let recorder = RecordingFetcher(try repo.publish())
        let updater = Updater(fetcher: recorder, pinnedRoot: try repo.repo.root(), cache: device.cache)
        var trusted = try await updater.refresh(now: TestRepository.now)
        #expect(try await updater.targetInfo(path: Self.path, in: &trusted)?.role == "staging")
        #expect(Set(recorder.files.keys) == [.metadata("timestamp.json")])
    }

    @Test("a newer version in snapshot is downloaded, verified, and replaces the cached role")
    func newVersionReplaces() async throws {
        let device = try Device()
        defer { device.discard() }
        var repo = try Self.staging()
        _ = try await sync(repo, device)
        repo.list(Self.path, in: "staging", Repo.file("patch 2"))
        repo.bodies["staging"]!.version = 2
        repo.snapshotVersion = 2
        let next = try await sync(repo, device)
        #expect(next.downloaded.contains(.metadata("2.staging.json")))
        #expect(next.listing.found.map(\.file) == [Repo.file("patch 2")])
        #expect(try device.bytes("staging.json") == repo.metadataFiles()["2.staging.json"])
        #expect(try device.files() == Self.topLevel.union(["staging.json"]))
    }

    @Test("a cached role that does not verify (a byte changed, or signed by a key the delegator does not list) is not trusted: it is downloaded again and replaced")
    func tamperedCopyDownloadedAgain() async throws {
        let device = try Device()
        defer { device.discard() }
        var repo = try Self.staging()
        repo.pins["staging"] = MetaFile(version: 1)  // by version only: the signature alone tells the copies apart
        _ = try await sync(repo, device)
        let genuine = try #require(device.bytes("staging.json"))
        let edited = String(decoding: genuine, as: UTF8.self).replacingOccurrences(of: "\"rollout\":100", with: "\"rollout\":99")
        #expect(edited.bytes != genuine)
        // Signed by a stranger: the same version, listing one more path, every pin but the keys right.
        var forger = repo
        forger.signers["staging"] = [try Ed25519PrivateKey.generate()]
        forger.list("staging/2.3/9/main.js", in: "staging")
        let forged = try #require(try forger.metadataFiles()["1.staging.json"])
        for planted in [edited.bytes, forged] {
            try device.write("staging.json", planted)
            let next = try await sync(repo, device)
            #expect(next.downloaded.contains(.metadata("1.staging.json")))
            #expect(next.listing.found.map(\.path) == [Self.path])
            #expect(device.bytes("staging.json") == genuine)
        }
    }

    @Test("an expired cached role is not trusted: the pinned version is downloaded again, and refused while the repository's is expired too")
    func expiredCopyNotTrusted() async throws {
        let device = try Device()
        defer { device.discard() }
        var repo = try Self.staging()
        repo.bodies["staging"]!.expires = TestRepository.now.addingTimeInterval(86_400)
        _ = try await sync(repo, device)
        let later = TestRepository.now.addingTimeInterval(2 * 86_400)
        #expect(try await syncError(repo, device, now: later) == .verification(.expired(role: "staging", expires: TUFTime.format(repo.bodies["staging"]!.expires))))
        // Re-signed as version 2 for another year: downloaded and kept.
        repo.bodies["staging"]!.expires = TestRepository.inAYear
        repo.bodies["staging"]!.version = 2
        repo.snapshotVersion = 2
        let renewed = try await sync(repo, device, now: later)
        #expect(renewed.downloaded.contains(.metadata("2.staging.json")))
        #expect(renewed.listing.found.map(\.role) == ["staging"])
        #expect(try device.bytes("staging.json") == repo.metadataFiles()["2.staging.json"])
    }

    @Test("role names that need encoding round-trip through the cache and never leave it",
          arguments: [("a/b", "a%2Fb.json"), ("..", "...json"), (".", "..json"), ("qa.team", "qa.team.json"),
                      ("x%2Fy", "x%252%46y.json"), ("?#&", "%3F%23%26.json")])
    func encodedNames(role: String, file: String) async throws {
        let device = try Device()
        defer { device.discard() }
        let repo = try Self.staging(role)
        let first = try await sync(repo, device)
        #expect(first.listing.found.map(\.role) == [role])
        #expect(first.downloaded.contains(.metadata("1.\(RoleFileName.quoted(role)).json")))
        #expect(try device.files() == Self.topLevel.union([file]))
        #expect(try device.besideCache() == ["metadata"])
        #expect(try device.bytes(file) == repo.metadataFiles()["1.\(RoleFileName.quoted(role)).json"])
        let again = try await sync(repo, device)
        #expect(again.downloaded == [.metadata("timestamp.json")], "read back from \(file)")
        #expect(again.listing.found.map(\.role) == [role])
    }

    @Test("every awkward name in one repository: one file each, none another's, none outside the cache")
    func namesSideBySide() async throws {
        let device = try Device()
        defer { device.discard() }
        let roles = ["a/b", "a%2Fb", "..", ".", "../escape", "qa.team", "x%2Fy", "?#&", "2.root", "QA", "qa", "Timestamp",
                     String(repeating: "é", count: 60)]
        var repo = try Repo()
        for (index, role) in roles.enumerated() {
            try repo.delegate(role, scope: .paths(["\(index)/*/main.js"]))
            repo.list("\(index)/1/main.js", in: role, Repo.file("from \(role)"))
        }
        let first = try await sync(repo, device)
        #expect(first.listing.found.count == roles.count)
        #expect(try device.files() == Self.topLevel.union(roles.map(RoleFileName.cached)))
        #expect(try device.besideCache() == ["metadata"])
        let again = try await sync(repo, device)
        #expect(again.downloaded == [.metadata("timestamp.json")])
        #expect(again.listing.found.map { "\($0.role) \($0.path)" }.sorted() == first.listing.found.map { "\($0.role) \($0.path)" }.sorted())
        for found in again.listing.found { #expect(found.file == Repo.file("from \(found.role)")) }
    }

    @Test("a repository offering a lower version than the cached role is refused as a rollback, even when the snapshot floor was lost")
    func rollbackRefused() async throws {
        let device = try Device()
        defer { device.discard() }
        var repo = try Self.staging()
        repo.bodies["staging"]!.version = 3
        _ = try await sync(repo, device)
        // The cached timestamp and snapshot are gone (a snapshot key rotation drops them too):
        // only the role's own copy remembers version 3.
        try device.remove("snapshot.json")
        try device.remove("timestamp.json")
        var older = repo
        older.bodies["staging"]!.version = 2
        older.list(Self.path, in: "staging", Repo.file("the older patch"))
        #expect(try await syncError(older, device) == .verification(.rollback(role: "staging", trusted: 3, offered: 2)))
        #expect(try SignedTargets(bytes: try #require(device.bytes("staging.json"))).body.version == 3, "the cached role is kept")
        // Control: a device that never saw version 3 takes version 2.
        let fresh = try Device()
        defer { fresh.discard() }
        #expect(try await sync(older, fresh).listing.found.map(\.file) == [Repo.file("the older patch")])
    }

    @Test("a role removed from the delegation tree is not read from the cache; delegated again to other keys, its cached copy counts for nothing")
    func removedRoleNotTrusted() async throws {
        let device = try Device()
        defer { device.discard() }
        var repo = try Self.staging()
        _ = try await sync(repo, device)
        // Undelegated: staging.json stays pinned in snapshot, as patchd keeps it.
        repo.bodies["targets"]!.delegations = nil
        repo.bodies["targets"]!.version = 2
        repo.snapshotVersion = 2
        let removed = try await sync(repo, device)
        #expect(removed.listing.found.isEmpty)
        #expect(removed.downloaded == [.metadata("timestamp.json"), .metadata("2.snapshot.json"), .metadata("2.targets.json")])
        // Delegated again to a new key; snapshot still pins version 1 (by version only), which
        // the cached copy is, signed by the old key.
        repo.signers["staging"] = nil
        repo.bodies["staging"] = nil
        try repo.delegate("staging", scope: .paths(["staging/*/*/main.js"]), terminating: true)
        repo.list(Self.path, in: "staging", Repo.file("under the new key"))
        repo.pins["staging"] = MetaFile(version: 1)
        repo.bodies["targets"]!.version = 3
        repo.snapshotVersion = 3
        let again = try await sync(repo, device)
        #expect(again.downloaded.contains(.metadata("1.staging.json")))
        #expect(again.listing.found.map(\.file) == [Repo.file("under the new key")])
    }
}

/// `RoleFileName`: the repository's names and the cache's, decided once.
@Suite("TUF delegations: role file names")
struct RoleFileNameTests {
    @Test("the URL name is Python's quote(name, \"\"): letters, digits and _.-~ kept, every other byte %XX")
    func quoted() {
        #expect(RoleFileName.quoted("team/a b") == "team%2Fa%20b")
        #expect(RoleFileName.quoted("QA.team_1-~") == "QA.team_1-~")
        #expect(RoleFileName.quoted("x%2Fy") == "x%252Fy")
        #expect(RoleFileName.quoted("é") == "%C3%A9")
    }

    @Test("the cache name: the URL's, with capitals, top-level stems and long names escaped", arguments: [
        ("staging", "staging.json"), ("a/b", "a%2Fb.json"), ("..", "...json"), (".", "..json"), ("../escape", "..%2Fescape.json"),
        ("qa.team", "qa.team.json"), ("x%2Fy", "x%252%46y.json"), ("?#&", "%3F%23%26.json"), ("a\u{0}b", "a%00b.json"),
        ("QA", "%51%41.json"), ("Targets", "%54argets.json"), ("2.root", "%32.root.json"), ("12.root", "%312.root.json"),
        ("root", "%72oot.json"), ("timestamp", "%74imestamp.json"), ("snapshot", "%73napshot.json"), ("targets", "%74argets.json"),
        (".root", ".root.json"), ("2.root2", "2.root2.json"), ("x.root", "x.root.json"),
    ])
    func cached(role: String, file: String) {
        #expect(RoleFileName.cached(role) == file)
    }

    @Test("a name whose encoding is longer than 150 bytes is kept under the SHA-256 of the name")
    func longNames() {
        let long = String(repeating: "é", count: 26)  // 52 bytes, 156 encoded
        #expect(RoleFileName.cached(long) == "%sha256.\(Digest.sha256Hex(Array(long.utf8))).json")
        let fits = String(repeating: "é", count: 25)
        #expect(RoleFileName.cached(fits) == String(repeating: "%C3%A9", count: 25) + ".json")
        #expect(RoleFileName.cached(String(repeating: "a", count: 150)) == String(repeating: "a", count: 150) + ".json")
        #expect(RoleFileName.cached(String(repeating: "a", count: 151)).hasPrefix("%sha256."))
    }

    @Test("no two names share a file, even compared without case; none is a path, a top-level file, nor too long")
    func oneFileEach() {
        var names = ["a/b", "a%2Fb", "a%2fb", "..", ".", "...", "../x", "/", "%", "%25", "qa", "QA", "Qa", "2.root", "%32.root", "02.root",
                     "root", "Root", "targets", "TARGETS", "timestamp", "snapshot", "1.root", "sha256.x", "%sha256.x", "a.json", "a",
                     String(repeating: "é", count: 26), String(repeating: "è", count: 26), String(repeating: "a", count: 151)]
        names += (0...255).map { String(decoding: [UInt8($0)], as: UTF8.self) }
        let files = names.map(RoleFileName.cached)
        #expect(Set(files.map { $0.lowercased() }).count == Set(names).count)
        let reserved: Set<String> = ["root.json", "timestamp.json", "snapshot.json", "targets.json"]
        for file in files {
            #expect(!file.contains("/") && !file.contains("\u{0}") && file != "." && file != "..")
            #expect(!reserved.contains(file.lowercased()))
            let stem = file.dropLast(".root.json".count)
            #expect(!(file.hasSuffix(".root.json") && !stem.isEmpty && stem.allSatisfy { $0.isASCII && $0.isNumber }), "\(file) is a root of the chain")
            #expect(file.utf8.count <= RoleFileName.maxEncodedLength + ".json".count)
        }
    }
}
