import Foundation
import PatchRegistry
import Testing
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
}
