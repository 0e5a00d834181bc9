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
}
