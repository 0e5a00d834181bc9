import Foundation
import Testing
import PatchCheck
import PatchCore
@testable import PatchRegistry

/// The script check where every release passes (issue 45), on both backends: what it refuses
/// changes nothing, what `--skip-check` lets past is audited, each patch keeps its check, and
/// promote and rollback read the version's manifest as it is then.
@Suite("Script check in the registry")
struct ScriptCheckRegistryTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let manifest = (try? Array(Data(contentsOf: root.appendingPathComponent("patches/demo/2.3/manifest.json")))) ?? []
    static let demo = (try? String(contentsOf: root.appendingPathComponent("patches/demo/2.3/main.js"), encoding: .utf8)) ?? ""
    static var typo: String { demo.replacingOccurrences(of: "tableView_cellForRowAtIndexPath:", with: "tableView_cellForRowAtIndexpath:") }

    /// The registry's refusal of `body`, nil when it went through.
    func refusal(_ body: () throws -> Void) -> RegistryError? {
        do {
            try body()
            return nil
        } catch {
            return error as? RegistryError
        }
    }

    func state(_ t: TempRegistry, _ app: AppName) throws -> (patches: Int, events: Int, targets: Int64) {
        (try t.registry.patches(app: app, appVersion: nil, activeOnly: false).count, try t.registry.auditEvents(app: app).count,
         try t.registry.latestMetadata(app: app, role: .targets).version)
    }

    @Test("a syntax error refuses the publish with line:column, nothing stored, signed or audited — plain and encrypted")
    func syntaxRefused() throws {
        let t = try TempRegistry()
        for encrypted in [false, true] {
            let app = try t.app(encrypted ? "sealed" : "plain", encrypted: encrypted)
            let before = try state(t, app)
            let error = refusal { try t.publish(app, "2.3", "require('UIView');\nvar x = ;\n") }
            if case .checkFailed(let report, let version)? = error {
                #expect(version?.rawValue == "2.3")
                #expect(report.errors.first?.at == ScriptLocation(line: 2, column: 9))
            } else {
                Issue.record("not refused by the check: \(String(describing: error))")
            }
            #expect(error?.description.contains("main.js:2:9: error: SyntaxError") == true)
            #expect(error?.description.contains("\n") == false, "one line: it travels in JSON bodies and logs")
            let after = try state(t, app)
            #expect(after.patches == before.patches && after.events == before.events && after.targets == before.targets)
        }
    }

    @Test("against the manifest: the typo refused; --skip-check publishes it, its reason and findings audited and kept with the patch")
    func skipCheckAudited() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        _ = try t.registry.setManifest(app: app, appVersion: try AppVersion("2.3"), bytes: Self.manifest, actor: t.actor)
        #expect(throws: RegistryError.self) { try t.publish(app, "2.3", Self.typo) }
        let published = try t.registry.publish(app: app, appVersion: try AppVersion("2.3"), bundle: Array(Self.typo.utf8),
                                               skipCheck: "customer hotfix, typo known", actor: t.actor).patch
        #expect(published.check?.outcome == .failed)
        let event = try #require(try t.registry.auditEvents(app: app).last)
        #expect(event.action == "patch.publish")
        #expect(event.details["check"]?["skipReason"]?.stringValue == "customer hotfix, typo known")
        #expect(event.details["check"]?["findings"]?.arrayValue?.first?["code"]?.stringValue == "selector-typo")
        let listed = try t.registry.listing(t.registry.patches(app: app, appVersion: nil, activeOnly: false))
        #expect(listed.first?["check"]?["outcome"]?.stringValue == "failed")
        #expect(listed.first?["check"]?["skipReason"]?.stringValue == "customer hotfix, typo known")
        let clean = try t.publish(app, "2.3", Self.demo)
        #expect(clean.check?.outcome == .passed && clean.check?.nativeChecked == true)
        #expect(try t.registry.patchChecks(app: app)["2.3/2"]?.manifestSha256 == Digest.sha256Hex(Self.manifest))
        // A reason must be one a person can read later.
        #expect(throws: RegistryError.self) {
            try t.registry.publish(app: app, appVersion: try AppVersion("2.3"), bundle: Array("var again = 1;".utf8), skipCheck: "  ", actor: t.actor)
        }
    }

    @Test("rollback --to and promote check the old script against the manifest stored since")
    func rollbackChecksAgain() throws {
        let t = try TempRegistry()
        let app = try t.app("demo", channels: ["staging"])
        let version = try AppVersion("2.3")
        try t.publish(app, "2.3", Self.typo)  // no manifest yet: nothing to compare the selector with
        try t.publish(app, "2.3", Self.demo)
        _ = try t.registry.setManifest(app: app, appVersion: version, bytes: Self.manifest, actor: t.actor)
        let before = try state(t, app)
        #expect(throws: RegistryError.self) { try t.registry.rollBack(app: app, appVersion: version, channel: .production, to: 1, actor: t.actor) }
        #expect(try state(t, app).patches == before.patches)
        let rolled = try t.registry.rollBack(app: app, appVersion: version, channel: .production, to: 1, skipCheck: "restoring 1 on purpose", actor: t.actor)
        #expect(rolled.patch.check?.skipReason == "restoring 1 on purpose")
        let staging = try ChannelName("staging")
        _ = try t.registry.publish(app: app, appVersion: version, bundle: Array((Self.typo + "// the QA build\n").utf8), channel: staging,
                                   skipCheck: "qa build", actor: t.actor)
        #expect(throws: RegistryError.self) { try t.registry.promote(app: app, appVersion: version, from: staging, to: .production, actor: t.actor) }
        let promoted = try t.registry.promote(app: app, appVersion: version, from: staging, to: .production, skipCheck: "qa signed off", actor: t.actor)
        #expect(promoted.patch.check?.outcome == .failed)
        #expect(try t.registry.auditEvents(app: app).last?.details["check"]?["skipReason"]?.stringValue == "qa signed off")
    }

    @Test("a publish to several versions reads each version's manifest")
    func severalVersions() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        _ = try t.registry.setManifest(app: app, appVersion: try AppVersion("2.3"), bytes: Self.manifest, actor: t.actor)
        let both = try VersionSelector("2.3,2.4")
        let error = refusal { _ = try t.registry.publish(app: app, versions: both, bundle: Array(Self.typo.utf8), actor: t.actor) }
        if case .checkFailed(_, let version)? = error {
            #expect(version?.rawValue == "2.3")
        } else {
            Issue.record("the typo was not refused for 2.3: \(String(describing: error))")
        }
        let published = try t.registry.publish(app: app, versions: both, bundle: Array(Self.demo.utf8), actor: t.actor)
        #expect(published.patches.map { $0.check?.nativeChecked } == [true, false])
        let event = try #require(try t.registry.auditEvents(app: app).last)
        #expect(event.details["patches"]?.arrayValue?.compactMap { $0["check"]?["native"]?.stringValue } == ["checked", "skipped"])
    }

    @Test("a manifest is stored per version and audited; one that is not a manifest, or names another version, changes nothing")
    func manifests() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        let version = try AppVersion("2.3")
        let stored = try t.registry.setManifest(app: app, appVersion: version, bytes: Self.manifest, actor: t.actor)
        #expect(stored["classes"]?.intValue == 7)
        #expect(try t.registry.manifest(app: app, appVersion: version)?.sha256 == Digest.sha256Hex(Self.manifest))
        let events = try t.registry.auditEvents(app: app).count
        #expect(throws: RegistryError.self) { try t.registry.setManifest(app: app, appVersion: version, bytes: Array("{}".utf8), actor: t.actor) }
        #expect(throws: RegistryError.self) { try t.registry.setManifest(app: app, appVersion: try AppVersion("2.4"), bytes: Self.manifest, actor: t.actor) }
        #expect(try t.registry.auditEvents(app: app).count == events)
        var edited = try NativeManifest(bytes: Self.manifest)
        edited.knownClasses.insert("UIAlertController")
        let again = try t.registry.setManifest(app: app, appVersion: version, bytes: edited.json.wireBytes, actor: t.actor)
        #expect(again["replaced"]?.stringValue == Digest.sha256Hex(Self.manifest))
        #expect(try t.registry.auditEvents(app: app).last?.action == "app.manifest")
    }

    @Test("the check alone changes nothing and reads the version's manifest")
    func checkAlone() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        let version = try AppVersion("2.3")
        _ = try t.registry.setManifest(app: app, appVersion: version, bytes: Self.manifest, actor: t.actor)
        let events = try t.registry.auditEvents(app: app).count
        #expect(try t.registry.checkScript(Array(Self.typo.utf8), app: app, appVersion: version).outcome == .failed)
        #expect(try t.registry.checkScript(Array(Self.typo.utf8), app: app, appVersion: nil).outcome == .passed)
        #expect(try t.registry.auditEvents(app: app).count == events)
    }

    @Test("a check that cannot run refuses the release; --skip-check releases it unchecked")
    func unavailable() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        t.registry.scriptChecker = ScriptChecker(worker: "/nonexistent/patchcheck")
        let error = refusal { try t.publish(app, "2.3", "var a = 1;") }
        if case .checkUnavailable? = error {} else { Issue.record("not refused as unavailable: \(String(describing: error))") }
        let published = try t.registry.publish(app: app, appVersion: try AppVersion("2.3"), bundle: Array("var a = 1;".utf8),
                                               skipCheck: "checker down, incident 42", actor: t.actor).patch
        #expect(published.check?.outcome == .unchecked)
        #expect(try t.registry.patchChecks(app: app)["2.3/1"]?.unavailable?.contains("could not run") == true)
    }
}
