import Foundation
import PatchCore
@testable import PatchPush
import PatchSigning
import Testing
@testable import PatchRegistry

/// Webhooks in the registry (issue 47): subscriptions, the outbox written in the change's own
/// transaction, claims, retries, the bound, and what never leaves the registry. On both
/// backends (HOTPATCH_TEST_REGISTRY=postgres).
@Suite("Webhooks: subscriptions and the outbox")
struct WebhookTests {
    let v23: AppVersion
    init() throws { v23 = try AppVersion("2.3") }

    static let secret = "whsec_4f9c2a7e1b6d3f8a0c5e9b2d7f1a4c6e"

    /// Every event waiting for `app`'s subscriptions, oldest first: (subscription, type, body).
    func outbox(_ t: TempRegistry) throws -> [(sub: String, type: String, body: JSON)] {
        try t.registry.db.query("SELECT sub, type, body FROM webhook_outbox ORDER BY n") { s in
            (s.text(0), s.text(1), (try? JSONParser.parse(s.blob(2))) ?? .null)
        }
    }

    /// The change `body` stored to wait for signatures.
    func waiting<T>(_ body: () throws(RegistryError) -> T) throws -> PendingChange {
        do {
            _ = try body()
        } catch .pending(let change) {
            return change
        }
        throw RegistryError.internalError("the change landed instead of waiting for signatures")
    }

    func claimAll(_ t: TempRegistry, now: Date = Date()) throws -> [WebhookDelivery] {
        try t.registry.claimWebhookDeliveries(limit: 100, claimFor: 30, now: now)
    }

