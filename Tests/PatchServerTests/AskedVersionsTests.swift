import Foundation
import Testing
import PatchCore
import PatchRegistry
@testable import HTTPTransport
@testable import PatchServer

/// The versions devices check for (issue 44), counted on the check path: bounded per app, and
/// shaped so that made-up versions cannot push out the ones real fleets ask for.
@Suite("Asked-for versions")
struct AskedVersionsTests {
    @Test("established versions are counted exactly through a flood of 100,000 made-up versions; newcomers stay at 64 entries")
    func floodDoesNotEvict() {
        let tally = AskedVersions()
        tally.establish(app: "demo", versions: ["2.3", "2.3.1"])
        for i in 0..<100_000 {
            tally.note(app: "demo", version: "9.\(i)")
            if i % 1_000 == 0 { tally.note(app: "demo", version: "2.3") }
            if i % 10_000 == 0 { tally.note(app: "demo", version: "2.3.1") }
        }
        #expect(tally.entries(app: "demo") == (established: 2, newcomers: AskedVersions.newcomerCapacity))
        let counts = tally.take()["demo"] ?? [:]
        #expect(counts["2.3"] == 100 && counts["2.3.1"] == 10)
        // What the flood flushes is what each made-up version proved: one check each, never an
        // evicted entry's count passed on.
        #expect(counts.filter { $0.key.hasPrefix("9.") }.allSatisfy { $0.value == 1 })
        #expect(counts.count <= 2 + AskedVersions.newcomerCapacity)
        // The table is emptied but keeps what it counts exactly.
        #expect(tally.entries(app: "demo") == (established: 2, newcomers: 0) && tally.take().isEmpty)
    }

    @Test("a new version asked more than 1/64 of the newcomers' checks survives a flood, and a flush gives its own checks only")
    func heavyNewcomerSurvives() {
        let tally = AskedVersions()
        for i in 0..<6_400 {
            tally.note(app: "demo", version: "9.\(i)")
            if i % 50 == 0 { tally.note(app: "demo", version: "2.4") }
        }
        let counts = tally.take()["demo"] ?? [:]
        // 128 checks of 2.4 among 6,528: above 1/64 of them, so it is kept; what it flushes is
        // at most what it had and at least its count since it last came in.
        #expect((1...128).contains(counts["2.4"] ?? 0))
        #expect(tally.entries(app: "demo").newcomers == 0)
    }

    @Test("a newcomer that becomes established keeps its unflushed checks; apps have tables of their own")
    func establishKeepsCounts() {
        let tally = AskedVersions()
        for _ in 0..<3 { tally.note(app: "demo", version: "2.5") }
        tally.note(app: "other", version: "2.5")
        tally.establish(app: "demo", versions: ["2.5"])
        #expect(tally.entries(app: "demo") == (established: 1, newcomers: 0))
        #expect(tally.take() == ["demo": ["2.5": 3], "other": ["2.5": 1]])
    }

