import Foundation
import Locking
import PatchCore
import PatchRegistry
import Testing
@testable import HTTPTransport
@testable import PatchServer
import HotpatchTestSupport

extension ServiceFixture {
    /// `POST /v1/apps/{app}/reports` as a device sends it, from `ip` (each simulated device
    /// its own /16 unless a test says otherwise: the per-network budgets are tested apart).
    func report(_ body: String, device: String? = "device-1", app: String = "demo", from ip: String? = nil,
                headers extra: [(String, String)] = []) -> HTTPResponse {
        var fields: [(String, String)] = [("Content-Type", "application/json")] + extra
        if let device { fields.append(("X-Device-ID", device)) }
        return service.respond(to: HTTPRequest(method: "POST", path: "/v1/apps/\(app)/reports", fields: fields, body: Array(body.utf8),
                                               remoteAddress: ip ?? ServiceFixture.address(of: device ?? "")))
    }

    /// An address in a /16 of the device's own.
    static func address(of device: String) -> String {
        let h = Digest.sha256(Array(device.utf8))
        return "10.\(h[0]).\(h[1]).1"
    }

    func events(_ items: [String]) -> String { "{\"events\": [" + items.joined(separator: ",") + "]}" }

    /// One event about patch `patch` of 2.3, with the receipt `device` got with the patch
    /// (nil: none, as a forger without a download sends it).
    func installed(_ id: String, patch: Int = 1, type: String = "installed", device: String? = "device-1") -> String {
        let receipt = device.map { ", \"receipt\": \"\(service.receipts()!.receipt(app: "demo", appVersion: "2.3", channel: "production", patch: patch, deviceID: $0))\"" } ?? ""
        return "{\"id\": \"\(id)\", \"type\": \"\(type)\", \"appVersion\": \"2.3\", \"patch\": \(patch), \"at\": \"2026-12-01T10:00:00Z\"\(receipt)}"
    }

    /// What the report worker counted so far, once it is idle.
    func tally() -> (accepted: Int, duplicates: Int, dropped: [ReportDrop: Int]) {
        service.settleReports()
        let t = service.reportTally
        return (t.accepted.load, t.duplicates.load, t.dropped.mapValues(\.load).filter { $0.value > 0 })
    }

    func stats() throws -> JSON {
        service.settleReports()
        return try json(get("/v1/apps/demo/stats", headers: ["Authorization": "Bearer \(auditorToken)"]))
    }
}

@Suite("POST /v1/apps/{app}/reports, GET /v1/apps/{app}/stats, the guard routes")
struct ReportRouteTests {
    @Test("202 {queued} at once, counted by the worker: a resend counts once; unknown patches, invalid events and events without their receipt are dropped")
    func counts() throws {
        let f = try ServiceFixture()
        f.publish("one()")
        let body = f.events([f.installed("a"), f.installed("b", patch: 9), "{\"id\": \"bad id\"}", "7", f.installed("c", device: nil),
                             f.installed("d", device: "someone-else")])
        let first = f.report(body)
        #expect(first.status == 202)
        #expect(try f.json(first) == ["queued": 4], "the two malformed events are not queued")
        #expect(f.report(body).status == 202)
        let tally = f.tally()
        #expect(tally.accepted == 1 && tally.duplicates == 1)
        #expect(tally.dropped == [.invalid: 2 * 3, .receipt: 2 * 2], "twice: two malformed, one of patch 9; two without a valid receipt")
        let stats = try f.stats()
        #expect(stats["patches"]?.arrayValue?.first?["devices"]?["installed"]?.intValue == 1)
        #expect(stats["hourly"]?.arrayValue?.first?["events"]?["installed"]?.intValue == 1)
        let metrics = String(decoding: f.get("/metrics").body, as: UTF8.self)
        #expect(metrics.contains(#"hotpatch_report_events_total{outcome="dropped",reason="receipt"} 4"#))
        #expect(metrics.contains(#"hotpatch_report_events_total{outcome="accepted"} 1"#))
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
        #expect(try f.json(f.report(f.events((0..<100).map { f.installed("e\($0)") })))["queued"] == 100, "100 events is the limit, not over it")
        let stats = try f.stats()
        #expect(stats["patches"]?.arrayValue?.first?["devices"]?["installed"]?.intValue == 1, "one device, however many events")
        #expect(stats["hourly"]?.arrayValue?.first?["events"]?["installed"]?.intValue == 100, "only the accepted batch counted")
        #expect(f.report(f.events([f.installed("a")]), app: "nope").status == 404)
    }

