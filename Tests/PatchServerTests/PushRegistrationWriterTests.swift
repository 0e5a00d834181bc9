import Foundation
import Locking
import PatchCore
import PatchRegistry
import Testing
@testable import HTTPTransport
@testable import PatchServer
import HotpatchTestSupport

/// Holds the registry lock on a thread of its own until `release()` (30 s at most): what a
/// long publish, or a report group, does to whoever needs the lock meanwhile.
final class RegistryLockHolder: @unchecked Sendable {
    private let release = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)
    private let releasedFlag = Locked(false)

    init(_ service: PatchService) {
        let held = DispatchSemaphore(value: 0)
        Thread { [release, done, releasedFlag] in
            service.registry.withLock { _ in
                held.signal()
                _ = release.wait(timeout: .now() + 30)
                // Set before the lock is let go: whoever waited for the lock sees it set.
                releasedFlag.withLock { $0 = true }
            }
            done.signal()
        }.start()
        held.wait()
    }

    /// Whether the holder has let the lock go.
    var released: Bool { releasedFlag.withLock { $0 } }

    func free() {
        release.signal()
        done.wait()
    }
}

extension ServiceFixture {
    /// What the devices route makes of a registration, without waiting for a promised answer.
    func registrationReply(_ body: String, device: String = "device-1", from ip: String = "127.0.0.1") -> HTTPReply? {
        let request = HTTPRequest(method: "POST", path: "/v1/apps/demo/devices", fields: [("Content-Type", "application/json"), ("X-Device-ID", device)],
                                  body: Array(body.utf8), remoteAddress: ip)
        switch service.admit(request) {
        case .readBody(_, _, let finish): return finish(request)
        case .answer(let response): return .now(response)
        case .later(let promise): return .later(promise)
        }
    }

    func metric(_ name: String) -> Int? {
        get("/metrics").bodyString.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Int($0.split(separator: " ")[1]) }
    }
}

/// Issue 43, item 5: nothing an anonymous registration sends takes the registry lock, or
/// waits on the disk, on the thread that read it.
@Suite("Device-token registrations: off the request thread, bounded, remembered")
struct PushRegistrationWriterTests {
    static func token(_ n: Int) -> String { ServiceFixture.token(n) }

    @Test("while another thread holds the registry lock, a refresh of a token this server wrote is 200 at once, and a new token is queued without waiting for the lock, then 201 once it is free")
    func noLockOnTheRequestThread() throws {
        let f = try PushRouteTests.fixture()
        #expect(f.registerDevice(f.deviceBody(Self.token(1))).status == 201)
        let holder = RegistryLockHolder(f.service)
        guard case .now(let refreshed) = f.registrationReply(f.deviceBody(Self.token(1))) else {
            Issue.record("a refresh of a token written here was not answered at once")
            holder.free()
            return
        }
        #expect(refreshed.status == 200)
        #expect(try f.json(refreshed) == ["registered": "refreshed"])
        guard case .later(let promise) = f.registrationReply(f.deviceBody(Self.token(2))) else {
            Issue.record("a new token was answered on the request thread")
            holder.free()
            return
        }
        #expect(!holder.released, "the handler returned while the lock was held elsewhere: it never waited for it")
        let early = Locked<HTTPResponse?>(nil)
        promise.whenKept { response in early.withLock { $0 = response } }
        #expect(early.withLock { $0 } == nil, "not answered before it is written")
        holder.free()
        let stored = promise.wait()
        #expect(stored.status == 201)
        #expect(try f.pushDevices().map(\.token).sorted() == [Self.token(1), Self.token(2)])
        #expect(f.metric("hotpatch_push_refreshes_from_memory_total") == 1)
    }

    @Test("past the registration queue's bound a registration is 503 with Retry-After at once, stores nothing and is counted; the queued ones are answered 201 once written, and the queue takes more")
    func burstPastTheQueue() throws {
        let f = try PushRouteTests.fixture(pushQueue: 3)
        let holder = RegistryLockHolder(f.service)
        let replies = (1...5).map { f.registrationReply(f.deviceBody(Self.token($0)), device: "d\($0)") }
        var promises: [HTTPPromise] = []
        for reply in replies.prefix(3) {
            if case .later(let promise) = reply { promises.append(promise) }
        }
        #expect(promises.count == 3, "the first three queued")
        for reply in replies.suffix(2) {
            guard case .now(let refused) = reply else { Issue.record("a registration past the bound was queued"); continue }
            #expect(refused.status == 503)
            #expect(refused.header("Retry-After") == "30")
            #expect(try f.json(refused)["error"]?["code"] == "busy")
        }
        holder.free()
        #expect(promises.map { $0.wait().status } == [201, 201, 201])
        #expect(try f.pushDevices().map(\.token).sorted() == (1...3).map(Self.token))
        #expect(f.metric("hotpatch_push_registrations_refused_total") == 2)
        #expect(f.registerDevice(f.deviceBody(Self.token(4)), device: "d4").status == 201, "the device refused sends again later")
    }