    @Test("checks of the simple check and of timestamp.json are counted, flushed by the upkeep pass, and listed to auditors")
    func checkPathToRoute() throws {
        let fixture = try ServiceFixture(minInterval: 0)
        fixture.publish("a()", version: "2.3")
        for i in 0..<5 { _ = fixture.get("/v1/apps/demo/versions/2.3/patch", headers: ["X-Device-ID": "d\(i)"]) }
        _ = fixture.get("/v1/apps/demo/versions/2.3.0/patch")
        _ = fixture.get("/v1/apps/demo/metadata/timestamp.json", headers: ["X-App-Version": "2.3.1", "X-Device-ID": "d9"])
        // A version the grammar refuses is a 400, counted nowhere.
        #expect(fixture.get("/v1/apps/demo/metadata/timestamp.json", headers: ["X-App-Version": "not-a-version"]).status == 400)
        #expect(fixture.service.askedVersions.tracked(app: "demo") == ["2.3": 5, "2.3.0": 1, "2.3.1": 1])
        fixture.service.flushAskedVersions()
        let response = fixture.get("/v1/apps/demo/versions", headers: ["Authorization": "Bearer \(fixture.auditorToken)"])
        #expect(response.status == 200)
        let json = try fixture.json(response)
        #expect(json["days"]?.intValue == 30)
        #expect(json["versions"]?.arrayValue?.map { "\($0["appVersion"]?.stringValue ?? "")=\($0["checks"]?.intValue ?? 0)" } == ["2.3=5", "2.3.1=1", "2.3.0=1"])
        // A second pass adds to the same rows; what was flushed is not flushed again.
        _ = fixture.get("/v1/apps/demo/versions/2.3/patch")
        fixture.service.flushAskedVersions()
        let again = try fixture.json(fixture.get("/v1/apps/demo/versions", headers: ["Authorization": "Bearer \(fixture.auditorToken)"]))
        #expect(again["versions"]?.arrayValue?.first?["checks"]?.intValue == 6)
        // The first pass loaded what the registry has on record: 2.3 (a patch and checks) is exact now.
        #expect(fixture.service.askedVersions.entries(app: "demo").established == 3)
        #expect(fixture.get("/v1/apps/demo/versions").status == 401)
        #expect(fixture.get("/v1/apps/demo/versions", headers: ["Authorization": "Bearer \(fixture.otherAppToken)"]).status == 403)
    }

    @Test("a publish over the API to a version no device asks for answers versionWarning; strictVersion is 409; several versions need confirm")
    func publishWarning() throws {
        let fixture = try ServiceFixture(minInterval: 0)
        for _ in 0..<3 { _ = fixture.get("/v1/apps/demo/versions/2.3/patch") }
        _ = fixture.get("/v1/apps/demo/versions/2.3.1/patch")
        fixture.service.flushAskedVersions()
        let warned = try fixture.json(fixture.publish("a()", version: "2.3.0"))
        #expect(warned["versionWarning"]?.stringValue?.hasPrefix("devices ask for 2.3 and 2.3.1, none for 2.3.0") == true)
        let strict = fixture.post("/v1/apps/demo/patches", body: "b()", token: fixture.publisherToken, query: ["appVersion": "2.4", "strictVersion": "true"])
        #expect(strict.status == 409)
        let unconfirmed = fixture.post("/v1/apps/demo/patches", body: "c()", token: fixture.publisherToken, query: ["appVersion": "2.3.*"])
        let refusal = try fixture.json(unconfirmed)
        #expect(unconfirmed.status == 409 && refusal["error"]?["code"]?.stringValue == "confirmation_required")
        #expect(refusal["error"]?["message"]?.stringValue?.contains("2.3, 2.3.0 and 2.3.1: what 2.3.* names now") == true)
        let dry = fixture.post("/v1/apps/demo/patches", body: "c()", token: fixture.publisherToken, query: ["appVersion": "2.3.*", "dryRun": "true"])
        let expansion = try fixture.json(dry)["appVersions"]?.arrayValue?.compactMap(\.stringValue)
        #expect(dry.status == 200 && expansion == ["2.3", "2.3.0", "2.3.1"])
        let done = fixture.post("/v1/apps/demo/patches", body: "c()", token: fixture.publisherToken, query: ["appVersion": ">=2.3.1 <2.4", "confirm": "true"])
        let made = try fixture.json(done)["patches"]?.arrayValue?.count
        #expect(done.status == 201 && made == 1)
        let none = fixture.post("/v1/apps/demo/patches", body: "d()", token: fixture.publisherToken, query: ["appVersion": ">=5", "confirm": "true"])
        #expect(none.status == 404)
        let malformed = fixture.post("/v1/apps/demo/patches", body: "d()", token: fixture.publisherToken, query: ["appVersion": "~2.3"])
        #expect(malformed.status == 400)
    }
}
