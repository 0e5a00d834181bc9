import Foundation
import Testing

/// Package.swift as the module tests read it (ClientModuleGraphTests, ModuleMapTests): its
/// products and the targets of its `targets:` list, each with its kind, directory and
/// dependencies. Read as text, not built: the tests hold the file the build reads, and the
/// blocks declared only under HOTPATCH_FUZZ or HOTPATCH_APPLE_SHAPED are outside that list.
struct Manifest {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    struct Dependency: Equatable {
        let name: String
        let linuxOnly: Bool
    }

    enum Kind: String {
        case systemLibrary, target, executableTarget, testTarget
    }

    struct Target {
        let name: String
        let kind: Kind
        /// Its directory from the package root: `path:`, or SwiftPM's default.
        let path: String
        let dependencies: [Dependency]
    }

    /// In the order Package.swift declares them.
    var declared: [Target] = []
    var products: [String: [String]] = [:]

    var systemLibraries: Set<String> { Set(declared.filter { $0.kind == .systemLibrary }.map(\.name)) }
    var targets: [String: [Dependency]] { Dictionary(uniqueKeysWithValues: declared.map { ($0.name, $0.dependencies) }) }

    static func load() throws -> Manifest {
        try Manifest(String(contentsOf: root.appendingPathComponent("Package.swift"), encoding: .utf8))
    }

