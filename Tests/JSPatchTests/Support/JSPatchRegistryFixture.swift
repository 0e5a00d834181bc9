import Foundation
import PatchCore
import PatchSigning
@testable import PatchRegistry
import HotpatchTestSupport

/// A registry in a temporary directory with helpers for JSPatch apps.
final class JSPatchRegistryFixture {
    let directory: TempDirectory
    let registry: Registry
    let actor = Actor("jspatch-tester")
    var dataDirectory: URL { directory.url.appendingPathComponent("data") }
    var keysDirectory: URL { directory.url.appendingPathComponent("keys") }

    init() throws {
        directory = try TempDirectory()
        registry = try TestBackend.registry(dataDirectory: directory.url.appendingPathComponent("data"),
                                keysDirectory: directory.url.appendingPathComponent("keys"))
    }

    /// A plaintext app with a new JSPatch key (1024 bits: fast, and what the JSPatch demo used).
    @discardableResult
    func jspatchApp(_ name: String, key: RSAPrivateKey? = nil) throws -> (AppName, RSAPrivateKey) {
        let app = try AppName(name)
        let key = try key ?? RSAPrivateKey.generate(bits: 1024)
        try registry.createApp(app, encrypted: false, jspatchKey: key, actor: actor)
        return (app, key)
    }

    @discardableResult
    func publish(_ app: AppName, _ version: String, _ text: String, rollout: Int = 100) throws -> PatchRecord {
        try registry.publish(app: app, appVersion: try AppVersion(version), bundle: Array(text.utf8), rollout: rollout, actor: actor).patch
    }

    /// Everything a refused change must leave as it was: patches, audit chain, metadata
    /// versions, JSPatch records and the key directory listing.
    func snapshot() throws -> [String] {
        let patches = try registry.patches(app: nil, appVersion: nil, activeOnly: false).map(\.json.canonicalString)
        let events = try registry.auditEvents(app: nil).map(\.hash)
        var other: [String] = []
        for app in try registry.apps() {
            for role in Role.allCases { other.append("\(app.name)/\(role): \(try registry.latestMetadata(app: app.name, role: role).version)") }
            other.append("\(app.name) jspatch: \(try registry.jspatchKey(app: app.name)?.publicKeySHA256 ?? "-")")
        }
        let files = (FileManager.default.enumerator(atPath: keysDirectory.path)?.allObjects as? [String] ?? []).sorted()
        return patches + events + other + files
    }
}
