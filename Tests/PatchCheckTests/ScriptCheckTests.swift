import Foundation
import PatchCheck
import PatchCore
import Testing

// The script check with the real worker (.build/…/patchcheck, JavaScriptCore) on JSPatch
// scripts: the demo's patch against the demo's manifest, the slips a tired engineer makes, and
// scripts whose top level would hang or bloat whatever runs them.

enum Demo {
    /// `{package root}`; this file is `{package root}/Tests/PatchCheckTests/ScriptCheckTests.swift`.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static func file(_ path: String) throws -> [UInt8] { Array(try Data(contentsOf: root.appendingPathComponent(path))) }
    static let script: [UInt8] = (try? file("patches/demo/2.3/main.js")) ?? []
    static let manifest: NativeManifest = {
        do { return try NativeManifest(bytes: try file("patches/demo/2.3/manifest.json")) } catch { fatalError("the demo manifest: \(error)") }
    }()
}

func check(_ script: String, manifest: NativeManifest? = Demo.manifest, limits: ScriptChecker.Limits = .init()) throws -> CheckReport {
    let checker = ScriptChecker(limits: limits)
    #expect(checker.worker != nil, "patchcheck is built beside the test runner")
    return try checker.check(Array(script.utf8), manifest: manifest)
}

func codes(_ report: CheckReport, _ severity: CheckFinding.Severity) -> [String] {
    report.findings.filter { $0.severity == severity }.map(\.code)
}

@Suite("Script check: JavaScriptCore and the native manifest")
struct ScriptCheckTests {
    @Test("the demo patch passes against the demo manifest, and says what it touches")
    func demoPasses() throws {
        let report = try ScriptChecker().check(Demo.script, manifest: Demo.manifest)
        #expect(report.outcome == .passed, "\(report.lines)")
        #expect(report.nativeChecked)
        #expect(report.touches == ["CheckoutViewController -tableView:cellForRowAtIndexPath:", "CheckoutViewController -tableView:numberOfRowsInSection:"])
    }

    @Test("a syntax error: the engine's message, line and column, and nothing else is checked")
    func syntaxError() throws {
        let report = try check("require('UIView');\nvar broken = ;\ndefineClass('Nope', {});\n")
        #expect(report.outcome == .failed)
        #expect(report.findings.count == 1)
        let finding = try #require(report.findings.first)
        #expect(finding.code == "syntax")
        #expect(finding.message.contains("SyntaxError: Unexpected token ';'"))
        #expect(finding.at == ScriptLocation(line: 2, column: 14))
        #expect(finding.line.hasPrefix("main.js:2:14: error: SyntaxError"))
    }

    @Test("the column of a syntax error deep in a long line")
    func syntaxColumnInLongLine() throws {
        let prefix = String(repeating: "var a = 1; ", count: 500)
        let report = try check("// one line\n" + prefix + "var b = 2 +* 3;\n")
        let finding = try #require(report.findings.first)
        #expect(finding.code == "syntax")
        #expect(finding.at?.line == 2)
        #expect(finding.at?.column == prefix.count + 12, "\(finding.line)")
    }

    @Test("one lower-case letter off an override: an error naming the selector it meant")
    func selectorTypo() throws {
        let script = String(decoding: Demo.script, as: UTF8.self).replacingOccurrences(of: "tableView_cellForRowAtIndexPath:", with: "tableView_cellForRowAtIndexpath:")
        let report = try check(script)
        #expect(report.outcome == .failed)
        let typo = try #require(report.findings.first { $0.code == "selector-typo" })
        #expect(typo.className == "CheckoutViewController")
        #expect(typo.selector == "tableView:cellForRowAtIndexpath:")
        #expect(typo.suggestions.first == "tableView:cellForRowAtIndexPath:")
        #expect(typo.message.contains("did you mean tableView:cellForRowAtIndexPath: (tableView_cellForRowAtIndexPath, 2 arguments)"))
        #expect(typo.at?.line == 6)
    }

