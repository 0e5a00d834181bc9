import Foundation
import PatchCore
import Testing
@testable import PatchRegistry

@Suite("Status: what devices get now, and each patch's delivery")
struct StatusTests {
    @Test("delivery: live, superseded behind a newer 100 %, halted at 0 %, revoked; signed targets lists exactly the live and halted ones")
    func delivery() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        let version = try AppVersion("2.3")
        try t.publish(app, "2.3", "one()")
        try t.publish(app, "2.3", "two()")
        try t.publish(app, "2.3", "three()", rollout: 25)
        try t.publish(app, "2.3", "four()", rollout: 0)
        try t.publish(app, "2.3", "five()", rollout: 10)
        _ = try t.registry.revoke(app: app, appVersion: version, number: 5, actor: t.actor)
        let serving = try t.registry.serving(app: app, appVersion: version)
        #expect(serving.delivery == [1: .superseded, 2: .live, 3: .live, 4: .halted, 5: .revoked])
        #expect(serving.summary == "patch 3 → 25 %, patch 2 → 75 %")
        #expect(serving.newestLive == 3)
        let listed = try t.targets(app).targets.compactMap { PatchTargetInfo(path: $0.key, file: $0.value)?.patch }
        #expect(Set(listed) == Set(serving.delivery.filter { $0.value == .live || $0.value == .halted }.keys),
                "a halted patch stays listed: devices that run it keep it")
    }

    @Test("channels never mix: each channel of a version has its own split, and a staging patch is never counted for production devices")
    func channels() throws {
        let t = try TempRegistry()
        let app = try t.app("demo", channels: ["staging"])
        let version = try AppVersion("2.3")
        let staging = try ChannelName("staging")
        try t.publish(app, "2.3", "one()", rollout: 50)
        _ = try t.registry.publish(app: app, appVersion: version, bundle: Array("two()".utf8), channel: staging, rollout: 100, actor: t.actor)
        let all = try t.registry.servings(app: app, appVersion: version)
        #expect(all.map(\.channel) == [.production, staging])
        let production = try t.registry.serving(app: app, appVersion: version)
        #expect(production.summary == "patch 1 → 50 %, none → 50 %", "patch 2 (staging, 100 %) would hide patch 1 if channels mixed")
        #expect(production.newestLive == 1)
        #expect(try t.registry.serving(app: app, appVersion: version, channel: staging).summary == "patch 2 → 100 %")
        #expect(try t.registry.status(app: app).first?.versions.map(\.channel) == [.production, staging])
    }

    @Test("status holds the newest version and expiry of each role and one entry per app version with patches")
    func status() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        _ = try t.app("empty")
        try t.publish(app, "2.3", "one()")
        try t.publish(app, "2.4", "two()", rollout: 40)
        let all = try t.registry.status(app: nil)
        #expect(all.map(\.app.rawValue) == ["demo", "empty"])
        #expect(all[1].versions.isEmpty)
        let demo = try #require(try t.registry.status(app: app).first)
        for role in Role.allCases {
            let stored = try #require(demo.metadata.first { $0.role == role })
            #expect(stored.version == (try t.registry.latestMetadata(app: app, role: role).version))
            #expect(TUFTime.parse(stored.expires).map { $0 > Date() } == true)
        }
        #expect(demo.versions.map(\.appVersion.rawValue) == ["2.3", "2.4"])
        #expect(demo.versions[1].shares == [.init(patch: 1, basisPoints: 4000), .init(patch: nil, basisPoints: 6000)])
        #expect(throws: RegistryError.self) { try t.registry.status(app: try AppName("nope")) }
    }

    @Test("status names each halted patch, newest first per version and channel, with the devices that reported installing and rolling it back")
    func halted() throws {
        let t = try TempRegistry()
        let app = try t.app("demo", channels: ["staging"])
        let v23 = try AppVersion("2.3"), staging = try ChannelName("staging")
        try t.publish(app, "2.3", "one()")
        _ = try feed(t, app, devices: 0..<60, rolledBack: 10)
        try t.registry.setRollout(app: app, appVersion: v23, number: 1, percent: 0, actor: t.actor)
        try t.publish(app, "2.3", "two()")
        _ = try t.registry.publish(app: app, appVersion: v23, bundle: Array("qa()".utf8), channel: staging, rollout: 0, actor: t.actor)
        try t.publish(app, "2.4", "four()", rollout: 50)
        let demo = try #require(try t.registry.status(app: app).first)
        #expect(demo.halted == [
            HaltedPatch(appVersion: v23, channel: .production, patch: 1, installedDevices: 60, rolledBackDevices: 10),
            HaltedPatch(appVersion: v23, channel: staging, patch: 3, installedDevices: 0, rolledBackDevices: 0),
        ])
        #expect(demo.json["halted"]?.arrayValue?.first == ["appVersion": "2.3", "channel": "production", "patch": 1, "rollout": 0,
                                                           "installedDevices": 60, "rolledBackDevices": 10])
        #expect(try t.registry.status(app: try AppName("demo")).first?.json["halted"]?.arrayValue?.count == 2)
    }

    @Test("servedPatches is what some device is offered now: not superseded, halted or revoked")
    func served() throws {
        let t = try TempRegistry()
        let app = try t.app("demo", channels: ["staging"])
        let v23 = try AppVersion("2.3")
        try t.publish(app, "2.3", "one()")                 // 1: superseded by 2
        try t.publish(app, "2.3", "two()")                 // 2: live
        try t.publish(app, "2.3", "three()", rollout: 0)   // 3: halted
        try t.publish(app, "2.3", "four()", rollout: 30)   // 4: live
        try t.publish(app, "2.3", "five()", rollout: 30)   // 5: revoked
        _ = try t.registry.revoke(app: app, appVersion: v23, number: 5, actor: t.actor)
        _ = try t.registry.publish(app: app, appVersion: v23, bundle: Array("qa()".utf8), channel: try ChannelName("staging"), actor: t.actor)
        try t.publish(app, "2.4", "other()", rollout: 0)   // 2.4 patch 1: halted
        let served = try t.registry.servedPatches(app: app).map { "\($0.appVersion) \($0.channel) \($0.number)" }
        #expect(served == ["2.3 production 2", "2.3 production 4", "2.3 staging 6"])
    }
}
