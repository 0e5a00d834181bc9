import Foundation
import Testing
import PatchCore
import PatchSigning

@Suite("patchctl keys delegate")
struct DelegateCLITests {
    @Test("keys delegate --key qa.pub, then publish --key-file to staging with the targets key offline; verify names the role")
    func delegateThenPublish() throws {
        let w = try Workspace()
        try w.run(["apps", "create", "demo"])
        try w.run(["publish", "--app", "demo", "--app-version", "2.3", try w.write("main.js", "fix()")])
        let qa = try SigningKey.generateEd25519()
        let pub = try w.write("qa.pub", qa.tufKey.json.canonicalString)
        let pem = try w.write("qa.pem", String(decoding: try qa.pemRepresentation(), as: UTF8.self))
        let delegated = try w.run(["keys", "delegate", "--app", "demo", "--channel", "staging", "--name", "qa", "--key", pub, "--key-file", pem])
        #expect(delegated.status == 0, "\(delegated.stderr)")
        #expect(delegated.stdout.contains("staging/*/*/main.js"))
        let keyDir = URL(fileURLWithPath: w.path("keys/demo"))
        for file in try FileManager.default.contentsOfDirectory(atPath: keyDir.path) where file.hasPrefix("targets.") {
            try FileManager.default.removeItem(at: keyDir.appendingPathComponent(file))
        }
        let bundle = try w.write("staging.js", "try()")
        let unsigned = try w.run(["publish", "--app", "demo", "--app-version", "2.3", "--channel", "staging", bundle])
        // Without the role's key the publish waits for its holder (exit 3), served nothing.
        #expect(unsigned.status == 3 && unsigned.stdout.contains("patchctl approve --app demo 1"), "\(unsigned.stdout) \(unsigned.stderr)")
        let published = try w.run(["publish", "--app", "demo", "--app-version", "2.3", "--channel", "staging", "--key-file", pem, bundle])
        #expect(published.status == 0, "\(published.stderr)")
        let production = try w.run(["publish", "--app", "demo", "--app-version", "2.3", "--key-file", pem, try w.write("p.js", "p()")])
        #expect(production.status == 2 && production.stderr.contains("not a key of the targets role"), "the staging key does not sign production")
        try w.write("root.json", try w.run(["apps", "root", "demo"]).stdout)
        #expect(try w.run(["export", "--app", "demo", "--out", w.path("out")]).status == 0)
        let verified = try w.run(["verify", "--repo", w.path("out"), "--root", w.path("root.json")], local: false)
        #expect(verified.status == 0, "\(verified.stderr)")
        #expect(verified.stdout.contains("staging/2.3/2/main.js") && verified.stdout.contains("(delegated role qa)"))
    }
}
