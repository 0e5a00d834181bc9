import Foundation
import Testing
@testable import PatchCore

/// The withhold role's file as a client reads it (docs/PROTOCOL.md, "Withhold"): it can only
/// take away what the targets keys signed.
@Suite("Withholds: what a withhold file can and cannot do")
struct WithholdsTests {
    static let sha = String(repeating: "ab", count: 32)
    static let other = String(repeating: "cd", count: 32)
    static let file = TargetFile(length: 3, hashes: ["sha256": sha, "md5": String(repeating: "0", count: 32)])

    func body(_ withheld: JSON?, targets: [String: TargetFile] = [:]) -> TargetsBody {
        var common = CommonFields(version: 1, expires: Date().addingTimeInterval(3600))
        if let withheld { common.extra["withheld"] = withheld }
        return TargetsBody(common: common, targets: targets)
    }

    @Test("halt keeps the target listed and names it; roll-back leaves it out; nothing else changes")
    func applies() throws {
        let withholds = Withholds(entries: ["2.3/2/main.js": .init(sha256: Self.sha, rollBack: false, reason: "crash"),
                                            "2.3/3/main.js": .init(sha256: Self.sha, rollBack: true, reason: "bad")])
        let targets = ["2.3/1/main.js": Self.file, "2.3/2/main.js": Self.file, "2.3/3/main.js": Self.file]
        let (listed, halted) = withholds.apply(to: targets)
        #expect(Set(listed.keys) == ["2.3/1/main.js", "2.3/2/main.js"] && halted == ["2.3/2/main.js"])
    }

    @Test("an entry for a target targets does not list (a new path, a higher patch) or with another hash applies to nothing: a withhold can add nothing")
    func cannotAdd() throws {
        let withholds = Withholds(entries: ["2.3/9/main.js": .init(sha256: Self.sha, rollBack: true, reason: "new path"),
                                            "2.3/1/main.js": .init(sha256: Self.other, rollBack: true, reason: "other hash")])
        let targets = ["2.3/1/main.js": Self.file]
        let (listed, halted) = withholds.apply(to: targets)
        #expect(listed == targets && halted.isEmpty)
        #expect(withholds.entry(path: "2.3/1/main.js", file: Self.file) == nil)
    }

    @Test("a file that lists targets, delegates, or holds a malformed entry is refused whole; the round trip keeps the entries")
    func refusals() throws {
        #expect(throws: TUFError.self) { try Withholds(body: body(nil, targets: ["2.3/1/main.js": Self.file])) }
        var delegating = body(nil)
        delegating.delegations = Delegations(keys: [:], roles: [])
        #expect(throws: TUFError.self) { try Withholds(body: delegating) }
        for bad: JSON in [.array([]), ["p": ["sha256": .string(Self.sha), "rollBack": true]],
                          ["p": ["sha256": "AB", "rollBack": true, "reason": ""]],
                          ["p": ["sha256": .string(Self.sha), "rollBack": "yes", "reason": ""]],
                          ["p": ["sha256": .string(Self.sha), "rollBack": true, "reason": "", "add": "x"]],
                          ["p": ["sha256": .string(Self.sha), "rollBack": true, "reason": .string(String(repeating: "r", count: 513))]]] {
            #expect(throws: TUFError.self, "\(bad)") { try Withholds(body: body(bad)) }
        }
        #expect(try Withholds(body: body(nil)).entries.isEmpty)
        let entries = ["2.3/2/main.js": Withholds.Entry(sha256: Self.sha, rollBack: true, reason: "why")]
        let made = Withholds(entries: entries).body(version: 4, expires: Date().addingTimeInterval(60))
        #expect(made.targets.isEmpty && made.common.version == 4)
        #expect(try Withholds(body: TargetsBody(signed: made.signedJSON)).entries == entries)
    }

    @Test("the delegation: the role's name, no paths, not terminating; the listing walk never loads it")
    func delegation() {
        let role = Withholds.delegatedRole(keyIDs: ["b", "a"], threshold: 1)
        #expect(Withholds.isWithholdRole(role) && role.keyIDs == ["a", "b"] && !role.terminating)
        #expect(!role.isDelegated("2.3/1/main.js"))
        var walk = DelegationWalk(path: nil, maxRoles: 8)
        _ = walk.next()
        walk.visited("targets", TargetsBody(common: CommonFields(version: 1, expires: Date()), targets: [:],
                                            delegations: Delegations(keys: [:], roles: [role])))
        #expect(walk.next() == nil)
    }
}
