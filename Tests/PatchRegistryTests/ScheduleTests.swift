import Foundation
import PatchCore
import Testing
@testable import PatchRegistry

@Suite("Staged rollouts: advance only on evidence, never before their time")
struct ScheduleTests {
    let v23: AppVersion
    let start = Date(timeIntervalSince1970: 1_800_000_000)

    init() throws { v23 = try AppVersion("2.3") }

    func setUp(_ t: TempRegistry) throws -> AppName {
        let app = try t.app("demo")
        try t.registry.publish(app: app, appVersion: v23, bundle: Array("one()".utf8), rollout: 5, actor: t.actor, now: start)
        try t.registry.setGuard(app: app, maxRollbackPPM: 20_000, minDevices: 50, action: .halt, actor: t.actor, now: start)
        try t.registry.setSchedule(app: app, appVersion: v23, number: 1, steps: [25, 50, 100], everySeconds: 3600, actor: t.actor, now: start)
        return app
    }

    func rollout(_ t: TempRegistry, _ app: AppName) throws -> Int { try t.registry.patches(app: app, appVersion: v23, activeOnly: false)[0].rollout }

    @Test("waits for its time, then for the minimum devices, then advances one step per interval while the upper bound stays under the threshold")
    func advances() throws {
        let t = try TempRegistry()
        let app = try setUp(t)
        // 400 clean installs (upper bound 0.95 % < 2 %), but the hour has not passed.
        try feed(t, app, devices: 0..<400, rolledBack: 0)
        #expect(try t.registry.advanceSchedules(app: app, now: start.addingTimeInterval(3599)).isEmpty)
        #expect(try rollout(t, app) == 5)
        let key = PatchKey(appVersion: v23, channel: .production, patch: 1)
        #expect(try t.registry.advanceSchedules(app: app, now: start.addingTimeInterval(3600)) == [.advanced(key, from: 5, to: 25)])
        #expect(try rollout(t, app) == 25)
        // The next step is an hour after this one, not after the first due time.
        #expect(try t.registry.advanceSchedules(app: app, now: start.addingTimeInterval(7199)).isEmpty)
        #expect(try t.registry.advanceSchedules(app: app, now: start.addingTimeInterval(7200)) == [.advanced(key, from: 25, to: 50)])
        #expect(try t.registry.advanceSchedules(app: app, now: start.addingTimeInterval(10_800)) == [.advanced(key, from: 50, to: 100)])
        #expect(try t.registry.schedules(app: app).isEmpty)
        #expect(try t.registry.auditEvents(app: app).filter { $0.actor == "patchd schedule" }.map(\.action) == ["patch.rollout", "patch.rollout", "patch.rollout"])
    }

    @Test("without evidence it waits: too few devices, or an upper bound at or over the threshold (4 of 400: 0.39 %…2.5 %)")
    func waits() throws {
        let t = try TempRegistry()
        let app = try setUp(t)
        try feed(t, app, devices: 0..<49, rolledBack: 0)
        #expect(try t.registry.advanceSchedules(app: app, now: start.addingTimeInterval(3600)).isEmpty)
        try feed(t, app, devices: 49..<400, rolledBack: 4)
        #expect(try t.registry.enforceGuards(app: app).isEmpty, "lower bound 0.39 % is under 2 %: no halt either")
        #expect(try t.registry.advanceSchedules(app: app, now: start.addingTimeInterval(5 * 3600)).isEmpty)
        #expect(try rollout(t, app) == 5)
        #expect(try t.registry.schedules(app: app).count == 1, "still waiting")
    }

    @Test("a patch its guard halted loses its schedule; a schedule needs a guard and increasing steps above the rollout")
    func stopsAndRefuses() throws {
        let t = try TempRegistry()
        let app = try setUp(t)
        let touched = try feed(t, app, devices: 0..<60, rolledBack: 10)
        #expect(try t.registry.enforceGuards(app: app, patches: touched).count == 1)
        let key = PatchKey(appVersion: v23, channel: .production, patch: 1)
        #expect(try t.registry.advanceSchedules(app: app, now: start.addingTimeInterval(3600)) == [.stopped(key)])
        #expect(try rollout(t, app) == 0)

        let u = try TempRegistry()
        let other = try u.app("demo")
        try u.publish(other, "2.3", "one()", rollout: 5)
        #expect(throws: RegistryError.self) { try u.registry.setSchedule(app: other, appVersion: v23, number: 1, steps: [25], everySeconds: 3600, actor: u.actor) }
        try u.registry.setGuard(app: other, maxRollbackPPM: 20_000, minDevices: 50, action: .halt, actor: u.actor)
        for steps in [[5], [50, 25], [25, 101], [0, 10]] {
            #expect(throws: RegistryError.self, "\(steps)") { try u.registry.setSchedule(app: other, appVersion: v23, number: 1, steps: steps, everySeconds: 3600, actor: u.actor) }
        }
        #expect(throws: RegistryError.self) { try u.registry.setSchedule(app: other, appVersion: v23, number: 1, steps: [25], everySeconds: 59, actor: u.actor) }
    }

    @Test("a person's rollout stops the patch's staged rollout, audited with the reason; the schedule's own steps do not")
    func manualRolloutStopsTheSchedule() throws {
        let t = try TempRegistry()
        let app = try t.app("demo"), v = try AppVersion("2.3")
        try t.registry.setGuard(app: app, maxRollbackPPM: 20_000, minDevices: 50, action: .halt, actor: t.actor)
        let patch = try t.publish(app, "2.3", "a()", rollout: 10)
        _ = try t.registry.setSchedule(app: app, appVersion: v, number: patch.number, steps: [50, 100], everySeconds: 3600, actor: t.actor)
        let change = try t.registry.setRollout(app: app, appVersion: v, number: patch.number, percent: 30, actor: t.actor)
        #expect(change.stoppedSchedule?.steps == [50, 100] && change.json["stoppedSchedule"] != nil)
        #expect(try t.registry.schedules(app: app).isEmpty, "the next step would have undone the 30 %")
        let stop = try #require(try t.registry.auditEvents(app: app).last { $0.action == "rollout.schedule.stop" })
        #expect(stop.actor == t.actor.name && stop.details["reason"] == .string("manual rollout to 30 %"))
        // Without a schedule, nothing more is said.
        #expect(try t.registry.setRollout(app: app, appVersion: v, number: patch.number, percent: 40, actor: t.actor).stoppedSchedule == nil)
    }
}
