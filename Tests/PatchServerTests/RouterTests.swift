import Foundation
import Testing
import PatchCore
@testable import PatchRegistry
@testable import HTTPTransport
@testable import PatchServer
import HotpatchTestSupport

@Suite("Routes, in process")
struct RouterTests {
    @Test("the simple check serves this device's patch with digests, 304 on a matching ETag, 204 when none")
    func simpleCheck() throws {
        let f = try ServiceFixture(minInterval: 0)
        #expect(f.get("/v1/apps/demo/versions/2.3/patch", headers: ["X-Device-ID": "d1"]).status == 204)
        #expect(f.publish("fix()").status == 201)
        let ok = f.get("/v1/apps/demo/versions/2.3/patch", headers: ["X-Device-ID": "d1"])
        #expect(ok.status == 200)
        #expect(ok.bodyString == "fix()")
        #expect(ok.header("X-Patch-Number") == "1")
        #expect(ok.header("X-Patch-SHA256") == Digest.sha256Hex(Array("fix()".utf8)))
        #expect(ok.header("X-Patch-MD5") == Digest.md5Hex(Array("fix()".utf8)))
        let etag = try #require(ok.header("ETag"))
        let cached = f.get("/v1/apps/demo/versions/2.3/patch", headers: ["X-Device-ID": "d1", "If-None-Match": etag])
        #expect(cached.status == 304 && cached.body.isEmpty)
        // Emptying the version takes `all` and, as it leaves nothing served, `confirm`.
        #expect(f.post("/v1/apps/demo/versions/2.3/revoke", token: f.publisherToken).status == 400)
        let unconfirmed = f.post("/v1/apps/demo/versions/2.3/revoke", token: f.publisherToken, query: ["all": "true"])
        #expect(unconfirmed.status == 409)
        #expect(try f.json(unconfirmed)["error"]?["code"]?.stringValue == "confirmation_required")
        #expect(f.get("/v1/apps/demo/versions/2.3/patch", headers: ["X-Device-ID": "d1", "If-None-Match": etag]).status == 304, "nothing changed")
        #expect(f.post("/v1/apps/demo/versions/2.3/revoke", token: f.publisherToken, query: ["all": "true", "confirm": "true"]).status == 200)
        #expect(f.get("/v1/apps/demo/versions/2.3/patch", headers: ["X-Device-ID": "d1"]).status == 204)
    }

    @Test("devices in and out of a 30% rollout get what the rollout rule says")
    func rollout() throws {
        let f = try ServiceFixture(minInterval: 0)
        f.publish("base()")
        f.publish("canary()", rollout: 30)
        var inRollout = 0
        for i in 0..<200 {
            let device = "device-\(i)"
            let expected = Rollout.includes(percent: 30, app: "demo", appVersion: "2.3", patch: 2, deviceID: device) ? "2" : "1"
            let response = f.get("/v1/apps/demo/versions/2.3/patch", headers: ["X-Device-ID": device])
            #expect(response.header("X-Patch-Number") == expected)
            if expected == "2" { inRollout += 1 }
        }
        #expect((30...90).contains(inRollout))
        #expect(f.get("/v1/apps/demo/versions/2.3/patch").header("X-Patch-Number") == "1", "no device ID: only full rollouts")
    }

