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
        try w.declareChannel("staging")
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
        let bundle = try w.write("staging.js", "staging()")
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

    @Test("--key twice with --threshold 2, publish with two --key-file, rotate with --replace, undelegate; bad input exits 2 or 64 and changes nothing")
    func thresholdRotateUndelegate() throws {
        let w = try Workspace()
        try w.run(["apps", "create", "demo"])
        try w.declareChannel("beta")  // declared, so undelegating it is refused as "not delegated"
        try w.declareChannel("staging")
        let a = try SigningKey.generateEd25519(), b = try SigningKey.generateEd25519()
        func files(_ key: SigningKey, _ name: String) throws -> (pub: String, pem: String) {
            (try w.write("\(name).pub", key.tufKey.json.canonicalString), try w.write("\(name).pem", String(decoding: try key.pemRepresentation(), as: UTF8.self)))
        }
        let (aPub, aPem) = try files(a, "a"), (bPub, bPem) = try files(b, "b")
        let tooMany = try w.run(["keys", "delegate", "--app", "demo", "--channel", "staging", "--name", "qa", "--threshold", "2"])
        #expect(tooMany.status == 64, "a key the registry makes is one key")
        let delegated = try w.run(["keys", "delegate", "--app", "demo", "--channel", "staging", "--name", "qa", "--key", aPub, "--key", bPub,
                                   "--threshold", "2", "--key-file", aPem, "--key-file", bPem, "--json"])
        #expect(delegated.status == 0, "\(delegated.stderr)")
        let record = try JSONParser.parse(Array(delegated.stdout.utf8))
        #expect(record["threshold"]?.intValue == 2 && record["keyids"]?.arrayValue?.count == 2)
        let bundle = try w.write("s.js", "s()")
        let one = try w.run(["publish", "--app", "demo", "--app-version", "2.3", "--channel", "staging", "--key-file", aPem, bundle])
        // One of the role's two keys: the publish waits for the other's holder (exit 3).
        #expect(one.status == 3 && one.stdout.contains("1 of 2 signatures"), "\(one.stdout) \(one.stderr)")
        let two = try w.run(["publish", "--app", "demo", "--app-version", "2.3", "--channel", "staging", "--key-file", aPem, "--key-file", bPem, bundle])
        #expect(two.status == 0, "\(two.stderr)")

        // Rotation to a key the registry makes: the threshold must come down with it.
        let kept = try w.run(["keys", "delegate", "--app", "demo", "--channel", "staging", "--name", "qa", "--replace"])
        #expect(kept.status == 2 && kept.stderr.contains("--threshold"), "\(kept.stderr)")
        let rotated = try w.run(["keys", "delegate", "--app", "demo", "--channel", "staging", "--name", "qa", "--replace", "--threshold", "1"])
        #expect(rotated.status == 0, "\(rotated.stderr)")
        #expect(rotated.stdout.contains("rotated the keys of the role qa") && rotated.stdout.contains(a.tufKey.keyID))
        let replacedAgain = try w.run(["publish", "--app", "demo", "--app-version", "2.3", "--channel", "staging", "--key-file", aPem, try w.write("t.js", "t()")])
        #expect(replacedAgain.status == 2 && replacedAgain.stderr.contains("not a key of the delegated role"), "\(replacedAgain.stderr)")
        #expect(try w.run(["publish", "--app", "demo", "--app-version", "2.3", "--channel", "staging", try w.write("u.js", "u()")]).status == 0,
                "the key the registry made and keeps signs")

        let notDelegated = try w.run(["keys", "undelegate", "--app", "demo", "--channel", "beta"])
        #expect(notDelegated.status == 2 && notDelegated.stderr.contains("not delegated"), "\(notDelegated.stderr)")
        let ended = try w.run(["keys", "undelegate", "--app", "demo", "--channel", "staging"])
        #expect(ended.status == 0, "\(ended.stderr)")
        #expect(try w.run(["publish", "--app", "demo", "--app-version", "2.3", "--channel", "staging", try w.write("v.js", "v()")]).status == 0)
        try w.write("root.json", try w.run(["apps", "root", "demo"]).stdout)
        #expect(try w.run(["export", "--app", "demo", "--out", w.path("out")]).status == 0)
        let verified = try w.run(["verify", "--repo", w.path("out"), "--root", w.path("root.json")], local: false)
        #expect(verified.status == 0, "\(verified.stderr)")
        #expect(verified.stdout.contains("staging/2.3/3/main.js") && !verified.stdout.contains("(delegated role qa)"))
        let audit = try w.run(["audit", "--app", "demo"]).stdout
        #expect(audit.contains("keys.delegate") && audit.contains("keys.undelegate"))
    }
}