    @Test("concurrent registrations of one token from two devices: one is stored, the other is 409, whatever the grouping")
    func oneTokenTwoDevices() throws {
        let f = try PushRouteTests.fixture()
        let statuses = Locked<[String: Int]>([:])
        let body = Array(f.deviceBody(Self.token(7)).utf8), service = f.service
        DispatchQueue.concurrentPerform(iterations: 2) { i in
            let status = service.respond(to: HTTPRequest(method: "POST", path: "/v1/apps/demo/devices", fields: [("X-Device-ID", "phone-\(i)")],
                                                         body: body, remoteAddress: "127.0.0.1")).status
            statuses.withLock { $0["phone-\(i)"] = status }
        }
        #expect(statuses.withLock { $0.values.sorted() } == [201, 409])
        #expect(try f.pushDevices().count == 1)
    }

    @Test("a token is remembered only while the registry holds it as written: after it is evicted, or another process deletes it (the reload), its refresh is stored again (201), not answered from memory")
    func forgottenWhenItMayHaveChanged() throws {
        let f = try PushRouteTests.fixture(maxPushDevices: 1)
        #expect(f.registerDevice(f.deviceBody(Self.token(1))).status == 201)
        #expect(f.registerDevice(f.deviceBody(Self.token(1))).status == 200)
        #expect(f.metric("hotpatch_push_refreshes_from_memory_total") == 1)
        // A full table: token 2 takes token 1's place.
        #expect(f.registerDevice(f.deviceBody(Self.token(2)), device: "device-2").status == 201)
        #expect(f.registerDevice(f.deviceBody(Self.token(1))).status == 201, "evicted: stored again")
        #expect(try f.pushDevices().map(\.token) == [Self.token(1)])
        #expect(f.registerDevice(f.deviceBody(Self.token(1))).status == 200)
        // Another process deletes it (patchctl notify on the same registry, APNs said gone).
        let other = try TestBackend.registry(dataDirectory: f.dataDirectory, keysDirectory: f.keysDirectory)
        #expect(try other.removePushDevices(app: try AppName("demo"), tokens: [Self.token(1)]) == 1)
        f.service.reloadChanged()
        #expect(f.registerDevice(f.deviceBody(Self.token(1))).status == 201, "deleted elsewhere: stored again")
        #expect(try f.pushDevices().map(\.token) == [Self.token(1)])
        #expect(f.metric("hotpatch_push_refreshes_from_memory_total") == 2)
    }

    @Test("a reload that finds no other process's commit forgets nothing, the first one after start included")
    func reloadWithoutChangesKeepsWhatIsRemembered() throws {
        let f = try PushRouteTests.fixture()
        #expect(f.registerDevice(f.deviceBody(Self.token(1))).status == 201)
        f.service.reloadChanged()
        f.service.reloadChanged()
        #expect(f.registerDevice(f.deviceBody(Self.token(1))).status == 200)
        #expect(f.metric("hotpatch_push_refreshes_from_memory_total") == 1)
    }

    @Test("a refresh that changes the version, channel or environment, or comes from another device, is never answered from memory")
    func onlyTheSameIdentity() throws {
        let f = try PushRouteTests.fixture()
        #expect(f.registerDevice(f.deviceBody(Self.token(1))).status == 201)
        #expect(f.registerDevice(f.deviceBody(Self.token(1), version: "2.4")).status == 200)
        #expect(f.registerDevice(f.deviceBody(Self.token(1), version: "2.4", channel: "staging")).status == 200)
        #expect(f.registerDevice(f.deviceBody(Self.token(1), version: "2.4", channel: "staging", environment: "sandbox")).status == 200)
        #expect(f.registerDevice(f.deviceBody(Self.token(1), version: "2.4", channel: "staging", environment: "sandbox"), device: "device-2").status == 409)
        #expect(f.metric("hotpatch_push_refreshes_from_memory_total") == 0)
        let stored = try #require(try f.pushDevices().first)
        #expect(stored.appVersion.rawValue == "2.4" && stored.channel.rawValue == "staging" && stored.environment == .sandbox)
    }
}