    @Test("a second check inside the interval is 429 with Retry-After; other devices are unaffected; after the interval it passes")
    func deviceThrottle() throws {
        let f = try ServiceFixture(minInterval: 3600)
        f.publish("fix()")
        #expect(f.get("/v1/apps/demo/versions/2.3/patch", headers: ["X-Device-ID": "a"]).status == 200)
        let again = f.get("/v1/apps/demo/versions/2.3/patch", headers: ["X-Device-ID": "a"])
        #expect(again.status == 429)
        #expect(again.header("Retry-After") == "3600")
        #expect(try f.json(again)["error"]?["code"]?.stringValue == "throttled")
        #expect(f.get("/v1/apps/demo/metadata/timestamp.json", headers: ["X-Device-ID": "a"]).status == 429, "timestamp.json is a check too")
        #expect(f.get("/v1/apps/demo/versions/2.3/patch", headers: ["X-Device-ID": "b"]).status == 200)
        #expect(f.get("/v1/apps/demo/metadata/1.root.json", headers: ["X-Device-ID": "a"]).status == 200, "downloads after a check are not throttled")
        f.clock.advance(1800)
        #expect(f.get("/v1/apps/demo/versions/2.3/patch", headers: ["X-Device-ID": "a"]).header("Retry-After") == "1800")
        f.clock.advance(1800)
        #expect(f.get("/v1/apps/demo/versions/2.3/patch", headers: ["X-Device-ID": "a"]).status == 200)
    }

    @Test("an empty or over-long X-Device-ID is 400 wherever the header is documented, throttled file or not", arguments: [
        "/v1/apps/demo/versions/2.3/patch", "/v1/apps/demo/metadata/timestamp.json", "/v1/apps/demo/metadata/1.root.json",
        "/v1/apps/demo/metadata/1.targets.json",
    ])
    func deviceIDShape(path: String) throws {
        let f = try ServiceFixture(minInterval: 3600)
        f.publish("fix()")
        for bad in ["", String(repeating: "d", count: 257)] {
            let response = f.get(path, headers: ["X-Device-ID": bad])
            #expect(response.status == 400, "\(path) with a \(bad.count)-byte device ID")
            #expect(try f.json(response)["error"]?["message"]?.stringValue == "X-Device-ID must be 1 to 256 bytes")
        }
        #expect(f.get(path, headers: ["X-Device-ID": String(repeating: "d", count: 256)]).status == 200)
    }