    @Test("a missing argument drops the trailing colon: caught as the selector with it")
    func arityTypo() throws {
        let report = try check("defineClass('CheckoutViewController', { viewWillAppear: function() { } });")
        let typo = try #require(report.findings.first { $0.code == "selector-typo" })
        #expect(typo.selector == "viewWillAppear")
        #expect(typo.suggestions == ["viewWillAppear:"])
    }

    @Test("overrides up the superclass chain and protocol methods pass; class methods are looked up on the class side")
    func chainAndProtocols() throws {
        let report = try check("""
            defineClass('CheckoutViewController', {
              viewDidAppear: function(animated) { },
              tableView_heightForRowAtIndexPath: function(tableView, indexPath) { return 44; },
              description: function() { return 'checkout'; },
            });
            defineClass('HPLogger', {}, { log: function(message) { } });
            """)
        #expect(report.outcome == .passed, "\(report.lines)")
        let wrongSide = try check("defineClass('HPLogger', { log: function(message) { } });")
        #expect(codes(wrongSide, .warning) == ["new-method"], "log: is a class method; as an instance method it is new: \(wrongSide.lines)")
    }

    @Test("a name that is no slip of an existing selector adds a method: a warning, not for _names or new classes")
    func newMethods() throws {
        let report = try check("""
            defineClass('CartStore', { applyCouponCode: function(code) { }, _privateHelper: function() { } });
            defineClass('CouponBanner : UIView', { showCoupon: function(code) { } });
            """)
        #expect(report.outcome == .warnings)
        #expect(codes(report, .warning) == ["new-method"])
        #expect(report.warnings.first?.selector == "applyCouponCode:")
        #expect(report.errors.isEmpty)
    }

    @Test("classes: unknown without a superclass, an unknown superclass, an unknown require — each with a did-you-mean")
    func unknownClasses() throws {
        let report = try check("""
            require('UITableViewCel, NSIndexPath');
            defineClass('CheckoutViewControler', { viewDidLoad: function() { } });
            defineClass('PromoCell : UITableViewCel', { });
            defineClass('PromoView : UIView', { });
            require('PromoView');
            """)
        #expect(Set(codes(report, .error)) == ["unknown-required-class", "unknown-class", "unknown-superclass"])
        #expect(report.errors.count == 3)
        let unknown = try #require(report.findings.first { $0.code == "unknown-class" })
        #expect(unknown.suggestions == ["CheckoutViewController"])
        #expect(unknown.at?.line == 2)
        let required = try #require(report.findings.first { $0.code == "unknown-required-class" })
        #expect(required.suggestions == ["UITableViewCell"])
        #expect(required.at?.line == 1)
    }

    @Test("a table entry that is not a function: JSPatch drops the rest, so an error names what is dropped")
    func notAFunction() throws {
        let report = try check("""
            defineClass('CheckoutViewController', {
              viewDidLoad: function() { },
              title: 'Checkout',
              tableView_numberOfRowsInSection: function(t, s) { return 0; },
            });
            """)
        let finding = try #require(report.findings.first { $0.code == "not-a-function" })
        #expect(finding.severity == .error)
        #expect(finding.message.contains("instance method title is a string, not a function"))
        #expect(finding.message.contains("(tableView_numberOfRowsInSection)"))
    }

    @Test("a throw at top level is an error at its line")
    func topLevelThrow() throws {
        let report = try check("require('UIView');\nvar cart = null;\ncart.items();\ndefineClass('CartStore', {});")
        let finding = try #require(report.findings.first { $0.code == "exception" })
        #expect(finding.message.contains("TypeError: null is not an object"))
        #expect(finding.at?.line == 3)
    }

    @Test("without a manifest: syntax and evaluation run, and a note says the native check was skipped")
    func withoutManifest() throws {
        let report = try check("defineClass('Anything', { whatever: function() { } });", manifest: nil)
        #expect(!report.nativeChecked)
        #expect(report.outcome == .passed)
        #expect(codes(report, .note) == ["native-skipped"])
        #expect(try check("var = 1;", manifest: nil).outcome == .failed)
    }

