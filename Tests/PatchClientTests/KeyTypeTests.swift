import Foundation
import PatchCore
import PatchSigning
import PatchRegistry
import Testing
@testable import PatchClient

/// Keys other than the Ed25519 ones hotpatch generates, as a device meets them.
@Suite("PatchClient with an ECDSA root key")
struct ClientKeyTypeTests {
    @Test("an app whose root key is an imported ECDSA P-256 key installs its patch, and follows a root rotation to Ed25519")
    func installsWithECDSARoot() async throws {
        let fixture = try ClientFixture()
        let app = try AppName("token")
        let rootKey = SigningKey.ecdsa(try ECDSAPrivateKey.generate())
        try fixture.registry.createApp(app, encrypted: false, rootKey: rootKey, actor: fixture.actor)
        let root = try fixture.registry.currentRoot(app: app).body
        #expect(root.roles[.root]?.keyIDs == [rootKey.tufKey.keyID])
        #expect(root.keys[rootKey.tufKey.keyID]?.scheme == "ecdsa-sha2-nistp256")

        try fixture.publish(app)
        let mirror = try Mirror()
        mirror.serve(try fixture.exported(app))
        let client = PatchClient(configuration: try fixture.configuration(app, server: mirror.url))
        try await installGood(client, number: 1, script: ClientFixture.script(app, 1))

        let rotation = try fixture.registry.rotateKey(app: app, role: .root, actor: fixture.actor)
        #expect(rotation.oldKeyIDs == [rootKey.tufKey.keyID])
        try fixture.publish(app)
        mirror.serve(try fixture.exported(app))
        #expect(await client.sync(force: true).updatedNumber == 2)
        #expect(try fixture.registry.currentRoot(app: app).body.roles[.root]?.keyIDs == [rotation.newKeyID])
    }
}
