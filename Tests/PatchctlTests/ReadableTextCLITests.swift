import Foundation
import PatchCore
import Testing

/// The built patchctl refuses a message, token name or actor the registry's rule
/// (`ReadableText`) refuses: exit 2, one line naming the field and the code point, nothing
/// changed. Invalid UTF-8 on the command line is in Tests/interop/test_readable_text.py
/// (Foundation's `Process` takes only `String` arguments).
@Suite("patchctl: readable text")
struct ReadableTextCLITests {
    @Test("publish --message, revoke --message, tokens create --name and $HOTPATCH_ACTOR with a format character are refused; nothing is written")
    func refusals() throws {
        let w = try Workspace()
        #expect(try w.run(["apps", "create", "demo"]).status == 0)
        let file = try w.write("main.js", "one()")
        #expect(try w.run(["publish", "--app", "demo", "--app-version", "2.3", file]).status == 0)
        let before = try w.json(["audit", "--app", "demo"])
        for (arguments, environment, refusal) in [
            (["publish", "--app", "demo", "--app-version", "2.3", "--allow-same", "--message", "revoke \u{202E}3 hctap", file], [:],
             "the message cannot hold U+202E RIGHT-TO-LEFT OVERRIDE (character 8)"),
            (["revoke", "--app", "demo", "--app-version", "2.3", "--all", "--message", "rolled\u{200B}back"], [:], "the message cannot hold U+200B ZERO WIDTH SPACE"),
            (["tokens", "create", "--all", "--role", "auditor", "--name", "ci\u{200D}bot"], [:], "the token name cannot hold U+200D ZERO WIDTH JOINER"),
            (["publish", "--app", "demo", "--app-version", "2.3", "--allow-same", file], ["HOTPATCH_ACTOR": "ops\u{2066}"],
             "$HOTPATCH_ACTOR: the actor cannot hold U+2066 LEFT-TO-RIGHT ISOLATE"),
        ] as [([String], [String: String], String)] {
            let result = try w.run(arguments, environment: environment)
            #expect(result.status == 2, "\(arguments): \(result.stderr)")
            #expect(result.stderr.hasPrefix("patchctl: \(refusal)"), "\(result.stderr)")
            #expect(!result.stderr.unicodeScalars.contains { $0.properties.generalCategory == .format })
        }
        #expect(try w.json(["audit", "--app", "demo"]) == before)
        #expect(try w.json(["list", "--app", "demo"]).arrayValue?.map { $0["state"]?.stringValue } == ["active"])
        #expect(try w.json(["tokens", "list"]).arrayValue?.isEmpty == true)
    }
}
