import Foundation
import HotpatchTestSupport
import PatchRegistry
import Testing
@testable import HTTPTransport
@testable import PatchServer

@Suite("/healthz")
struct HealthTests {
    @Test("answers from a read of the registry, and does not queue behind a change that holds it")
    func notBehindAChange() throws {
        let f = try ServiceFixture()
        let first = f.get("/healthz")
        #expect(first.status == 200)
        #expect(first.bodyString.contains("\"apps\":2"))
        let holding = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        let service = f.service
        Thread {
            _ = try? service.read { _ throws(RegistryError) in
                holding.signal()
                _ = release.wait(timeout: .now() + 2)  // bounded: before the fix the probe waited here
            }
        }.start()
        holding.wait()
        let started = Date()
        let during = f.get("/healthz")
        let waited = Date().timeIntervalSince(started)
        release.signal()
        #expect(during.status == 200)
        #expect(waited < 0.5, "waited \(waited) s behind the change")
    }

    @Test("answers from patchd's once-a-second reload while it is fresh: no read, no wait for the registry on the worker thread")
    func fromTheReload() throws {
        let f = try ServiceFixture()
        f.service.reloadChanged()
        let holding = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        let service = f.service
        Thread {
            _ = try? service.read { _ throws(RegistryError) in
                holding.signal()
                _ = release.wait(timeout: .now() + 2)
            }
        }.start()
        holding.wait()
        let started = Date()
        // No /healthz read came before: without the reload's answer this one would wait for
        // the registry (up to the 2 s the other thread holds it).
        let during = f.get("/healthz")
        let waited = Date().timeIntervalSince(started)
        release.signal()
        #expect(during.status == 200 && during.bodyString.contains("\"apps\":2"))
        #expect(waited < 0.5, "waited \(waited) s for the registry")
    }

    @Test("says degraded (200, with the reason) once an app's timestamp expires within the margin, ok outside it")
    func expiringTimestamp() throws {
        // The timestamp lives a day: a two-day margin puts it inside.
        let near = try ServiceFixture(expiryMargin: 2 * 86_400)
        near.service.refreshExpiring()
        let health = near.get("/healthz")
        #expect(health.status == 200, "the same on every instance: haproxy must keep them")
        let json = try near.json(health)
        #expect(json["status"]?.stringValue == "degraded")
        let reasons = json["reasons"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(reasons.count == 2 && reasons.allSatisfy { $0.hasPrefix("timestamp of app ") && $0.hasSuffix(" s") }, "\(reasons)")
        #expect(reasons.contains { $0.hasPrefix("timestamp of app demo expires in 86") }, "\(reasons)")

        // The default margin is a quarter of the lifetime (6 h of the day).
        let far = try ServiceFixture()
        far.service.refreshExpiring()
        #expect(try far.json(far.get("/healthz"))["status"]?.stringValue == "ok")
        // Before the first pass nothing is known, so nothing is degraded.
        #expect(try ServiceFixture(expiryMargin: 2 * 86_400).get("/healthz").bodyString.contains("\"ok\""))
    }

    @Test("/metrics has each role's seconds to expiry per app, whether this instance holds the upkeep lease, and re-sign failures")
    func upkeepMetrics() throws {
        let f = try ServiceFixture()
        f.service.refreshExpiring()
        let text = f.get("/metrics").bodyString
        for role in ["root", "targets", "snapshot", "timestamp"] {
            #expect(text.contains("hotpatch_metadata_expires_in_seconds{app=\"demo\",role=\"\(role)\"} "), "\(role)")
        }
        let timestamp = text.split(separator: "\n").first { $0.hasPrefix("hotpatch_metadata_expires_in_seconds{app=\"demo\",role=\"timestamp\"} ") }
        let seconds = timestamp.flatMap { Int($0.split(separator: " ").last ?? "") } ?? -1
        #expect((86_000...86_400).contains(seconds), "\(timestamp ?? "none")")
        #expect(text.contains("hotpatch_upkeep_lease_held 1\n"), "the only instance")
        #expect(text.contains("hotpatch_upkeep_apps_without_keys 0\n"))
        #expect(text.contains("# TYPE hotpatch_resign_failures_total counter\n"))

        // The timestamp key gone, and a pass a day later (the timestamp is due): a failure of kind "keys".
        try removeKeys(of: "timestamp", in: f.keysDirectory.appendingPathComponent("demo"))
        f.service.refreshExpiring(now: Date().addingTimeInterval(86_000))
        let after = f.get("/metrics").bodyString
        #expect(after.contains("hotpatch_resign_failures_total{app=\"demo\",reason=\"keys\"} 1\n"), "\(after)")
        #expect(after.contains("hotpatch_upkeep_apps_without_keys 1\n"))
    }

    @Test("a registry file deleted under the service: /healthz 503 after the reload (and without it), a publish refused 503, not 201",
          .enabled(if: !TestBackend.isPostgres, "about the SQLite file"))
    func fileDeleted() throws {
        let f = try ServiceFixture()
        f.service.reloadChanged()
        #expect(f.get("/healthz").status == 200)
        for name in ["registry.sqlite", "registry.sqlite-wal", "registry.sqlite-shm"] {
            try? FileManager.default.removeItem(at: f.dataDirectory.appendingPathComponent(name))
        }
        f.service.reloadChanged()
        let health = f.get("/healthz")
        #expect(health.status == 503)
        #expect(health.bodyString.contains("deleted or replaced"))
        let published = f.publish("lost();")
        #expect(published.status == 503)
        #expect(published.bodyString.contains("the registry file was deleted or replaced under this server; nothing was changed"))
        #expect(f.get("/v1/apps/demo/metadata/timestamp.json").status == 200, "what is prepared is still served")

        let fresh = try ServiceFixture()
        for name in ["registry.sqlite", "registry.sqlite-wal", "registry.sqlite-shm"] {
            try? FileManager.default.removeItem(at: fresh.dataDirectory.appendingPathComponent(name))
        }
        #expect(fresh.get("/healthz").status == 503, "a health check with no reload before it reads the path too")
    }
}

/// Deletes an app's key files of one role (`{role}.{keyid}.pem`): this machine can no longer sign for it.
func removeKeys(of role: String, in directory: URL) throws {
    for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) where name.hasPrefix(role + ".") {
        try FileManager.default.removeItem(at: directory.appendingPathComponent(name))
    }
}
