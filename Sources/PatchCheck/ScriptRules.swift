import PatchCore

/// The check's rules over what a script's top level did (docs/PROTOCOL.md, "Script check"):
/// first what fails on any device (a throw at top level, a method table JSPatch misreads), then,
/// with the app version's manifest, what the script asks of the app's classes.
struct ScriptRules {
    let recording: ScriptRecording
    let manifest: NativeManifest?

    func findings() -> (findings: [CheckFinding], touches: [String]) {
        var findings: [CheckFinding] = []
        if let thrown = recording.syntaxError {
            return ([CheckFinding(.error, "syntax", "\(thrown.message) (JavaScriptCore cannot parse the script; JSPatch would run none of it)", at: thrown.at)], [])
        }
        if let thrown = recording.exception {
            findings.append(CheckFinding(.error, "exception",
                                         "the script's top level throws \(thrown.message): on a device JSPatch stops there, and nothing after it runs",
                                         at: thrown.at))
        }
        for unknown in recording.unknownGlobals {
            findings.append(undefinedName(unknown.name, at: unknown.at))
        }
        if recording.truncated {
            findings.append(CheckFinding(.warning, "truncated", "the script defines more than the check records (over 2,000 classes or 20,000 methods): the rest is unchecked"))
        }
        for include in recording.includes {
            findings.append(CheckFinding(.warning, "include", "include('\(include.file)'): a hotpatch bundle is one script, so a device has no \(include.file) beside it", at: include.at))
        }
        var touches: [String] = []
        for defined in recording.classes {
            findings += problems(of: defined)
            guard let name = defined.name else { continue }
            for method in defined.instanceMethods { touches.append("\(name) -\(JSPatchSelector.selector(jsName: method.jsName, arity: method.arity))") }
            for method in defined.classMethods { touches.append("\(name) +\(JSPatchSelector.selector(jsName: method.jsName, arity: method.arity))") }
        }
        if let manifest {
            findings += NativeRules(recording: recording, manifest: manifest).findings()
        }
        return (findings, touches)
    }

    /// A name the top level uses that JavaScript and JSPatch do not define. On a device the
    /// script stops there with a ReferenceError, unless the app's JSPatch setup defines it (an
    /// extension): with a manifest, which lists those (`jsGlobals`), an error unless it does;
    /// without one the check cannot tell, and warns.
    private func undefinedName(_ name: String, at: ScriptLocation) -> CheckFinding {
        guard let manifest else {
            return CheckFinding(.warning, "undefined-name",
                                "\(name) is not defined by JavaScript or JSPatch: on a device the top level stops here with a ReferenceError, unless an extension of the app defines it (a manifest's jsGlobals would say)",
                                at: at)
        }
        if manifest.jsGlobals.contains(name) { return CheckFinding(.note, "app-global", "\(name) is defined by the app's JSPatch setup (manifest jsGlobals)", at: at) }
        if manifest.has(class: name) || recording.classes.contains(where: { $0.name == name }) {
            return CheckFinding(.error, "undefined-name",
                                "\(name) is a class of app \(manifest.appVersion ?? "version"), used without require('\(name)'): on a device the top level stops here with a ReferenceError",
                                at: at, className: name)
        }
        let near = Suggestion.closest(to: name, among: Array(manifest.jsGlobals) + ["require", "defineClass", "defineProtocol", "include", "block", "console"])
        return CheckFinding(.error, "undefined-name",
                            "\(name) is not defined by JavaScript, JSPatch or the app (manifest jsGlobals)\(near.map { " (did you mean \($0)?)" } ?? ""): on a device the top level stops here with a ReferenceError",
                            at: at, suggestions: near.map { [$0] } ?? [])
    }

    /// What JSPatch's JavaScript side does wrong with one `defineClass`, app or no app.
    private func problems(of defined: ScriptRecording.DefinedClass) -> [CheckFinding] {
        defined.problems.map { problem in
            switch problem.kind {
            case "not-a-function":
                let dropped = problem.dropped.isEmpty ? "" : ", and drops the \(problem.dropped.count == 1 ? "method" : "\(problem.dropped.count) methods") after it (\(problem.dropped.joined(separator: ", ")))"
                return CheckFinding(.error, "not-a-function",
                                    "defineClass('\(defined.declaration)'): \(problem.table ?? "instance") method \(problem.name ?? "?") is a \(problem.valueType ?? "value"), not a function: JSPatch stops reading the table there\(dropped)",
                                    at: defined.at, className: defined.name)
            case "declaration":
                return CheckFinding(.error, "declaration", "defineClass('\(defined.declaration)'): the declaration \(problem.message ?? "is not one JSPatch reads")",
                                    at: defined.at)
            default:
                return CheckFinding(.error, problem.kind, "defineClass('\(defined.declaration)'): \(problem.message ?? problem.kind)", at: defined.at, className: defined.name)
            }
        }
    }
}

/// The rules that need the app's classes.
struct NativeRules {
    let recording: ScriptRecording
    let manifest: NativeManifest

