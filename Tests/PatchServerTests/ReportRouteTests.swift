import Foundation
import PatchCore
import PatchRegistry
import Testing
@testable import PatchServer
import HotpatchTestSupport

extension ServiceFixture {
    /// `POST /v1/apps/{app}/reports` as a device sends it.
    func report(_ body: String, device: String? = "device-1", app: String = "demo", from ip: String = "127.0.0.1",
                headers extra: [(String, String)] = []) -> HTTPResponse {
        var fields: [(String, String)] = [("Content-Type", "application/json")] + extra
        if let device { fields.append(("X-Device-ID", device)) }
        return service.respond(to: HTTPRequest(method: "POST", path: "/v1/apps/\(app)/reports", fields: fields, body: Array(body.utf8), remoteAddress: ip))
    }

    func events(_ items: [String]) -> String { "{\"events\": [" + items.joined(separator: ",") + "]}" }

    func installed(_ id: String, patch: Int = 1, type: String = "installed") -> String {
        "{\"id\": \"\(id)\", \"type\": \"\(type)\", \"appVersion\": \"2.3\", \"patch\": \(patch), \"at\": \"2026-12-01T10:00:00Z\"}"
    }
}

@Suite("POST /v1/apps/{app}/reports, GET /v1/apps/{app}/stats, the guard routes")
struct ReportRouteTests {
    @Test("202 with accepted, duplicates and dropped; a resend counts once; unknown patches and invalid events are dropped")
    func counts() throws {
        let f = try ServiceFixture()
        f.publish("one()")
        let body = f.events([f.installed("a"), f.installed("b", patch: 9), "{\"id\": \"bad id\"}", "7"])
        let first = f.report(body)
        #expect(first.status == 202)
        #expect(try f.json(first) == ["accepted": 1, "duplicates": 0, "dropped": 3])
        #expect(try f.json(f.report(body)) == ["accepted": 0, "duplicates": 1, "dropped": 3])
        let stats = try f.json(f.get("/v1/apps/demo/stats", headers: ["Authorization": "Bearer \(f.auditorToken)"]))
        #expect(stats["patches"]?.arrayValue?.first?["devices"]?["installed"]?.intValue == 1)
        #expect(stats["hourly"]?.arrayValue?.first?["events"]?["installed"]?.intValue == 1)
    }

    @Test("400 without X-Device-ID, with two, for a body that is not JSON, has no events, none or more than 100; nothing counted")
    func refusals() throws {
        let f = try ServiceFixture()
        f.publish("one()")
        #expect(f.report(f.events([f.installed("a")]), device: nil).status == 400)
        #expect(f.report(f.events([f.installed("a")]), headers: [("X-Device-ID", "second")]).status == 400)
        #expect(f.report("not json").status == 400)
        #expect(f.report("{\"reports\": []}").status == 400)
        #expect(f.report(f.events([])).status == 400)
        #expect(f.report(f.events((0...100).map { f.installed("e\($0)") })).status == 400)
        #expect(try f.json(f.report(f.events((0..<100).map { f.installed("e\($0)") })))["accepted"] == 100, "100 events is the limit, not over it")
        let stats = try f.json(f.get("/v1/apps/demo/stats", headers: ["Authorization": "Bearer \(f.auditorToken)"]))
        #expect(stats["patches"]?.arrayValue?.first?["devices"]?["installed"]?.intValue == 1, "one device, however many events")
        #expect(stats["hourly"]?.arrayValue?.first?["events"]?["installed"]?.intValue == 100, "only the accepted batch counted")
        #expect(f.report(f.events([f.installed("a")]), app: "nope").status == 404)
    }

    @Test("concurrent reports are counted in groups, each request answered with its own outcome")
    func concurrent() throws {
        let f = try ServiceFixture()
        f.publish("one()")
        let answers = Locked<[Int: JSON]>([:])
        let service = f.service
        // Each device sends its event twice in one request: 1 accepted, 1 duplicate.
        let body = Array(f.events([f.installed("e"), f.installed("e"), f.installed("x", patch: 5)]).utf8)
        DispatchQueue.concurrentPerform(iterations: 32) { i in
            let response = service.respond(to: HTTPRequest(method: "POST", path: "/v1/apps/demo/reports", fields: [("X-Device-ID", "device-\(i)")], body: body))
            let json = (try? JSONParser.parse(response.body)) ?? .null
            answers.withLock { $0[i] = response.status == 202 ? json : .int(Int64(response.status)) }
        }
        let all = answers.withLock { $0 }
        #expect(all.count == 32)
        #expect(all.values.allSatisfy { $0 == ["accepted": 1, "duplicates": 1, "dropped": 1] })
        let stats = try f.json(f.get("/v1/apps/demo/stats", headers: ["Authorization": "Bearer \(f.auditorToken)"]))
        #expect(stats["patches"]?.arrayValue?.first?["devices"]?["installed"]?.intValue == 32)
    }

    @Test("a guard set after the figures passed it acts in the upkeep pass, without waiting for another report")
    func upkeepApplies() throws {
        let f = try ServiceFixture()
        f.publish("one()")
        for i in 0..<60 {
            var items = [f.installed("i")]
            if i < 10 { items.append(f.installed("r", type: "rolledBack")) }
            _ = f.report(f.events(items), device: "device-\(i)")
        }
        let registry = try TestBackend.registry(dataDirectory: f.dataDirectory, keysDirectory: f.keysDirectory, create: false)
        try registry.setGuard(app: try AppName("demo"), maxRollbackPPM: 20_000, minDevices: 50, action: .halt, actor: Actor("ops"))
        f.service.reloadChanged()
        #expect(f.get("/v1/apps/demo/versions/2.3/patch", headers: ["X-Device-ID": "a"]).status == 200)
        f.service.reportUpkeep()
        #expect(f.get("/v1/apps/demo/versions/2.3/patch", headers: ["X-Device-ID": "b"]).status == 204)
        #expect(try registry.guardTrips(app: try AppName("demo")).first?.installed == 60)
    }