    @Test("a name the top level uses that nothing defines: an error with a manifest (unless its jsGlobals list it), a warning without")
    func undefinedNames() throws {
        let script = "require('UIView');\nvar path = NSHomeDirectory();\nUIColr.redColor();\ndefineClass('CartStore', { items: function() { return []; } });\n"
        let report = try check(script)
        #expect(report.errors.map(\.code) == ["undefined-name", "undefined-name"], "\(report.lines)")
        #expect(report.errors.map(\.at?.line) == [2, 3])
        // The rest of the script was still recorded: a stand-in took each name's place.
        #expect(report.touches == ["CartStore -items"])
        var withExtension = Demo.manifest
        withExtension.jsGlobals = ["NSHomeDirectory"]
        let allowed = try check(script, manifest: withExtension)
        #expect(allowed.errors.map(\.at?.line) == [3], "\(allowed.lines)")
        let unchecked = try check(script, manifest: nil)
        #expect(codes(unchecked, .warning) == ["undefined-name", "undefined-name"])
        #expect(unchecked.errors.isEmpty)
        let classWithoutRequire = try check("UIColor.redColor();")
        #expect(classWithoutRequire.errors.first?.message.contains("used without require('UIColor')") == true)
    }

    @Test("a thrown message with a newline stays on one line")
    func oneLineMessages() throws {
        let report = try check("throw new Error('first\\nsecond');", manifest: nil)
        let finding = try #require(report.errors.first)
        #expect(!finding.message.contains("\n"))
        #expect(finding.message.contains("first second"))
    }

    @Test("JSPatch's top-level helpers exist, and what they are given is not run")
    func helpers() throws {
        let report = try check("""
            require('UIColor');
            var color = UIColor.colorWithRed_green_blue_alpha(1, 0, 0, 1);
            dispatch_after(1, function() { throw new Error('not at top level'); });
            dispatch_async_main(function() { while (true) {} });
            var handler = block('void, id', function(x) { });
            defineProtocol('CartObserver', { cartDidChange: { paramsType: 'id', returnType: 'void' } });
            defineClass('CheckoutViewController <CartObserver>', { cartDidChange: function(cart) { } });
            console.log('loaded', YES, NO);
            include('helpers.js');
            """)
        #expect(report.errors.isEmpty, "\(report.lines)")
        #expect(codes(report, .warning) == ["include"], "a hotpatch bundle is one file: \(report.lines)")
    }
}

@Suite("Script check: hostile top levels end the worker, never the caller")
struct HostileScriptTests {
    static let limits = ScriptChecker.Limits(cpuSeconds: 1, memoryMiB: 128, deadline: 10)

