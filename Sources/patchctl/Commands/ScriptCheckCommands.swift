import Foundation
import HotpatchCLI
import PatchCheck
import PatchCore
import PatchRegistry

/// `patchctl check`: the script check a publish runs (issue 45), without publishing: the
/// script parsed and its top level run in JavaScriptCore against the recording JSPatch runtime,
/// then read against the app version's native manifest. Through the registry or `--server`
/// (its manifest, its worker), or with `--manifest FILE` / `--offline` here alone.
struct CheckCommand: Command {
    static let spec = CommandSpec("check", summary: "Check a JSPatch script as publish would, without publishing: syntax and top level in JavaScriptCore, overrides against the app's native manifest (exit 0 clean, 1 findings, 2 could not run)",
                                  positionals: ["[FILE]"],
                                  options: [.value("--app", "NAME", "the app (default: hotpatch.json's, or the registry's only app)"),
                                            .value("--app-version", "V", "check against this version's native manifest, as a publish to it would (default: syntax and evaluation only)"),
                                            .value("--manifest", "FILE", "check against this native manifest file here, with no registry or server (an app's CI before the manifest is stored)"),
                                            .flag("--offline", "syntax and evaluation only, here, with no registry or server"),
                                            .flag("--json", "print the report as JSON")] + Context.globalOptions + Remote.options)

    static func run(_ arguments: Arguments) throws(CLIError) {
        let version = arguments.value("--app-version") == nil ? nil : try arguments.appVersion()
        let report: CheckReport
        if arguments.value("--manifest") != nil || arguments.flag("--offline") {
            if arguments.value("--manifest") != nil, arguments.flag("--offline") { throw .usage("--manifest and --offline exclude each other") }
            guard let file = arguments.positional(0) else { throw .usage("give FILE: --manifest and --offline check a file here") }
            let script = try Output.readFile(file, what: "script", limit: Registry.maxBundleSize)
            var manifest: NativeManifest?
            if let path = arguments.value("--manifest") {
                let bytes = try Output.readFile(path, what: "manifest", limit: NativeManifest.maxBytes)
                do { manifest = try NativeManifest(bytes: bytes) } catch { throw .failed("\(path.pathSanitized): \(error)") }
            }
            do { report = try ScriptChecker().check(script, manifest: manifest, manifestSha256: nil) } catch { throw .failed(error.description) }
        } else {
            let backend = try Backends.open(arguments)
            let app = try backend.app(arguments)
            let file = try version.map { v throws(CLIError) in try PublishCommand.bundlePath(arguments, app: app, version: v) } ?? arguments.positional(0)
            guard let file else { throw .usage("give FILE (or --app-version V, whose default bundle path is checked)") }
            let script = try Output.readFile(file, what: "script", limit: Registry.maxBundleSize)
            let answer = try ReleaseCall.run(CheckScriptOperation(appVersion: version, script: script), app: app, backend: backend)
            guard let parsed = CheckReport(json: answer) else { throw .failed("\(backend.place) answered something that is not a check report") }
            report = parsed
        }
        if arguments.flag("--json") {
            Output.json(report.json)
        } else {
            for line in report.lines { Output.line(line) }
            Output.line("check: \(report.summary)\(report.nativeChecked ? " (native check against \(version.map { "\($0)'s" } ?? "the") manifest)" : "")")
        }
        if report.outcome != .passed { throw .verificationFailed("the script check found \(report.summary)") }
    }
}

/// `patchctl apps manifest`: stores an app version's native manifest (the classes and selectors
/// its binary has, as PatchClientObjC's HPNativeManifest writes them), which every publish to
/// the version is then checked against.
struct AppsManifestCommand: Command {
    static let spec = CommandSpec("apps manifest", summary: "Store an app version's native manifest (its classes and selectors), which every publish, promote and rollback to it is checked against",
                                  positionals: ["FILE"],
                                  options: [.value("--app", "NAME", "the app (default: hotpatch.json's, or the registry's only app)"),
                                            .value("--app-version", "V", "the app version the manifest is of").required,
                                            .flag("--json", "print JSON")] + Context.globalOptions + Remote.options)

    static func run(_ arguments: Arguments) throws(CLIError) {
        let version = try arguments.appVersion()
        let bytes = try Output.readFile(arguments.positionals[0], what: "manifest", limit: NativeManifest.maxBytes)
        let backend = try Backends.open(arguments)
        let app = try backend.app(arguments)
        let out = try ReleaseCall.run(ManifestOperation(appVersion: version, manifest: bytes), app: app, backend: backend)
        if arguments.flag("--json") { Output.json(out); return }
        if out["changed"]?.boolValue == false {
            Output.line("\(app) \(version) has this native manifest already (sha256 \(out["sha256"]?.stringValue ?? "")): unchanged")
            return
        }
        let replaced = out["replaced"]?.stringValue.map { "; it replaces sha256 \($0.prefix(16))…" } ?? ""
        Output.line("stored the native manifest of \(app) \(version): \(out["classes"]?.intValue ?? 0) classes, \(out["protocols"]?.intValue ?? 0) protocols, \(out["knownClasses"]?.intValue ?? 0) known classes (sha256 \(out["sha256"]?.stringValue ?? "")\(replaced))")
        Output.line("every publish, promote and rollback --to of \(version) is checked against it from now on")
    }
}

/// `--skip-check REASON` of the commands that release a script.
enum SkipCheck {
    static let option = Option.value("--skip-check", "REASON", "release even though the script check finds errors (or cannot run); the reason and the findings are audited")
}

/// What a release says of its script check on stderr (stdout stays the answer): the warnings
/// it passed with, or what `--skip-check` published past. One patch's answer or several's.
enum ScriptCheckOutput {
    static func warn(_ answer: JSON) {
        let patches = answer["patches"]?.arrayValue ?? [answer]
        // A publish to several versions: each version's check, said once when they agree.
        var said: Set<String> = []
        for patch in patches {
            guard let check = patch["check"].flatMap(PatchCheckRecord.init(json:)) else { continue }
            let findings = (check.report?.findings ?? []).filter { $0.severity != .note }
            let version = patches.count > 1 ? " (\(patch["appVersion"]?.stringValue ?? ""))" : ""
            for finding in findings where said.insert(finding.line).inserted { Output.error("check\(version): \(finding.line)") }
            if let reason = check.skipReason, check.outcome == .failed || check.outcome == .unchecked {
                Output.error("check\(version): released past the script check (\(check.label)) with --skip-check \"\(reason)\"; audited")
            }
        }
    }
}