    func findings() -> [CheckFinding] {
        var findings: [CheckFinding] = []
        // Classes the script itself makes exist (a new class, once its defineClass has run).
        let defined = Set(recording.classes.compactMap { $0.superclass == nil ? nil : $0.name })
        let scriptProtocols = Dictionary(recording.protocols.compactMap { entry in entry.name.map { ($0, entry) } }, uniquingKeysWith: { a, _ in a })
        for required in recording.required where !manifest.has(class: required.name) && !defined.contains(required.name) {
            findings.append(CheckFinding(.error, "unknown-required-class",
                                         "require('\(required.name)'): app \(version) has no class \(required.name)\(didYouMean(classNamed: required.name))",
                                         at: required.at, className: required.name, suggestions: classSuggestions(required.name)))
        }
        for entry in recording.classes {
            guard let name = entry.name else { continue }
            let exists = manifest.has(class: name)
            var chainStart = name
            if !exists {
                guard let superclass = entry.superclass else {
                    findings.append(CheckFinding(.error, "unknown-class",
                                                 "defineClass('\(entry.declaration)'): app \(version) has no class \(name)\(didYouMean(classNamed: name)); to define a new class, name its superclass ('\(name) : NSObject')",
                                                 at: entry.at, className: name, suggestions: classSuggestions(name)))
                    continue
                }
                guard manifest.has(class: superclass) || defined.contains(superclass) else {
                    findings.append(CheckFinding(.error, "unknown-superclass",
                                                 "defineClass('\(entry.declaration)'): the superclass \(superclass) is not a class of app \(version)\(didYouMean(classNamed: superclass))",
                                                 at: entry.at, className: name, suggestions: classSuggestions(superclass)))
                    continue
                }
                chainStart = superclass
            } else if let declared = entry.superclass, let listed = manifest.classes[name], listed.superclass != declared {
                findings.append(CheckFinding(.warning, "superclass-ignored",
                                             "defineClass('\(entry.declaration)'): \(name) exists with superclass \(listed.superclass ?? "none"); JSPatch keeps it and ignores \(declared)",
                                             at: entry.at, className: name))
            }
            // Protocols named in the declaration: the manifest's, or ones the script defines.
            var adopted = entry.protocols
            var scriptDeclared: [String: Set<String>] = [:]
            for protocolName in entry.protocols {
                if let own = scriptProtocols[protocolName] {
                    scriptDeclared[protocolName] = Set((own.instanceMethods + own.classMethods).map { JSPatchSelector.selector(jsName: $0.jsName, arity: $0.arity) })
                } else if manifest.protocols[protocolName] == nil {
                    adopted.removeAll { $0 == protocolName }
                }
            }
            for (methods, classSide) in [(entry.instanceMethods, false), (entry.classMethods, true)] {
                for method in methods {
                    if let finding = check(method, classSide: classSide, entry: entry, name: name, chainStart: chainStart, isNew: !exists,
                                           adopted: adopted, scriptDeclared: scriptDeclared) {
                        findings.append(finding)
                    }
                }
            }
        }
        return findings
    }

    private var version: String { manifest.appVersion ?? "version" }

    private func check(_ method: ScriptRecording.Method, classSide: Bool, entry: ScriptRecording.DefinedClass, name: String, chainStart: String,
                       isNew: Bool, adopted: [String], scriptDeclared: [String: Set<String>]) -> CheckFinding? {
        let selector = JSPatchSelector.selector(jsName: method.jsName, arity: method.arity)
        if scriptDeclared.values.contains(where: { $0.contains(selector) }) { return nil }
        let lookup = manifest.lookup(selector, classSide: classSide, in: chainStart, protocols: adopted)
        let side = classSide ? "class" : "instance"
        let sign = classSide ? "+" : "-"
        switch lookup {
        case .implemented, .declared:
            return nil
        case .unconfirmed(let at):
            // Below the manifest's reach: a framework class it lists by name only.
            return CheckFinding(.note, "unconfirmed-selector",
                                "\(name) \(sign)\(selector): not found up to \(at), whose selectors the manifest does not list",
                                at: entry.at, className: name, selector: selector)
        case .missing:
            let candidates = manifest.selectors(classSide: classSide, of: chainStart, protocols: adopted)
            let near = nearest(selector, among: candidates)
            if !near.isEmpty {
                let shown = near.map { "\($0) (\(JSPatchSelector.jsName(selector: $0)), \(JSPatchSelector.arity(selector: $0)) argument\(JSPatchSelector.arity(selector: $0) == 1 ? "" : "s"))" }
                return CheckFinding(.error, "selector-typo",
                                    "\(name) has no \(side) method \(selector) (\(method.jsName) with \(method.arity) argument\(method.arity == 1 ? "" : "s")): did you mean \(shown.joined(separator: " or "))? JSPatch would add a new method that no native code calls",
                                    at: entry.at, className: name, selector: selector, suggestions: near)
            }
            // A new class's own methods are new by definition; JSPatch keeps `_name` in JavaScript.
            if isNew || JSPatchSelector.isJavaScriptOnly(jsName: method.jsName) { return nil }
            return CheckFinding(.warning, "new-method",
                                "\(name) has no \(side) method \(selector): JSPatch adds it as a new method, which only JavaScript calls (not an override)",
                                at: entry.at, className: name, selector: selector)
        }
    }

    /// The selectors one slip away (Suggestion's measure), nearest first, at most three.
    private func nearest(_ selector: String, among candidates: Set<String>) -> [String] {
        let folded = selector.lowercased()
        return candidates.compactMap { candidate -> (String, Int)? in
            // A different letter case is a typo however long the name.
            if candidate.lowercased() == folded { return (candidate, 0) }
            let distance = Suggestion.distance(selector, candidate)
            return Suggestion.isTypo(distance, of: candidate) ? (candidate, distance) : nil
        }
        .sorted { ($0.1, $0.0) < ($1.1, $1.0) }.prefix(3).map(\.0)
    }

    private func classSuggestions(_ name: String) -> [String] {
        Suggestion.closest(to: name, among: manifest.classNames).map { [$0] } ?? []
    }

    private func didYouMean(classNamed name: String) -> String {
        classSuggestions(name).first.map { " (did you mean \($0)?)" } ?? ""
    }
}
