import Foundation
import PatchCore
@testable import PatchRegistry
import HotpatchTestSupport

/// A registry in a fresh temporary directory, removed when the value is released.
final class TempRegistry {
    let root: URL
    let registry: Registry
    let actor = Actor("tester@test")

    init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("hotpatch-test-\(UUID().uuidString)", isDirectory: true)
        registry = try TestBackend.registry(dataDirectory: root.appendingPathComponent("data"), keysDirectory: root.appendingPathComponent("keys"))
    }

    deinit { try? FileManager.default.removeItem(at: root) }

    /// A new app with `channels` declared besides production (each a `channel.create` event).
    func app(_ name: String, encrypted: Bool = false, channels: [String] = []) throws -> AppName {
        let app = try AppName(name)
        try registry.createApp(app, encrypted: encrypted, actor: actor)
        for channel in channels { try registry.declareChannel(app: app, channel: try ChannelName(channel), actor: actor) }
        return app
    }

    @discardableResult
    func publish(_ app: AppName, _ version: String, _ text: String, rollout: Int = 100, now: Date = Date()) throws -> PatchRecord {
        try registry.publish(app: app, appVersion: try AppVersion(version), bundle: Array(text.utf8), rollout: rollout, actor: actor, now: now).patch
    }

    func targets(_ app: AppName) throws -> TargetsBody {
        try SignedTargets(bytes: try registry.latestMetadata(app: app, role: .targets).bytes).body
    }

    /// Everything a change must not touch when it is refused.
    func snapshot() throws -> [String] {
        let patches = try registry.patches(app: nil, appVersion: nil, activeOnly: false).map { "\($0.json.canonicalString)" }
        let events = try registry.auditEvents(app: nil).map(\.hash)
        let versions = try registry.apps().flatMap { app in
            Role.allCases.map { role in "\(app.name)/\(role): \((try? registry.latestMetadata(app: app.name, role: role).version) ?? 0)" }
        }
        return patches + events + versions
    }

    func export(_ app: AppName) throws -> URL {
        let out = root.appendingPathComponent("export-\(app)-\(UUID().uuidString)", isDirectory: true)
        return try registry.export(app: app, to: out).appRoot
    }

    func verify(_ app: AppName, trustedRoot: [UInt8]? = nil, contentKey: [UInt8]? = nil) async throws -> VerificationReport {
        let out = try export(app)
        return try await RepositoryVerifier.verify(fetcher: DirectorySource(directory: out), trustedRoot: trustedRoot ?? registry.initialRoot(app: app),
                                                   app: app.rawValue, contentKey: contentKey)
    }
}