    @Test("the per-IP token bucket limits every route, per address")
    func ipLimit() throws {
        let f = try ServiceFixture(minInterval: 0, ipRate: 5)
        for _ in 0..<5 { #expect(f.get("/v1/apps/demo/metadata/1.root.json", from: "10.0.0.1").status == 200) }
        let limited = f.get("/v1/apps/demo/metadata/1.root.json", from: "10.0.0.1")
        #expect(limited.status == 429)
        #expect(limited.header("Retry-After") == "12")
        #expect(f.get("/v1/apps/demo/metadata/1.root.json", from: "10.0.0.2").status == 200)
        f.clock.advance(12)
        #expect(f.get("/v1/apps/demo/metadata/1.root.json", from: "10.0.0.1").status == 200)
    }

    @Test("TUF files are served with cache headers; timestamp is no-cache, the rest immutable")
    func tufFiles() throws {
        let f = try ServiceFixture()
        let published = try f.json(f.publish("fix()"))
        let timestamp = f.get("/v1/apps/demo/metadata/timestamp.json")
        #expect(timestamp.status == 200 && timestamp.header("Cache-Control") == "no-cache")
        let parsed = try SignedTimestamp(bytes: timestamp.body)
        let snapshot = f.get("/v1/apps/demo/metadata/\(parsed.body.snapshot.version).snapshot.json")
        #expect(snapshot.status == 200 && snapshot.header("Cache-Control") == "public, max-age=31536000, immutable")
        #expect(snapshot.header("ETag") != nil)
        let md5 = try #require(published["served"]?["md5"]?.stringValue)
        let target = f.get("/v1/apps/demo/targets/2.3/1/\(md5).main.js")
        #expect(target.status == 200 && target.bodyString == "fix()")
        #expect(target.header("Cache-Control") == "public, max-age=31536000, immutable")
        #expect(f.get("/v1/apps/demo/metadata/99.root.json").status == 404)
        #expect(f.get("/v1/apps/demo/targets/2.3/1/\(String(repeating: "0", count: 32)).main.js").status == 404)
    }

    @Test("publishing needs a publisher token for that app")
    func auth() throws {
        let f = try ServiceFixture()
        let none = f.post("/v1/apps/demo/patches", body: "x()", token: nil, query: ["appVersion": "2.3"])
        #expect(none.status == 401 && none.header("WWW-Authenticate") == "Bearer")
        #expect(f.post("/v1/apps/demo/patches", body: "x()", token: "hp_" + String(repeating: "0", count: 64), query: ["appVersion": "2.3"]).status == 401)
        #expect(f.post("/v1/apps/demo/patches", body: "x()", token: f.auditorToken, query: ["appVersion": "2.3"]).status == 403)
        #expect(f.post("/v1/apps/demo/patches", body: "x()", token: f.otherAppToken, query: ["appVersion": "2.3"]).status == 403)
        #expect(f.get("/v1/apps/demo/patches", headers: ["Authorization": "Bearer \(f.auditorToken)"]).status == 200)
        #expect(f.get("/v1/apps/demo/patches").status == 401)
        #expect(f.get("/v1/audit", headers: ["Authorization": "Bearer \(f.publisherToken)"]).status == 200)
    }

    @Test("changes are rate-limited per token")
    func perTokenLimit() throws {
        let f = try ServiceFixture()
        for i in 0..<30 { #expect(f.publish("p\(i)()").status == 201) }
        let limited = f.publish("one-too-many()")
        #expect(limited.status == 429 && limited.header("Retry-After") != nil)
        #expect(f.post("/v1/apps/demo/patches", body: "other()", token: f.otherAppToken, query: ["appVersion": "2.3"]).status == 403,
                "other tokens keep their own budget (this one is scoped elsewhere)")
        f.clock.advance(2)
        #expect(f.publish("later()").status == 201)
    }

    @Test("tokens issued from one token share its change budget (issue 43: 30 children landed 929 publishes in 4 s); one token issues at most 16 live tokens")
    func perTreeLimit() throws {
        let f = try ServiceFixture()
        var children: [String] = []
        for i in 0..<Registry.maxChildTokens {
            let issued = f.post("/v1/tokens", body: #"{"app": "demo", "name": "child-\#(i)"}"#, token: f.publisherToken)
            #expect(issued.status == 201)
            children.append(try #require(try f.json(issued)["token"]?.stringValue))
        }
        let tooMany = f.post("/v1/tokens", body: #"{"app": "demo", "name": "one-too-many"}"#, token: f.publisherToken)
        #expect(tooMany.status == 409)
        #expect(try f.json(tooMany)["error"]?["message"]?.stringValue?.contains("16 live tokens") == true)
        // Issuing spent 17 of the 30 changes a minute of the parent's line: 13 more publishes,
        // by whichever of its tokens, and the next is 429.
        var landed = 0
        for i in 0..<20 where f.post("/v1/apps/demo/patches", body: "p\(i)()", token: children[i % children.count], query: ["appVersion": "2.3"]).status == 201 {
            landed += 1
        }
        #expect(landed == 30 - Registry.maxChildTokens - 1)
        let grandchild = f.post("/v1/tokens", body: #"{"app": "demo", "name": "gc"}"#, token: children[0])
        #expect(grandchild.status == 429, "a child's issue spends the same budget")
        f.clock.advance(2)
        #expect(f.publish("later()").status == 201)
    }

    @Test("a revoked token stops working at once")
    func revokedToken() throws {
        let f = try ServiceFixture()
        #expect(f.publish("one()").status == 201)
        let registry = try TestBackend.registry(dataDirectory: f.dataDirectory, keysDirectory: f.keysDirectory)
        let record = try #require(try registry.token(presented: f.publisherToken))
        _ = try registry.revokeToken(id: record.id, actor: Actor("admin"))
        #expect(f.publish("two()").status == 401)
        #expect(throws: RegistryError.self) { try registry.revokeToken(id: record.id, actor: Actor("admin")) }
        #expect(try registry.auditEvents(app: nil).last?.action == "token.revoke")
    }

    @Test("a token scoped to one app learns only whether the global audit chain is intact")
    func scopedAuditChain() throws {
        let f = try ServiceFixture()
        let scoped = try f.json(f.get("/v1/audit", headers: ["Authorization": "Bearer \(f.publisherToken)"], query: ["verify": "true"]))
        #expect(scoped["chain"] == ["intact": true])
        #expect(scoped["events"]?.arrayValue?.allSatisfy { $0["app"]?.stringValue == "demo" } == true)
        let global = try f.json(f.get("/v1/audit", headers: ["Authorization": "Bearer \(f.auditorToken)"], query: ["verify": "true"]))
        #expect(global["chain"]?["head"]?.stringValue != nil)
    }

    @Test("the audit listing pages: `limit` events after `after`, `next` on every page but the last; paging together gives the whole log")
    func auditPaging() throws {
        let f = try ServiceFixture()
        for n in 1...4 { #expect(f.publish("fix\(n)()").status == 201) }
        let auth = ["Authorization": "Bearer \(f.auditorToken)"]
        let whole = try f.json(f.get("/v1/audit", headers: auth))
        let all = whole["events"]?.arrayValue?.compactMap { $0["seq"]?.intValue } ?? []
        #expect(all.count >= 6 && whole["next"] == nil, "one page holds the whole log: no next")
        var seen: [Int64] = []
        var after: Int64 = 0
        var pages = 0
        while true {
            let page = try f.json(f.get("/v1/audit", headers: auth, query: ["after": String(after), "limit": "2"]))
            let seqs = page["events"]?.arrayValue?.compactMap { $0["seq"]?.intValue } ?? []
            #expect(seqs.count <= 2)
            seen += seqs
            pages += 1
            guard let next = page["next"]?.intValue else { break }
            #expect(next == seqs.last, "next is the last seq of the page")
            after = next
        }
        #expect(seen == all)
        #expect(pages == (all.count + 1) / 2, "a full last page has no next: no empty page after it")
        // Filtered by app, the cursor is still the global seq.
        let demo = try f.json(f.get("/v1/audit", headers: auth, query: ["app": "demo", "after": String(all[all.count - 2]), "limit": "1000"]))
        #expect(demo["events"]?.arrayValue?.compactMap { $0["seq"]?.intValue } == [all.last!])
        let past = try f.json(f.get("/v1/audit", headers: auth, query: ["after": String(all.last!)]))
        #expect(past["events"]?.arrayValue?.isEmpty == true && past["next"] == nil)
        for (name, bad) in [("after", "-1"), ("after", "01"), ("after", "x"), ("limit", "0"), ("limit", "1001"), ("limit", "")] {
            let response = f.get("/v1/audit", headers: auth, query: [name: bad])
            #expect(response.status == 400, "\(name)=\(bad)")
        }
    }

    @Test("the audit listing pages newest first with `before`: seqs below it, descending, `next` the next `before`; with `after` only the seqs between; empty is 400")
    func auditPagingBackwards() throws {
        let f = try ServiceFixture()
        for n in 1...4 { #expect(f.publish("fix\(n)()").status == 201) }
        let auth = ["Authorization": "Bearer \(f.auditorToken)"]
        let all = try f.json(f.get("/v1/audit", headers: auth))["events"]?.arrayValue?.compactMap { $0["seq"]?.intValue } ?? []
        #expect(all.count >= 6)
        var seen: [Int64] = []
        var before = Int64.max
        var pages = 0
        while true {
            let page = try f.json(f.get("/v1/audit", headers: auth, query: ["before": String(before), "limit": "2"]))
            let seqs = page["events"]?.arrayValue?.compactMap { $0["seq"]?.intValue } ?? []
            #expect(seqs.count <= 2 && seqs.allSatisfy { $0 < before })
            seen += seqs
            pages += 1
            guard let next = page["next"]?.intValue else { break }
            #expect(next == seqs.last, "next is the oldest seq of the page")
            // A server that ignored `before` would answer the same page forever.
            try #require(next < before && pages <= all.count)
            before = next
        }
        #expect(seen == all.reversed(), "paging back from the newest gives the whole log, newest first")
        #expect(pages == (all.count + 1) / 2, "a full last page has no next")
        // Filtered by app, the cursor is still the global seq.
        let demo = try f.json(f.get("/v1/audit", headers: auth, query: ["app": "demo", "before": String(all.last!), "limit": "1"]))
        #expect(demo["events"]?.arrayValue?.compactMap { $0["seq"]?.intValue } == [all[all.count - 2]])
        let first = try f.json(f.get("/v1/audit", headers: auth, query: ["before": "1"]))
        #expect(first["events"]?.arrayValue?.isEmpty == true && first["next"] == nil)
        // With `after` as well, only the seqs between the two, still newest first.
        let between = try f.json(f.get("/v1/audit", headers: auth, query: ["before": String(all[4]), "after": String(all[1])]))
        #expect(between["events"]?.arrayValue?.compactMap { $0["seq"]?.intValue } == [all[3], all[2]])
        for query in [["before": ""], ["before": "0"], ["before": "01"], ["before": "-1"], ["before": "x"], ["before": "5", "after": "-1"]] {
            #expect(f.get("/v1/audit", headers: auth, query: query).status == 400, "\(query)")
        }
    }

    @Test("tokens are stored only as hashes")
    func tokenAtRest() throws {
        let f = try ServiceFixture()
        let stored = try TestBackend.storedBytes(dataDirectory: f.dataDirectory)
        #expect(!stored.isEmpty)
        for token in [f.publisherToken, f.auditorToken] {
            #expect(stored.range(of: Data(token.utf8)) == nil)
        }
    }

    @Test("publish, rollout, revoke, list and audit over the API are recorded with the token's actor")
    func writes() throws {
        let f = try ServiceFixture()
        let created = f.publish("one()")
        #expect(created.status == 201)
        #expect(try f.json(created)["publishedBy"]?.stringValue?.hasPrefix("ci (token ") == true)
        let rollout = f.post("/v1/apps/demo/versions/2.3/patches/1/rollout", body: "{\"percent\": 40}", token: f.publisherToken)
        #expect(rollout.status == 200)
        #expect(try f.json(rollout)["rollout"]?.intValue == 40)
        #expect(f.post("/v1/apps/demo/versions/2.3/patches/1/revoke", token: f.publisherToken, query: ["confirm": "true"]).status == 200)
        let list = f.get("/v1/apps/demo/patches", headers: ["Authorization": "Bearer \(f.auditorToken)"], query: ["active": "true"])
        #expect(try f.json(list).arrayValue?.isEmpty == true)
        let audit = f.get("/v1/audit", headers: ["Authorization": "Bearer \(f.auditorToken)"], query: ["app": "demo", "verify": "true"])
        let events = try f.json(audit)
        #expect(events["chain"]?["intact"]?.boolValue == true)
        #expect(events["events"]?.arrayValue?.suffix(3).compactMap { $0["action"]?.stringValue } == ["patch.publish", "patch.rollout", "patch.revoke"])
    }

    @Test("bad input gets a JSON error and the right status, never a 500", arguments: [
        ("GET", "/v1/apps/Demo/metadata/timestamp.json", 400), ("GET", "/v1/apps/ghost/metadata/timestamp.json", 404),
        ("GET", "/v1/apps/demo/versions/2.03/patch", 400), ("GET", "/v1/apps/demo/versions/../patch", 400),
        ("GET", "/v1/apps/../metadata/timestamp.json", 400), ("GET", "/v1/apps/demo/targets/2.3/x/a.main.js", 400),
        ("GET", "/v1/apps/demo/targets/2.3/0/a.main.js", 400), ("GET", "/v1/apps//metadata/timestamp.json", 404),
        ("GET", "/nope", 404), ("DELETE", "/v1/apps/demo/patches", 405), ("GET", "/v1/apps/demo/metadata/../../x", 404),
        ("POST", "/v1/apps/demo/versions/2.3/patches/1/rollout", 400), ("GET", "/v1/apps/demo/versions/2.3/patch?", 400),
    ])
    func badInput(method: String, path: String, status: Int) throws {
        let f = try ServiceFixture()
        var headers: [String: String] = ["Authorization": "Bearer \(f.publisherToken)"]
        if path.hasSuffix("?") { headers["X-Device-ID"] = String(repeating: "x", count: 300) }
        let response = f.service.respond(to: HTTPRequest(method: method, path: path.hasSuffix("?") ? String(path.dropLast()) : path,
                                                         headers: headers, body: method == "POST" ? Array("{not json".utf8) : []))
        #expect(response.status == status)
        #expect(try f.json(response)["error"]?["code"]?.stringValue != nil)
    }

    @Test("bad publish input is refused and changes nothing")
    func badPublish() throws {
        let f = try ServiceFixture()
        #expect(f.post("/v1/apps/demo/patches", body: "x()", token: f.publisherToken).status == 400, "appVersion missing")
        #expect(f.publish("", version: "2.3").status == 400)
        #expect(f.publish("x()", version: "2.3", rollout: 101).status == 400)
        #expect(f.post("/v1/apps/demo/versions/2.3/patches/9/revoke", token: f.publisherToken).status == 404)
        let list = f.get("/v1/apps/demo/patches", headers: ["Authorization": "Bearer \(f.auditorToken)"])
        #expect(try f.json(list).arrayValue?.isEmpty == true)
    }

    @Test("health and Prometheus metrics")
    func operations() throws {
        let f = try ServiceFixture()
        #expect(f.get("/healthz").status == 200)
        f.publish("x()")
        _ = f.get("/v1/apps/demo/versions/2.3/patch", headers: ["X-Device-ID": "m"])
        _ = f.get("/v1/apps/demo/versions/2.3/patch", headers: ["X-Device-ID": "m"])
        let metrics = f.get("/metrics").bodyString
        #expect(metrics.contains("hotpatch_requests_total{route=\"check\",status=\"200\"} 1"))
        #expect(metrics.contains("hotpatch_throttled_total 1"))
        #expect(metrics.contains("hotpatch_publishes_total 1"))
        #expect(metrics.contains("hotpatch_request_duration_seconds_count"))
        #expect(metrics.contains("hotpatch_tracked_devices 1"))
        #expect(!metrics.contains(f.publisherToken))
    }

    @Test("changes made by another process are picked up by reloadChanged")
    func reload() throws {
        let f = try ServiceFixture(minInterval: 0)
        #expect(f.get("/v1/apps/demo/versions/2.3/patch").status == 204, "served once: its catalog is prepared")
        let other = try TestBackend.registry(dataDirectory: f.dataDirectory, keysDirectory: f.keysDirectory)
        _ = try other.publish(app: try AppName("demo"), appVersion: try AppVersion("2.3"), bundle: Array("elsewhere()".utf8), actor: Actor("cli"))
        #expect(f.get("/v1/apps/demo/versions/2.3/patch").status == 204, "answered from the prepared catalog until a reload")
        f.service.reloadChanged()
        #expect(f.get("/v1/apps/demo/versions/2.3/patch").bodyString == "elsewhere()")
    }

    @Test("a snapshot, targets file or target committed elsewhere a moment ago is served at once (a catch-up), not 404; made-up files stay 404")
    func catchUpOnMiss() throws {
        let f = try ServiceFixture(minInterval: 0)
        let timestamp = try SignedTimestamp(bytes: f.get("/v1/apps/demo/metadata/timestamp.json").body)
        let other = try TestBackend.registry(dataDirectory: f.dataDirectory, keysDirectory: f.keysDirectory)
        let published = try other.publish(app: try AppName("demo"), appVersion: try AppVersion("2.3"), bundle: Array("elsewhere()".utf8), actor: Actor("cli"))
        // The device read the new timestamp from the instance that took the publish; this one
        // has not reloaded yet.
        let snapshot = timestamp.body.snapshot.version + 1
        let answer = f.get("/v1/apps/demo/metadata/\(snapshot).snapshot.json")
        #expect(answer.status == 200, "\(answer.status) \(answer.bodyString)")
        let targets = try other.latestMetadata(app: try AppName("demo"), role: .targets).version
        #expect(f.get("/v1/apps/demo/metadata/\(targets).targets.json").status == 200)
        #expect(f.get("/v1/apps/demo/targets/2.3/1/\(published.patch.served.md5).main.js").bodyString == "elsewhere()")
        #expect(f.get("/v1/apps/demo/metadata/999.snapshot.json").status == 404)
        #expect(f.get("/v1/apps/demo/metadata/2.root.json").status == 404)
    }

    @Test("misses one after another each get a reload that began after them (no once-per-50 ms limit); a conditional target too; an old number is 404 at once")
    func catchUpEveryMiss() throws {
        let f = try ServiceFixture(minInterval: 0)
        let app = try AppName("demo"), version = try AppVersion("2.3")
        #expect(f.get("/v1/apps/demo/metadata/timestamp.json").status == 200, "its catalog is prepared")
        let other = try TestBackend.registry(dataDirectory: f.dataDirectory, keysDirectory: f.keysDirectory)
        // Before, a second miss within 50 ms of the first answered 404 at once: a device whose
        // sync reached this instance just after another device's did failed (test_haproxy).
        for n in 1...3 {
            let published = try other.publish(app: app, appVersion: version, bundle: Array("elsewhere(\(n))".utf8), actor: Actor("cli"))
            let answer = f.get("/v1/apps/demo/targets/2.3/\(n)/\(published.patch.served.md5).main.js")
            #expect(answer.bodyString == "elsewhere(\(n))", "patch \(n): \(answer.status)")
        }
        let conditions = try DeliveryConditions(devices: try .hashing(["qa-1"]), os: nil)
        let conditional = try other.publish(app: app, appVersion: version, bundle: Array("only(qa)".utf8), conditions: conditions, actor: Actor("cli"))
        let path = "/v1/apps/demo/targets/2.3/4/\(conditional.patch.served.sha256).\(PatchTargetInfo.conditionalFileName)"
        #expect(f.get(path).bodyString == "only(qa)", "a conditional target is caught up on like any other")
        // A number at or below the newest listed patch cannot be newer: 404 without a reload.
        let before = f.service.lastReloadStartedForTests
        #expect(f.get("/v1/apps/demo/targets/2.3/2/\(String(repeating: "0", count: 32)).main.js").status == 404)
        #expect(f.get("/v1/apps/demo/metadata/0.snapshot.json").status == 404)
        #expect(f.service.lastReloadStartedForTests == before, "no reload for a miss no newer state could fill")
    }

    @Test("a patch a newer full rollout unlisted keeps its bundle served while older kept targets metadata names it; revoked, it is 404 at once")
    func supersededTargetsStayServable() throws {
        let f = try ServiceFixture(minInterval: 0)
        let app = try AppName("demo"), version = try AppVersion("2.3")
        let registry = try TestBackend.registry(dataDirectory: f.dataDirectory, keysDirectory: f.keysDirectory)
        let first = try registry.publish(app: app, appVersion: version, bundle: Array("first()".utf8), actor: Actor("cli"))
        let url = "/v1/apps/demo/targets/2.3/1/\(first.patch.served.sha256).main.js"
        // A device read targets naming patch 1; then patch 2 at 100 % unlisted it.
        _ = try registry.publish(app: app, appVersion: version, bundle: Array("second()".utf8), actor: Actor("cli"))
        f.service.reloadChanged()
        let latest = try SignedTargets(bytes: f.get("/v1/apps/demo/metadata/\(try registry.latestMetadata(app: app, role: .targets).version).targets.json").body)
        #expect(!latest.body.targets.keys.contains("2.3/1/main.js"), "superseded: no longer listed")
        #expect(f.get(url).bodyString == "first()", "still served: the targets file before names it")
        _ = try registry.revoke(app: app, appVersion: version, number: 1, actor: Actor("cli"))
        f.service.reloadChanged()
        #expect(f.get(url).status == 404, "a revoke stops serving it at once")
    }

    @Test("catalogs are built on an app's first request, not at start-up; unknown names never reach the registry")
    func lazyCatalogs() throws {
        let f = try ServiceFixture()
        #expect(f.service.catalog.appCount == 0)
        #expect(f.get("/v1/apps/demo/metadata/1.root.json").status == 200)
        #expect(f.service.catalog.appCount == 1)
        #expect(f.get("/v1/apps/nosuchapp/metadata/1.root.json").status == 404)
        #expect(f.service.catalog.appCount == 1)
        // An app created after start-up is known after the next reload, then built on use.
        let other = try TestBackend.registry(dataDirectory: f.dataDirectory, keysDirectory: f.keysDirectory)
        try other.createApp(try AppName("late"), encrypted: false, actor: Actor("cli"))
        f.service.reloadChanged()
        #expect(f.get("/v1/apps/late/metadata/1.root.json").status == 200)
    }

    @Test("the server re-signs a timestamp that nears expiry and serves the new one")
    func onlineResigning() throws {
        let f = try ServiceFixture()
        let before = try SignedTimestamp(bytes: f.get("/v1/apps/demo/metadata/timestamp.json").body)
        f.service.refreshExpiring(now: Date())
        #expect(try SignedTimestamp(bytes: f.get("/v1/apps/demo/metadata/timestamp.json").body).body.version == before.body.version,
                "nothing to do while fresh")
        f.service.refreshExpiring(now: Date().addingTimeInterval(13 * 3600))
        let after = try SignedTimestamp(bytes: f.get("/v1/apps/demo/metadata/timestamp.json").body)
        #expect(after.body.version == before.body.version + 1)
        #expect(after.body.expires > before.body.expires)
    }

    @Test("an app whose stored state is damaged is not served, and every other app still is")
    func damagedApp() throws {
        let f = try ServiceFixture()
        f.publish("fix()")
        let registry = try TestBackend.registry(dataDirectory: f.dataDirectory, keysDirectory: f.keysDirectory)
        // The blobs go, bypassing the foreign key that keeps them (each backend's own way).
        try registry.db.execute(registry.db.dialect == .sqlite ? "PRAGMA foreign_keys=OFF; DELETE FROM blobs"
                                : "ALTER TABLE patches DROP CONSTRAINT patches_served_sha256_fkey; DELETE FROM blobs")
        let logged = LogLines()
        let service = try PatchService(registry: registry, log: { logged.append($0) })
        #expect(service.respond(to: HTTPRequest(method: "GET", path: "/v1/apps/demo/metadata/1.root.json")).status == 404)
        #expect(service.respond(to: HTTPRequest(method: "GET", path: "/v1/apps/other/metadata/1.root.json")).status == 200)
        #expect(logged.lines.contains { $0.hasPrefix("not serving the new state of demo") })
    }
}

final class LogLines: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [String] = []
    func append(_ line: String) { lock.lock(); stored.append(line); lock.unlock() }
    var lines: [String] { lock.lock(); defer { lock.unlock() }; return stored }
}