    @Test("concurrent reports are all queued and counted, each device once")
    func concurrent() throws {
        let f = try ServiceFixture()
        f.publish("one()")
        let statuses = Locked<[Int]>([])
        // Each device sends its event twice in one request: 1 accepted, 1 duplicate.
        let requests = (0..<32).map { i in
            let device = "device-\(i)"
            let body = f.events([f.installed("e", device: device), f.installed("e", device: device), f.installed("x", patch: 5, device: device)])
            return HTTPRequest(method: "POST", path: "/v1/apps/demo/reports", fields: [("X-Device-ID", device)], body: Array(body.utf8),
                               remoteAddress: ServiceFixture.address(of: device))
        }
        let service = f.service
        DispatchQueue.concurrentPerform(iterations: 32) { i in
            let status = service.respond(to: requests[i]).status
            statuses.withLock { $0.append(status) }
        }
        #expect(statuses.withLock { $0 } == Array(repeating: 202, count: 32))
        let tally = f.tally()
        #expect(tally.accepted == 32 && tally.duplicates == 32 && tally.dropped == [.invalid: 32])
        #expect(try f.stats()["patches"]?.arrayValue?.first?["devices"]?["installed"]?.intValue == 32)
    }

    @Test("past the queue's capacity a report is refused with 503 and Retry-After, from its head once there is no room for a whole report (its body never read), and counted in /metrics; nothing of it is counted")
    func queueFull() throws {
        let f = try ServiceFixture(reportQueueEvents: 200)
        f.publish("one()")
        // Hold the registry lock so the worker cannot drain while the queue fills.
        let bodies = (0..<3).map { n in f.events((0..<60).map { f.installed("e\(n)-\($0)", device: "d\(n)") }) }
        let head = AdmissionTests.head("POST", "/v1/apps/demo/reports", headers: [("X-Device-ID", "d9")], declared: .length(100))
        let (answers, fromHead): ([HTTPResponse], HTTPResponse?) = f.service.registry.withLock { _ in
            ((0..<3).map { n in f.report(bodies[n], device: "d\(n)") }, AdmissionTests.answer(f.service.admit(head)))
        }
        #expect(answers.map(\.status) == [202, 202, 503], "room for 80 events after two reports: fewer than a whole report's 100")
        #expect(answers[2].header("Retry-After") == "30")
        #expect(try f.json(answers[2])["error"]?["code"] == "busy")
        #expect(fromHead?.status == 503, "refused from the head, before its body is read")
        #expect(f.tally().accepted == 120)
        #expect(String(decoding: f.get("/metrics").body, as: UTF8.self).contains("hotpatch_reports_refused_total 2\n"))
        #expect(f.report(f.events([f.installed("late", device: "d2")]), device: "d2").status == 202, "room again once counted")
    }

    @Test("a report's body is not parsed on the request thread: even a malformed one is answered by the parser (400 once parsed); a body the parser's intake has no room for is 503 from its head")
    func parsedOffTheRequestThread() throws {
        let f = try ServiceFixture(reportIntakeBytes: 1_000)
        f.publish("one()")
        let body = Array("not json".utf8)
        let request = HTTPRequest(method: "POST", path: "/v1/apps/demo/reports", fields: [("X-Device-ID", "d1")], body: body, remoteAddress: "10.1.1.1")
        guard case .readBody(_, _, let finish) = f.service.admit(request), case .later(let promise) = finish(request) else {
            Issue.record("the report was answered on the request thread")
            return
        }
        let answer = promise.wait()
        #expect(answer.status == 400 && answer.bodyString.contains("must be JSON"))
        let large = AdmissionTests.head("POST", "/v1/apps/demo/reports", headers: [("X-Device-ID", "d2")], declared: .length(1_001))
        let refused = AdmissionTests.answer(f.service.admit(large))
        #expect(refused?.status == 503 && refused?.header("Retry-After") == "30", "no room in the parser's intake: refused before the body is read")
        #expect(f.report(f.events([f.installed("a")])).status == 202, "a report that fits is parsed and queued")
    }