    func limitFinding(_ script: String, limits: ScriptChecker.Limits = HostileScriptTests.limits) throws -> (CheckFinding, TimeInterval) {
        let started = Date()
        let report = try check(script, limits: limits)
        let elapsed = Date().timeIntervalSince(started)
        #expect(report.outcome == .failed, "\(report.lines)")
        return (try #require(report.errors.first), elapsed)
    }

    @Test("an endless loop at top level: stopped at the CPU limit")
    func endlessLoop() throws {
        let (finding, elapsed) = try limitFinding("require('UIView');\nwhile (true) {}\n")
        #expect(finding.code == "limit")
        #expect(finding.message.contains("1 s of CPU time"))
        #expect(elapsed < Self.limits.deadline)
    }

    @Test("an endless loop in a getter of a method table the runtime reads")
    func getterLoop() throws {
        let (finding, _) = try limitFinding("defineClass('CheckoutViewController', { get viewDidLoad() { while (true) {} } });")
        #expect(finding.code == "limit")
    }

    @Test("a 1 GiB string: out of memory, reported as what the top level throws")
    func hugeString() throws {
        let (finding, _) = try limitFinding("var big = 'x'.repeat(1 << 30);\nbig.length;")
        #expect(finding.code == "exception" || finding.code == "limit")
        #expect(finding.message.lowercased().contains("memory"))
    }

    @Test("allocation without end: the memory limit stops it")
    func growingHeap() throws {
        let (finding, elapsed) = try limitFinding("var keep = [];\nwhile (true) keep.push({ a: [1, 2, 3], b: 'xxxxxxxxxxxxxxxx' + keep.length });")
        #expect(finding.code == "exception" || finding.code == "limit")
        #expect(finding.message.lowercased().contains("memory") || finding.message.contains("CPU"), "\(finding.message)")
        #expect(elapsed < Self.limits.deadline)
    }

    @Test("deep recursion: the engine's stack limit")
    func deepRecursion() throws {
        let (finding, _) = try limitFinding("function down(n) { return down(n + 1) + 1; }\ndown(0);")
        #expect(finding.code == "exception")
        #expect(finding.message.contains("Maximum call stack size exceeded"))
        #expect(finding.at?.line == 1)
    }

    @Test("the wall-clock deadline holds when the CPU limit is far off")
    func deadline() throws {
        let limits = ScriptChecker.Limits(cpuSeconds: 60, memoryMiB: 128, deadline: 1)
        let (finding, elapsed) = try limitFinding("while (true) {}", limits: limits)
        #expect(finding.code == "limit")
        #expect(finding.message.contains("within 1 s"))
        #expect(elapsed < 5)
    }

    @Test("a worker that is not there: the check could not run, said as such")
    func missingWorker() throws {
        let checker = ScriptChecker(worker: "/nonexistent/patchcheck")
        #expect(throws: ScriptCheckError.self) { try checker.check(Array("1;".utf8), manifest: nil) }
        do {
            _ = try checker.check(Array("1;".utf8), manifest: nil)
        } catch {
            #expect(error.description.contains("could not run"))
        }
    }
}

@Suite("Native manifest: the format and its refusals")
struct NativeManifestTests {
    @Test("the demo manifest reads, and lookups walk the chain")
    func lookups() {
        let manifest = Demo.manifest
        #expect(manifest.lookup("viewDidAppear:", classSide: false, in: "CheckoutViewController") == .implemented(by: "UIViewController"))
        #expect(manifest.lookup("tableView:heightForRowAtIndexPath:", classSide: false, in: "CheckoutViewController") == .declared(byProtocol: "UITableViewDelegate"))
        #expect(manifest.lookup("flyAway", classSide: false, in: "CheckoutViewController") == .missing)
        #expect(manifest.lookup("reloadData", classSide: false, in: "UITableView") == .unconfirmed(at: "UITableView"))
        #expect(manifest.has(class: "UIColor") && !manifest.has(class: "UIColour"))
    }

    @Test("what is refused, with what is wrong", arguments: [
        ("[]", "not a JSON object"),
        (#"{"format":"other/1","classes":{}}"#, "format"),
        (#"{"format":"hotpatch-native-manifest/1"}"#, "classes is missing"),
        (#"{"format":"hotpatch-native-manifest/1","classes":{"A":{"superclass":3}}}"#, "superclass is not a string"),
        (#"{"format":"hotpatch-native-manifest/1","classes":{"A B":{}}}"#, "is not a name"),
        (#"{"format":"hotpatch-native-manifest/1","classes":{"A":{"instanceMethods":[1]}}}"#, "not a string"),
        (#"{"format":"hotpatch-native-manifest/1","classes":{},"knownClasses":"UIView"}"#, "knownClasses is not a list"),
    ])
    func refusals(_ input: String, _ expected: String) {
        #expect(throws: ManifestError.self) { try NativeManifest(bytes: Array(input.utf8)) }
        do { _ = try NativeManifest(bytes: Array(input.utf8)) } catch { #expect(error.description.contains(expected), "\(error)") }
    }

    @Test("written and read back")
    func roundTrip() throws {
        let again = try NativeManifest(bytes: Demo.manifest.json.wireBytes)
        #expect(again == Demo.manifest)
    }
}