    init(_ text: String) throws {
        let code = Self.withoutComments(text)
        let opening = try #require(code.range(of: #"(?m)^\s*targets: \["#, options: .regularExpression), "Package.swift has no targets: list")
        let list = String(Self.enclosed(code[opening.upperBound...], open: "[", close: "]"))
        let entry = try NSRegularExpression(pattern: #"\.(systemLibrary|target|executableTarget|testTarget)\("#)
        var from = list.startIndex
        // Top-level entries only: the scan resumes after each entry's closing parenthesis, past
        // the `.target(name:condition:)` dependencies inside it.
        while let match = entry.firstMatch(in: list, range: NSRange(from..., in: list)),
              let whole = Range(match.range, in: list), let kindName = Range(match.range(at: 1), in: list) {
            let arguments = Self.enclosed(list[whole.upperBound...], open: "(", close: ")")
            let name = try #require(Self.matches(#"^\s*name: "([\w-]+)""#, in: arguments).first, "an entry of targets: without a name: \(arguments)")
            let kind = try #require(Kind(rawValue: String(list[kindName])))
            let path = Self.matches(#"\bpath: "([^"]+)""#, in: arguments).first
                ?? (kind == .testTarget ? "Tests/\(name)" : "Sources/\(name)")
            var dependencies: [Dependency] = []
            if let start = arguments.range(of: "dependencies: [") {
                dependencies = Self.split(String(Self.enclosed(arguments[start.upperBound...], open: "[", close: "]"))).compactMap { item in
                    Self.matches(#""([\w-]+)""#, in: item).first.map { Dependency(name: $0, linuxOnly: item.contains(".when(platforms: [.linux])")) }
                }
            }
            declared.append(Target(name: name, kind: kind, path: path, dependencies: dependencies))
            from = arguments.endIndex
        }
        for name in Self.matches(#"\.library\(name: "(\w+)", targets: \["#, in: code) {
            let start = try #require(code.range(of: ".library(name: \"\(name)\", targets: ["))
            products[name] = Self.matches(#""(\w+)""#, in: Self.enclosed(code[start.upperBound...], open: "[", close: "]"))
        }
    }

    /// Targets (and C modules) the product reaches, with whether each C module is reached only on Linux.
    func closure(of product: String) -> (targets: Set<String>, cModules: [Dependency]) {
        let targets = self.targets, systemLibraries = self.systemLibraries
        var seen = Set<String>(), cModules: [Dependency] = []
        var queue = products[product] ?? []
        while let next = queue.popLast() {
            guard seen.insert(next).inserted else { continue }
            for dependency in targets[next] ?? [] {
                if systemLibraries.contains(dependency.name) { cModules.append(dependency) } else { queue.append(dependency.name) }
            }
        }
        return (seen, cModules)
    }

    /// Every Swift file under the target's directory.
    func sources(of target: String) throws -> [SourceFile] {
        let declaration = try #require(declared.first { $0.name == target }, "Package.swift declares no target \(target)")
        let directory = Self.root.appendingPathComponent(declaration.path)
        let enumerator = try #require(FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil),
                                      "\(declaration.path), \(target)'s directory, is missing")
        var files: [SourceFile] = []
        for case let url as URL in enumerator where url.pathExtension == "swift" {
            let relative = String(url.standardizedFileURL.path.dropFirst(Self.root.standardizedFileURL.path.count + 1))
            files.append(SourceFile(path: relative, lines: try String(contentsOf: url, encoding: .utf8).components(separatedBy: "\n")))
        }
        return files.sorted { $0.path < $1.path }
    }

    static func matches(_ pattern: String, in text: some StringProtocol) -> [String] {
        let regex = try! NSRegularExpression(pattern: pattern)
        let string = String(text)
        return regex.matches(in: string, range: NSRange(string.startIndex..., in: string)).compactMap {
            Range($0.range(at: 1), in: string).map { String(string[$0]) }
        }
    }

    /// The text up to the `close` that matches the `open` just before `text`.
    static func enclosed(_ text: Substring, open: Character, close: Character) -> Substring {
        var depth = 1
        var end = text.endIndex
        for index in text.indices {
            if text[index] == open { depth += 1 } else if text[index] == close { depth -= 1 }
            if depth == 0 { end = index; break }
        }
        return text[..<end]
    }

    /// Top-level comma-separated items.
    static func split(_ text: String) -> [String] {
        var items: [String] = [], current = "", depth = 0
        for character in text {
            if "([".contains(character) { depth += 1 } else if ")]".contains(character) { depth -= 1 }
            if character == ",", depth == 0 { items.append(current); current = "" } else { current.append(character) }
        }
        return items + [current]
    }

    /// The text with each `//` comment cut, so a bracket or a comma in a comment cannot
    /// shift the parse; a `//` inside a string literal is kept.
    static func withoutComments(_ text: String) -> String {
        text.components(separatedBy: "\n").map { line in
            var inString = false, escaped = false, previous: Character = " "
            for index in line.indices {
                let character = line[index]
                if inString {
                    if escaped { escaped = false } else if character == "\\" { escaped = true } else if character == "\"" { inString = false }
                } else if character == "\"" {
                    inString = true
                } else if character == "/", previous == "/" {
                    return String(line[..<line.index(before: index)])
                }
                previous = inString ? " " : character
            }
            return line
        }.joined(separator: "\n")
    }
}

/// A Swift file of the package: its path from the package root and its lines.
struct SourceFile {
    let path: String
    let lines: [String]

    struct Import {
        let module: String
        /// 1-based.
        let line: Int
        /// The `#if` branches around it (false for an `#else` branch).
        let guards: [(condition: String, taken: Bool)]
    }

    /// Each `import` of a module, attributes and access levels (`@_exported`, `internal`) and
    /// kinds (`import struct Foundation.Data`) included.
    var imports: [Import] {
        var stack: [(condition: String, taken: Bool)] = [], found: [Import] = []
        for (number, raw) in lines.enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("#if ") { stack.append((String(line.dropFirst(4)), true)) }
            else if line.hasPrefix("#elseif "), !stack.isEmpty { stack[stack.count - 1] = (String(line.dropFirst(8)), true) }
            else if line.hasPrefix("#else"), !stack.isEmpty { stack[stack.count - 1].taken = false }
            else if line.hasPrefix("#endif"), !stack.isEmpty { stack.removeLast() }
            else if let module = Manifest.matches(#"^(?:@\w+ |internal |public |package |private |fileprivate )*import (?:(?:typealias|struct|class|enum|protocol|let|var|func) )?(\w+)"#, in: line).first {
                found.append(Import(module: module, line: number + 1, guards: stack))
            }
        }
        return found
    }
}