    @Test("an audited change writes its event in its own transaction: none for a dry run or a refused change, the body as documented")
    func sameTransaction() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        let hook = try t.registry.addWebhook(app: app, url: "https://hooks.example.com/x", secret: WebhookTests.secret, actor: t.actor).subscription
        #expect(try outbox(t).isEmpty, "webhook.add is not sent")
        try t.publish(app, "2.3", "one()")
        // A dry run works the change out in full and rolls it back: its event with it.
        _ = try t.registry.perform(RevokeOperation(appVersion: v23, patch: 1), OperationContext(app: app, actor: t.actor, dryRun: true, confirmed: true))
        // A refused change (no such patch) rolls back before anything is kept.
        #expect(throws: RegistryError.self) { try t.registry.halt(app: app, appVersion: v23, number: 9, actor: t.actor) }
        let rows = try outbox(t)
        #expect(rows.map(\.type) == ["patch.publish"])
        let body = try #require(rows.first?.body)
        let audit = try #require(try t.registry.auditEvents(app: app).last)
        #expect(rows[0].sub == hook.id)
        #expect(body["type"]?.stringValue == "patch.publish" && body["app"]?.stringValue == "demo")
        #expect(body["seq"]?.intValue == audit.seq && body["actor"]?.stringValue == t.actor.name && body["at"]?.stringValue == audit.at)
        #expect(body["details"] == audit.details)
        #expect(body["id"]?.stringValue?.utf8.count == 32)
        #expect(body["text"]?.stringValue == "[demo] patch 1 of 2.3 published to production at 100 % by tester@test")
    }

    @Test("a subscription gets only the types and families it names, each subscription its own copy, in the order written")
    func filtersAndOrder() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        let guards = try t.registry.addWebhook(app: app, url: "https://a.example.com/", events: try WebhookEventFilter("guard.*,patch.halt"), actor: t.actor).subscription
        let all = try t.registry.addWebhook(app: app, url: "https://b.example.com/", actor: t.actor).subscription
        try t.publish(app, "2.3", "one()")
        try t.registry.setGuard(app: app, maxRollbackPPM: 20_000, minDevices: 50, action: .halt, actor: t.actor)
        try t.registry.halt(app: app, appVersion: v23, number: 1, actor: t.actor)
        let rows = try outbox(t)
        #expect(rows.filter { $0.sub == guards.id }.map(\.type) == ["guard.set", "patch.halt"])
        #expect(rows.filter { $0.sub == all.id }.map(\.type) == ["patch.publish", "guard.set", "patch.halt"])
        // Another app's changes reach neither.
        let other = try t.app("other")
        try t.publish(other, "1.0", "x()")
        #expect(try outbox(t).count == 5)
        #expect(throws: RegistryError.self) { try WebhookEventFilter("patch.nope") }
        #expect(throws: RegistryError.self) { try WebhookEventFilter("nothing.*") }
        #expect(throws: RegistryError.self) { try WebhookEventFilter("") }
    }

    @Test("one claim per event: the head of each subscription only, nobody else's until it runs out; delivered leaves the outbox")
    func claims() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        let hook = try t.registry.addWebhook(app: app, url: "https://hooks.example.com/x", actor: t.actor).subscription
        try t.publish(app, "2.3", "one()")
        try t.publish(app, "2.3", "two()")
        let now = Date()
        let first = try claimAll(t, now: now)
        #expect(first.map(\.type) == ["patch.publish"] && first[0].subscription == hook.id)
        #expect(try (JSONParser.parse(first[0].body))["details"]?["patch"]?.intValue == 1, "the oldest first")
        #expect(try claimAll(t, now: now.addingTimeInterval(29)).isEmpty, "claimed, and the next waits behind it")
        // The claim runs out (a process killed after sending): sent again, with the same id.
        let again = try claimAll(t, now: now.addingTimeInterval(31))
        #expect(again.map(\.eventID) == first.map(\.eventID))
        try t.registry.recordWebhookAttempt(again[0], .delivered(status: 200), retry: WebhookRetryPolicy())
        // The first claim's answer arrives late: counted once.
        try t.registry.recordWebhookAttempt(first[0], .delivered(status: 200), retry: WebhookRetryPolicy())
        let next = try claimAll(t, now: now.addingTimeInterval(31))
        #expect(try (JSONParser.parse(next[0].body))["details"]?["patch"]?.intValue == 2)
        let listed = try #require(try t.registry.webhooks(app: app).first)
        #expect(listed.delivered == 1 && listed.pending == 1 && listed.lastDeliveryAt != nil)
        // A test event goes to that subscription only, whatever it filters, through the same outbox.
        let other = try t.registry.addWebhook(app: app, url: "https://other.example.com/", events: try WebhookEventFilter("guard.*"), actor: t.actor).subscription
        let test = try t.registry.testWebhook(app: app, id: other.id, actor: t.actor)
        #expect(try outbox(t).filter { $0.sub == other.id }.map(\.type) == ["webhook.test"])
        #expect(try outbox(t).filter { $0.sub == hook.id }.map(\.type) == ["patch.publish"], "the other subscription gets no test")
        #expect(try t.registry.auditEvents(app: app).last?.details["event"]?.stringValue == test.id)
        #expect(throws: RegistryError.self) { try t.registry.testWebhook(app: app, id: "000000000000", actor: t.actor) }
    }

    @Test("a failed attempt waits its backoff, is given up after the window (counted failed), and a refusal is not retried")
    func retries() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        _ = try t.registry.addWebhook(app: app, url: "https://hooks.example.com/x", actor: t.actor)
        try t.publish(app, "2.3", "one()")
        try t.publish(app, "2.3", "two()")
        let policy = WebhookRetryPolicy(base: 10, cap: 40, window: 100)
        let now = Date()
        let attempt = try #require(try claimAll(t, now: now).first)
        try t.registry.recordWebhookAttempt(attempt, .retry("HTTP 503"), retry: policy, random: 0.5, now: now)
        #expect(try claimAll(t, now: now.addingTimeInterval(7)).isEmpty, "backoff 7.5 s (10 s, jitter in its upper half)")
        let second = try #require(try claimAll(t, now: now.addingTimeInterval(8)).first)
        #expect(second.attempts == 1 && second.eventID == attempt.eventID)
        #expect(try t.registry.webhooks(app: app)[0].lastError == "HTTP 503")
        // Past the window: given up, and the next event is sent.
        try t.registry.recordWebhookAttempt(second, .retry("HTTP 503"), retry: policy, random: 0, now: now.addingTimeInterval(95))
        var listed = try t.registry.webhooks(app: app)[0]
        #expect(listed.failed == 1 && listed.pending == 1 && listed.lastError?.hasPrefix("HTTP 503 (given up after 2 attempts)") == true)
        let third = try #require(try claimAll(t, now: now.addingTimeInterval(95)).first)
        #expect(third.eventID != attempt.eventID)
        try t.registry.recordWebhookAttempt(third, .failed("HTTP 301: a redirect"), retry: policy, now: now.addingTimeInterval(95))
        listed = try t.registry.webhooks(app: app)[0]
        #expect(listed.failed == 2 && listed.pending == 0)
        // The delays: doubling from base, capped, jitter within the upper half.
        #expect(policy.delay(afterAttempts: 1, random: 0) == 5 && policy.delay(afterAttempts: 1, random: 0.999) < 10)
        #expect(policy.delay(afterAttempts: 3, random: 1) == 40 && policy.delay(afterAttempts: 30, random: 1) == 40)
    }

    @Test("past maxPending the oldest waiting event is dropped and counted; removing drops the rest")
    func bounded() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        let hook = try t.registry.addWebhook(app: app, url: "https://hooks.example.com/x", maxPending: 2, actor: t.actor).subscription
        for i in 1...5 { try t.publish(app, "2.3", "p\(i)()") }
        #expect(try outbox(t).map { $0.body["details"]?["patch"]?.intValue } == [4, 5])
        var listed = try t.registry.webhooks(app: app)[0]
        #expect(listed.dropped == 3 && listed.pending == 2)
        try t.registry.removeWebhook(app: app, id: hook.id, actor: t.actor)
        #expect(try outbox(t).isEmpty && t.registry.webhooks(app: app).isEmpty)
        let counts = try #require(try t.registry.webhookCounts().first)
        #expect(counts.dropped == 5 && counts.pending == 0, "a removed subscription's counts stay")
        #expect(throws: RegistryError.self) { try t.registry.removeWebhook(app: app, id: hook.id, actor: t.actor) }
        listed = try #require(try t.registry.addWebhook(app: app, url: "https://hooks.example.com/y", actor: t.actor).subscription as WebhookSubscription?)
        #expect(listed.pending == 0)
    }

    @Test("the secret is never in a listing, an answer other than the one that made it, or the audit log; the URL's path is not shown")
    func secretStays() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        let given = try t.registry.addWebhook(app: app, url: "https://hooks.slack.com/services/T0/B0/SECRETPATH", secret: WebhookTests.secret, actor: t.actor)
        #expect(given.secret == nil && given.subscription.json["url"]?.stringValue == "https://hooks.slack.com/…")
        let made = try t.registry.addWebhook(app: app, url: "https://hooks.example.com/x", actor: t.actor)
        let secret = try #require(made.secret)
        #expect(secret.hasPrefix("whsec_") && secret.utf8.count == 70)
        let answer = try t.registry.perform(try AddWebhookOperation(OperationValues(["url": "https://c.example.com/", "secret": WebhookTests.secret])),
                                            OperationContext(app: app, actor: t.actor))
        #expect(answer["secret"] == nil)
        let everything = try t.registry.webhooks(app: app).map(\.json.canonicalString).joined()
            + (try t.registry.auditEvents(app: app).map(\.json.canonicalString).joined())
        for hidden in [WebhookTests.secret, secret, "SECRETPATH", "services"] { #expect(!everything.contains(hidden), "\(hidden) leaked") }
        #expect(throws: RegistryError.self) { try t.registry.addWebhook(app: app, url: "https://x.example.com/", secret: "short", actor: t.actor) }
    }

    @Test("URLs: https, or http only to loopback unless insecureHttp (recorded); no credentials, fragments or other schemes")
    func urls() throws {
        for good in ["https://hooks.example.com/a?b=c", "http://127.0.0.1:8080/hook", "http://[::1]/", "http://localhost:9/x", "HTTPS://Example.COM/"] {
            #expect(throws: Never.self) { _ = try WebhookURL(good, insecureHTTP: false) }
        }
        for bad in ["http://hooks.example.com/", "ftp://example.com/", "https://user:pw@example.com/", "https://example.com/#x", "example.com/x",
                    "https:///nohost", "https://exa mple.com/", String(repeating: "a", count: 3000)] {
            #expect(throws: WebhookURLError.self, "\(bad.prefix(40))") { _ = try WebhookURL(bad, insecureHTTP: false) }
        }
        #expect(throws: Never.self) { _ = try WebhookURL("http://hooks.example.com/", insecureHTTP: true) }
        let t = try TempRegistry()
        let app = try t.app("demo")
        _ = try t.registry.addWebhook(app: app, url: "http://hooks.example.com/", insecureHTTP: true, actor: t.actor)
        #expect(try t.registry.webhooks(app: app)[0].insecureHTTP)
        #expect(try t.registry.auditEvents(app: app).last?.details["insecureHttp"] == true)
    }

    @Test("every class of private destination is refused with --webhook-deny-private, public ones pass")
    func addresses() throws {
        let refused: [String: String] = [
            "127.0.0.1": "loopback", "127.9.9.9": "loopback", "::1": "loopback", "::ffff:127.0.0.1": "loopback",
            "10.1.2.3": "private", "172.16.0.1": "private", "172.31.255.255": "private", "192.168.1.1": "private", "fd00::1": "private",
            "fc00::1": "private", "100.64.0.1": "private", "fec0::1": "private",
            "169.254.169.254": "link-local", "fe80::1": "link-local", "::ffff:169.254.169.254": "link-local",
            "0.0.0.0": "unspecified", "::": "unspecified", "224.0.0.1": "multicast", "ff02::1": "multicast",
            "240.0.0.1": "reserved", "255.255.255.255": "reserved", "198.18.0.1": "reserved", "64:ff9b::a00:1": "private",
        ]
        for (address, kind) in refused {
            let bytes = try #require(WebhookAddress.literal(address))
            #expect(WebhookAddress.refusal(bytes) == kind, "\(address)")
        }
        for address in ["93.184.216.34", "172.32.0.1", "100.128.0.1", "2606:4700::1111", "192.0.2.1", "8.8.8.8"] {
            #expect(WebhookAddress.refusal(try #require(WebhookAddress.literal(address))) == nil, "\(address)")
        }
        let t = try TempRegistry()
        let app = try t.app("demo")
        t.registry.webhookAddresses = .publicOnly
        for url in ["https://127.0.0.1/", "https://localhost/", "http://[::1]:8080/", "https://10.0.0.8/", "https://[fe80::1]/", "https://169.254.169.254/latest"] {
            #expect(throws: RegistryError.self, "\(url)") { try t.registry.addWebhook(app: app, url: url, actor: t.actor) }
        }
        #expect(try t.registry.webhooks(app: app).isEmpty && t.registry.auditEvents(app: app).last?.action == "app.create", "nothing changed")
        _ = try t.registry.addWebhook(app: app, url: "https://93.184.216.34/hook", actor: t.actor)
    }

    @Test("docs/openapi.yaml's WebhookEventType lists exactly the types a subscription can name")
    func documentedTypes() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let yaml = try String(contentsOf: root.appendingPathComponent("docs/openapi.yaml"), encoding: .utf8)
        let section = try #require(yaml.components(separatedBy: "    WebhookEventType:\n").dropFirst().first)
        let line = try #require(section.split(separator: "\n").first { $0.hasPrefix("      enum: [") })
        let listed = line.dropFirst("      enum: [".count).dropLast().split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(listed == WebhookEvent.types)
    }

    @Test("X-Hotpatch-Signature: the documented test vector, and docs/PROTOCOL.md shows it")
    func signatureVector() throws {
        let body = Array(#"{"app":"demo","id":"00112233445566778899aabbccddeeff","type":"webhook.test"}"#.utf8)
        let expected = "v1=c8af5ec4295075fa2d28ed15bfba0a5f401140177647e8e93b5fb41f8ca24f67"
        #expect(WebhookSignature.sign(secret: WebhookTests.secret, timestamp: 1_765_152_000, body: body) == expected)
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let protocolText = try String(contentsOf: root.appendingPathComponent("docs/PROTOCOL.md"), encoding: .utf8)
        for part in [expected, WebhookTests.secret, "1765152000", String(decoding: body, as: UTF8.self)] {
            #expect(protocolText.contains(part), "PROTOCOL.md lacks \(part)")
        }
    }

    @Test("a pending change's events say who has signed and who may still sign: created, approved, rejected")
    func pendingChanges() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        _ = try t.registry.addWebhook(app: app, url: "https://hooks.example.com/x", events: try WebhookEventFilter("change.*"), actor: t.actor)
        let alice = try SigningKey.generateEd25519(), bob = try SigningKey.generateEd25519()
        let keys = [alice.tufKey.keyID, bob.tufKey.keyID].sorted()
        let change = try waiting { () throws(RegistryError) in try t.registry.setTargetsKeys(app: app, keys: [alice.tufKey, bob.tufKey], threshold: 2, actor: t.actor) }
        _ = try t.registry.approve(app: app, id: change.id, keys: [alice], actor: Actor("alice@test"))
        // Asked again while it waits, it is the same change: no second proposal. Then rejected.
        #expect(try waiting { () throws(RegistryError) in try t.registry.setTargetsKeys(app: app, keys: [alice.tufKey, bob.tufKey], threshold: 2, actor: t.actor) }.id == change.id)
        try t.registry.reject(app: app, id: change.id, reason: "not now", actor: Actor("bob@test"))
        let rows = try outbox(t)
        #expect(rows.map(\.type) == ["change.propose", "change.approve", "change.reject"])
        guard rows.count == 3 else { return }
        #expect(rows[0].body["details"]?["signedBy"] == .array([]) && rows[0].body["details"]?["mayStillSign"] == .array(keys.map(JSON.string)))
        #expect(rows[1].body["details"]?["signedBy"] == .array([.string(alice.tufKey.keyID)]))
        #expect(rows[1].body["details"]?["mayStillSign"] == .array([.string(bob.tufKey.keyID)]))
        #expect(rows[1].body["text"]?.stringValue?.contains("signed by alice@test: 1 of 2") == true)
        #expect(rows[2].body["actor"]?.stringValue == "bob@test" && rows[2].body["details"]?["reason"]?.stringValue == "not now")
        #expect(rows[2].body["details"]?["mayStillSign"] == .array([.string(bob.tufKey.keyID)]))
    }

    @Test("a staged rollout's hold (once per step) and step carry the figures that decided")
    func scheduleEvents() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        _ = try t.registry.addWebhook(app: app, url: "https://hooks.example.com/x", events: try WebhookEventFilter("rollout.*"), actor: t.actor)
        try t.registry.publish(app: app, appVersion: v23, bundle: Array("one()".utf8), rollout: 5, actor: t.actor, now: start)
        try t.registry.setGuard(app: app, maxRollbackPPM: 20_000, minDevices: 50, action: .halt, actor: t.actor, now: start)
        try t.registry.setSchedule(app: app, appVersion: v23, number: 1, steps: [25, 50], everySeconds: 3600, actor: t.actor, now: start)
        _ = try feed(t, app, devices: 0..<10, rolledBack: 0)
        for minute in 0..<3 { #expect(try t.registry.advanceSchedules(app: app, now: start.addingTimeInterval(3600 + Double(minute) * 60)).isEmpty) }
        _ = try feed(t, app, devices: 10..<400, rolledBack: 0)
        #expect(try t.registry.advanceSchedules(app: app, now: start.addingTimeInterval(3900)).count == 1)
        let rows = try outbox(t)
        #expect(rows.map(\.type) == ["rollout.schedule", "rollout.schedule.hold", "rollout.schedule.step"])
        let hold = try #require(rows[1].body["details"])
        #expect(hold["installed"]?.intValue == 10 && hold["minDevices"]?.intValue == 50 && hold["step"]?.intValue == 25)
        #expect(hold["why"]?.stringValue == "10 of the 50 installed devices needed")
        let step = try #require(rows[2].body["details"])
        #expect(step["installed"]?.intValue == 400 && step["rolledBack"]?.intValue == 0 && step["from"]?.intValue == 5 && step["to"]?.intValue == 25)
        #expect((step["upperPpm"]?.intValue ?? 99_999) < 20_000 && step["thresholdPpm"]?.intValue == 20_000)
        #expect(rows[2].body["actor"]?.stringValue == "patchd schedule" && rows[2].body["seq"] == .null)
    }

    @Test("upkeep states are told once until cleared, whatever the passes")
    func onceStates() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        _ = try t.registry.addWebhook(app: app, url: "https://hooks.example.com/x", actor: t.actor)
        for _ in 0..<3 { try t.registry.noteWebhookState(app: app, mark: "resign", type: "metadata.resign.failed", details: ["error": "keys: missing"]) }
        #expect(try outbox(t).map(\.type) == ["metadata.resign.failed"])
        let before = try t.registry.dataVersion()
        try t.registry.clearWebhookState(app: app, prefix: "health")
        #expect(try t.registry.dataVersion() == before, "nothing to clear writes nothing")
        try t.registry.clearWebhookState(app: app, prefix: "resign")
        try t.registry.noteWebhookState(app: app, mark: "resign", type: "metadata.resign.failed", details: ["error": "keys: missing"])
        let rows = try outbox(t)
        #expect(rows.count == 2 && rows[1].body["seq"] == .null && rows[1].body["actor"] == .null)
        #expect(rows[1].body["text"]?.stringValue == "[demo] RE-SIGN FAILED: keys: missing")
    }
}
