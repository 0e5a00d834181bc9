import Foundation
import PatchCore
@testable import PatchRegistry
import Testing

/// Every text field a person reads back is held to `ReadableText` by the registry, the
/// layer the CLI, the HTTP API and the console all pass through.
@Suite("Readable text in the registry")
struct ReadableTextRegistryTests {
    let v23 = try! AppVersion("2.3")
    static let override = "revoke \u{202E}3 hctap"

    @Test("a publish, promote or revoke message with a bidi override is refused, naming it, and nothing is written or audited")
    func messages() throws {
        let t = try TempRegistry()
        let app = try t.app("demo", channels: ["staging"])
        let staging = try ChannelName("staging")
        try t.registry.publish(app: app, appVersion: v23, bundle: Array("a()".utf8), channel: staging, actor: t.actor)
        let before = try t.snapshot()
        let refused = "the message cannot hold U+202E RIGHT-TO-LEFT OVERRIDE (character 8)"
        for dryRun in [false, true] {
            expectRefusal(refused) { try t.registry.publish(app: app, appVersion: v23, bundle: Array("b()".utf8), message: Self.override, dryRun: dryRun, actor: t.actor) }
            expectRefusal(refused) { try t.registry.promote(app: app, appVersion: v23, from: staging, to: .production, message: Self.override, dryRun: dryRun, actor: t.actor) }
            expectRefusal(refused) { try t.registry.revoke(app: app, appVersion: v23, number: 1, message: Self.override, dryRun: dryRun, actor: t.actor) }
        }
        expectRefusal("the message cannot hold U+200B ZERO WIDTH SPACE") {
            try t.registry.publish(app: app, appVersion: v23, bundle: Array("b()".utf8), message: "fix\u{200B}", actor: t.actor)
        }
        #expect(try t.snapshot() == before)
        // Other scripts and emoji are release notes like any other.
        for notes in ["修复崩溃", "Ошибка", "🚑 fix", "family 👨\u{200D}👩\u{200D}👧", "cafe\u{301}"] {
            #expect(try t.registry.publish(app: app, appVersion: v23, bundle: Array("// \(notes)\n".utf8), message: notes, actor: t.actor).patch.message == notes)
        }
    }

    @Test("a token name with a format or control character is refused, not cleaned: no token, no audit event")
    func tokenNames() throws {
        let t = try TempRegistry()
        let app = try t.app("demo")
        let before = try t.snapshot()
        for (name, named) in [("ci\u{200B}bot", "U+200B ZERO WIDTH SPACE"), ("ci \u{202E}tob", "U+202E RIGHT-TO-LEFT OVERRIDE"),
                              ("ci\nbot", "U+000A"), ("ci\u{E0041}", "U+E0041 TAG LATIN CAPITAL LETTER A")] {
            expectRefusal("the token name cannot hold \(named)") { try t.registry.createToken(app: app, role: .publisher, name: name, actor: t.actor) }
        }
        expectRefusal("the token name is 201 characters; the limit is 200") {
            try t.registry.createToken(app: nil, role: .auditor, name: String(repeating: "n", count: 201), actor: t.actor)
        }
        #expect(try t.registry.tokens(scope: nil).isEmpty)
        #expect(try t.snapshot() == before)
        let issued = try t.registry.createToken(app: app, role: .publisher, name: "Ошибка-бот 🤖", actor: t.actor)
        #expect(issued.record.actor.name == "Ошибка-бот 🤖 (token \(issued.record.id))")
        // The longest name still leaves room in its actor for the token's id.
        let longest = try t.registry.createToken(app: nil, role: .auditor, name: String(repeating: "n", count: Registry.maxTokenName), actor: t.actor)
        #expect(longest.record.actor.name.hasSuffix("(token \(longest.record.id))"))
    }

    @Test("an actor is refused, not cleaned: $HOTPATCH_ACTOR with a format character, a newline or too long is an error naming it")
    func actors() throws {
        for (value, named) in [("ops\u{202E}", "U+202E RIGHT-TO-LEFT OVERRIDE"), ("ops\nforged", "U+000A"), ("o\u{200D}ps", "U+200D ZERO WIDTH JOINER")] {
            #expect {
                try Actor.current(environment: ["HOTPATCH_ACTOR": value])
            } throws: { error in
                (error as? ValidationError)?.message.hasPrefix("$HOTPATCH_ACTOR: the actor cannot hold \(named)") == true
            }
        }
        #expect(throws: ValidationError("$HOTPATCH_ACTOR: the actor is 257 characters; the limit is 256")) {
            try Actor.current(environment: ["HOTPATCH_ACTOR": String(repeating: "a", count: 257)])
        }
        #expect(try Actor.current(environment: ["HOTPATCH_ACTOR": "李雷 (release)"]).name == "李雷 (release)")
        #expect(try Actor.current(environment: ["HOTPATCH_ACTOR": "", "USER": "ana"]).name.hasPrefix("ana@"))
    }

    @Test("a token whose stored name breaks the rule (written before it) acts as its id alone")
    func storedTokenNames() {
        let record = TokenRecord(id: "0123456789ab", app: nil, role: .publisher, name: "ci\u{202E}tob")
        #expect(record.actor.name == "token 0123456789ab")
    }

    private func expectRefusal(_ prefix: String, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Any) {
        do {
            _ = try body()
            Issue.record("accepted; expected \(prefix)", sourceLocation: sourceLocation)
        } catch let RegistryError.invalidInput(message) {
            #expect(message.hasPrefix(prefix), "\(message)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("\(error); expected invalid input \(prefix)", sourceLocation: sourceLocation)
        }
    }
}