    @Test("a staged rollout set over its route advances in the upkeep pass once due and on evidence, and the catalog serves it")
    func stagedRollout() throws {
        let f = try ServiceFixture()
        f.publish("one()", rollout: 5)
        let publisher = ["Authorization": "Bearer \(f.publisherToken)"]
        let schedule = Array(#"{"steps": [100], "everySeconds": 3600}"#.utf8)
        let path = "/v1/apps/demo/versions/2.3/patches/1/schedule"
        #expect(f.service.respond(to: HTTPRequest(method: "PUT", path: path, headers: publisher, body: schedule)).status == 409, "no guard yet")
        _ = f.service.respond(to: HTTPRequest(method: "PUT", path: "/v1/apps/demo/guard", headers: publisher, body: Array(#"{"maxRollbackRatePpm": 20000, "minDevices": 50}"#.utf8)))
        #expect(f.service.respond(to: HTTPRequest(method: "PUT", path: path, headers: publisher, body: schedule)).status == 200)
        for i in 0..<400 { _ = f.report(f.events([f.installed("i")]), device: "device-\(i)") }
        f.service.reportUpkeep()
        let stats = try f.json(f.get("/v1/apps/demo/stats", headers: publisher))
        #expect(stats["schedules"]?.arrayValue?.first?["steps"] == [100], "not due yet")
        f.service.reportUpkeep(now: Date().addingTimeInterval(3601))
        #expect(f.get("/v1/apps/demo/versions/2.3/patch", headers: ["X-Device-ID": "any"]).status == 200, "at 100 % every device gets it")
        #expect(try f.json(f.get("/v1/apps/demo/stats", headers: publisher))["schedules"] == [])
    }

    @Test("the body limit is 64 KiB and is refused from the head, before a byte is read; no token is needed")
    func bodyLimit() throws {
        let f = try ServiceFixture()
        let over = AdmissionTests.head("POST", "/v1/apps/demo/reports", headers: [("X-Device-ID", "d")], declared: .length(64 << 10 + 1))
        #expect(AdmissionTests.answer(f.service.admit(over))?.status == 413)
        let fits = AdmissionTests.head("POST", "/v1/apps/demo/reports", headers: [("X-Device-ID", "d")], declared: .length(64 << 10))
        guard case .readBody(let limit, _) = f.service.admit(fits) else { Issue.record("a 64 KiB body was refused"); return }
        #expect(limit == 64 << 10)
    }

    @Test("the per-IP bucket of the app applies as on the check path")
    func perIP() throws {
        let f = try ServiceFixture(ipRate: 2)
        f.publish("one()")
        #expect(f.report(f.events([f.installed("a")]), from: "10.0.0.9").status == 202)
        #expect(f.report(f.events([f.installed("b")]), from: "10.0.0.9").status == 202)
        let third = f.report(f.events([f.installed("c")]), from: "10.0.0.9")
        #expect(third.status == 429)
        #expect(third.headers.contains { $0.0 == "Retry-After" })
        #expect(f.report(f.events([f.installed("c")]), from: "10.0.0.10").status == 202)
    }

    @Test("stats needs an auditor token of the app; the guard routes a publisher's; a guard trips from reports and the catalog serves the halt at once")
    func guardRoutes() throws {
        let f = try ServiceFixture()
        f.publish("one()")
        let publisher = ["Authorization": "Bearer \(f.publisherToken)"]
        #expect(f.get("/v1/apps/demo/stats").status == 401)
        #expect(f.get("/v1/apps/demo/stats", headers: ["Authorization": "Bearer \(f.otherAppToken)"]).status == 403)
        let body = Array(#"{"maxRollbackRatePpm": 20000, "minDevices": 50}"#.utf8)
        let auditorPut = f.service.respond(to: HTTPRequest(method: "PUT", path: "/v1/apps/demo/guard", headers: ["Authorization": "Bearer \(f.auditorToken)"], body: body))
        #expect(auditorPut.status == 403)
        let put = f.service.respond(to: HTTPRequest(method: "PUT", path: "/v1/apps/demo/guard", headers: publisher, body: body))
        #expect(put.status == 200)
        #expect(try f.json(put)["changed"] == true && f.json(put)["action"] == "halt")
        for i in 0..<60 {
            var items = [f.installed("i")]
            if i < 10 { items.append(f.installed("r", type: "rolledBack")) }
            #expect(f.report(f.events(items), device: "device-\(i)").status == 202)
        }
        let check = f.get("/v1/apps/demo/versions/2.3/patch", headers: ["X-Device-ID": "fresh"])
        #expect(check.status == 204, "the halted patch is served to no device")
        let stats = try f.json(f.get("/v1/apps/demo/stats", headers: publisher))
        // It trips at the 50th device: 10 of 50 rolled back, lower bound 11.2 % > 2 %.
        #expect(stats["trips"]?.arrayValue?.first?["lowerBoundPpm"] == 112_438 && stats["trips"]?.arrayValue?.first?["installed"] == 50)
        let metrics = String(decoding: f.get("/metrics").body, as: UTF8.self)
        #expect(metrics.contains(#"hotpatch_patch_devices{app="demo",version="2.3",channel="production",patch="1",event="rolledBack"} 10"#))
        let delete = f.service.respond(to: HTTPRequest(method: "DELETE", path: "/v1/apps/demo/guard", headers: publisher))
        #expect(try f.json(delete)["changed"] == true)
    }
}