    @Test("a bundle fetched with X-Device-ID (the simple check: and X-Want-Receipt) carries that device's receipt and may not be kept by a shared cache; without one it is the prepared public answer")
    func receiptsServed() throws {
        let f = try ServiceFixture()
        f.publish("one()")
        #expect(f.get("/v1/apps/demo/versions/2.3/patch", headers: ["X-Device-ID": "phone-0"]).header("X-Patch-Receipt") == nil,
                "the simple check's receipt only when asked for")
        let check = f.get("/v1/apps/demo/versions/2.3/patch", headers: ["X-Device-ID": "phone-1", "X-Want-Receipt": "1"])
        let expected = f.service.receipts()!.receipt(app: "demo", appVersion: "2.3", channel: "production", patch: 1, deviceID: "phone-1")
        #expect(check.status == 200 && check.header("X-Patch-Receipt") == expected && expected.count == 32)
        let sha = try #require(check.header("X-Patch-SHA256"))
        let target = f.get("/v1/apps/demo/targets/2.3/1/\(sha).main.js", headers: ["X-Device-ID": "phone-1"])
        #expect(target.status == 200 && target.header("X-Patch-Receipt") == expected)
        #expect(target.header("Cache-Control") == "private, max-age=31536000, immutable" && target.header("Vary") == "X-Device-ID")
        let anonymous = f.get("/v1/apps/demo/targets/2.3/1/\(sha).main.js")
        #expect(anonymous.header("X-Patch-Receipt") == nil && anonymous.header("Cache-Control") == "public, max-age=31536000, immutable")
        #expect(f.get("/v1/apps/demo/versions/2.3/patch", headers: ["X-Device-ID": "phone-2", "X-Want-Receipt": "1"]).header("X-Patch-Receipt") != expected,
                "each device its own receipt")
    }

    @Test("a bundle's receipt goes only to a device the rollout gives it to (issue 43): one outside a 50 % bucket gets the public bytes and no receipt")
    func receiptsOnlyWhereDelivered() throws {
        let f = try ServiceFixture()
        let sha = try #require(try f.json(f.publish("half()", rollout: 50))["sha256"]?.stringValue)
        let devices = (0..<40).map { "phone-\($0)" }
        let inside = devices.filter { Rollout.includes(percent: 50, app: "demo", appVersion: "2.3", patch: 1, deviceID: $0) }
        let outside = devices.filter { !inside.contains($0) }
        #expect(!inside.isEmpty && !outside.isEmpty)
        for device in devices {
            let got = f.get("/v1/apps/demo/targets/2.3/1/\(sha).main.js", headers: ["X-Device-ID": device])
            #expect(got.status == 200 && !got.body.isEmpty, "the bytes are public either way")
            #expect((got.header("X-Patch-Receipt") != nil) == inside.contains(device), "\(device)")
        }
        // A halt delivers it to no one: no new receipts (devices that have it kept theirs).
        #expect(f.post("/v1/apps/demo/versions/2.3/patches/1/halt", token: f.publisherToken).status == 200)
        #expect(f.get("/v1/apps/demo/targets/2.3/1/\(sha).main.js", headers: ["X-Device-ID": inside[0]]).header("X-Patch-Receipt") == nil)
    }

    @Test("a guard set after the figures passed it acts in the upkeep pass, without waiting for another report")
    func upkeepApplies() throws {
        let f = try ServiceFixture()
        f.publish("one()")
        for i in 0..<60 {
            let device = "device-\(i)"
            var items = [f.installed("i", device: device)]
            if i < 10 { items.append(f.installed("r", type: "rolledBack", device: device)) }
            _ = f.report(f.events(items), device: device)
        }
        f.service.settleReports()
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
        for i in 0..<400 { _ = f.report(f.events([f.installed("i", device: "device-\(i)")]), device: "device-\(i)") }
        f.service.settleReports()
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
        guard case .readBody(let limit, let charge, _) = f.service.admit(fits) else { Issue.record("a 64 KiB body was refused"); return }
        #expect(limit == 64 << 10)
        #expect(charge == .anonymous(client: fits.peer), "anonymous: charged to the client's address and network")
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
        // One report at a time, each counted before the next, so the trip's figures are the
        // 50th device's whatever the worker's grouping.
        for i in 0..<60 {
            let device = "device-\(i)"
            var items = [f.installed("i", device: device)]
            if i < 10 { items.append(f.installed("r", type: "rolledBack", device: device)) }
            #expect(f.report(f.events(items), device: device).status == 202)
            f.service.settleReports()
        }
        let check = f.get("/v1/apps/demo/versions/2.3/patch", headers: ["X-Device-ID": "fresh"])
        #expect(check.status == 204, "the halted patch is served to no device that does not run it")
        let stats = try f.json(f.get("/v1/apps/demo/stats", headers: publisher))
        // It trips at the 50th device: 10 of 50 rolled back, lower bound 11.2 % > 2 %.
        #expect(stats["trips"]?.arrayValue?.first?["lowerBoundPpm"] == 112_438 && stats["trips"]?.arrayValue?.first?["installed"] == 50)
        let metrics = String(decoding: f.get("/metrics").body, as: UTF8.self)
        #expect(metrics.contains(#"hotpatch_patch_devices{app="demo",version="2.3",channel="production",patch="1",event="rolledBack"} 10"#))
        let delete = f.service.respond(to: HTTPRequest(method: "DELETE", path: "/v1/apps/demo/guard", headers: publisher))
        #expect(try f.json(delete)["changed"] == true)
    }
}
