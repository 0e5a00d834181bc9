import Foundation
import Testing

/// What an iOS app links when it adds the PatchClient product, checked on Linux, where no
/// Apple build can run: the targets the product reaches (read from Package.swift), every C
/// module among them only under `.when(platforms: [.linux])`, every import of one in their
/// sources under `#if canImport(thatModule)`, and every crypto call through the verification
/// seam — OpenSSL only in its backend's files, CryptoKit and Security only in the Apple ones.
@Suite("The client product links no C module on Apple platforms")
struct ClientModuleGraphTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let openSSLBackend = "Sources/PatchCore/Crypto/OpenSSL/"
    static let appleBackend = "Sources/PatchCore/Crypto/Apple/"
    static let curlFile = "Sources/HTTPClientKit/HTTPClient+Curl.swift"
    /// Apple frameworks the client may use only where they exist.
    static let appleModules: Set<String> = ["CryptoKit", "Security", "UIKit"]

    struct Dependency: Equatable {
        let name: String
        let linuxOnly: Bool
    }

    struct Manifest {
        var systemLibraries: Set<String> = []
        var targets: [String: [Dependency]] = [:]
        var products: [String: [String]] = [:]

        init(_ text: String) throws {
            systemLibraries = Set(Self.matches(#"\.systemLibrary\(name: "(\w+)""#, in: text))
            for name in Self.matches(#"\.(?:target|executableTarget)\(name: "(\w+)", dependencies: \["#, in: text) {
                let start = try #require(text.range(of: "(name: \"\(name)\", dependencies: ["))
                targets[name] = Self.split(Self.bracketed(text[start.upperBound...])).compactMap { item in
                    Self.matches(#""(\w+)""#, in: item).first.map { Dependency(name: $0, linuxOnly: item.contains(".when(platforms: [.linux])")) }
                }
            }
            for name in Self.matches(#"\.library\(name: "(\w+)", targets: \["#, in: text) {
                let start = try #require(text.range(of: ".library(name: \"\(name)\", targets: ["))
                products[name] = Self.matches(#""(\w+)""#, in: Self.bracketed(text[start.upperBound...]))
            }
        }

        /// Targets (and C modules) the product reaches, with whether each C module is reached only on Linux.
        func closure(of product: String) -> (targets: Set<String>, cModules: [Dependency]) {
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

        static func matches(_ pattern: String, in text: some StringProtocol) -> [String] {
            let regex = try! NSRegularExpression(pattern: pattern)
            let string = String(text)
            return regex.matches(in: string, range: NSRange(string.startIndex..., in: string)).compactMap {
                Range($0.range(at: 1), in: string).map { String(string[$0]) }
            }
        }

        /// The text up to the `]` closing the `[` just before `text`.
        static func bracketed(_ text: Substring) -> String {
            var depth = 1
            var end = text.startIndex
            for index in text.indices {
                if text[index] == "[" { depth += 1 } else if text[index] == "]" { depth -= 1 }
                if depth == 0 { end = index; break }
            }
            return String(text[..<end])
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
    }

    static func manifest() throws -> Manifest {
        try Manifest(String(contentsOf: root.appendingPathComponent("Package.swift"), encoding: .utf8))
    }

    /// Every Swift file of the targets the PatchClient product reaches, as (path from the root, lines).
    static func clientSources() throws -> [(path: String, lines: [String])] {
        let targets = try manifest().closure(of: "PatchClient").targets
        var files: [(String, [String])] = []
        for target in targets.sorted() {
            let directory = root.appendingPathComponent("Sources/\(target)")
            let enumerator = try #require(FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil))
            for case let url as URL in enumerator where url.pathExtension == "swift" {
                let relative = String(url.path.dropFirst(root.path.count + 1))
                files.append((relative, try String(contentsOf: url, encoding: .utf8).components(separatedBy: "\n")))
            }
        }
        return files
    }

    /// Each `import` of a module with the `#if` branches around it (false for an `#else` branch).
    static func imports(_ lines: [String]) -> [(module: String, line: Int, guards: [(condition: String, taken: Bool)])] {
        var stack: [(condition: String, taken: Bool)] = [], found: [(String, Int, [(condition: String, taken: Bool)])] = []
        for (number, raw) in lines.enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("#if ") { stack.append((String(line.dropFirst(4)), true)) }
            else if line.hasPrefix("#elseif "), !stack.isEmpty { stack[stack.count - 1] = (String(line.dropFirst(8)), true) }
            else if line.hasPrefix("#else"), !stack.isEmpty { stack[stack.count - 1].taken = false }
            else if line.hasPrefix("#endif"), !stack.isEmpty { stack.removeLast() }
            else if let module = Manifest.matches(#"^(?:@\w+ |internal |public |package |private |fileprivate )*import (\w+)"#, in: line).first {
                found.append((module, number + 1, stack))
            }
        }
        return found
    }

    static func code(_ line: String) -> Substring {
        line.range(of: "//").map { line[..<$0.lowerBound] } ?? line[...]
    }

    @Test("Package.swift: the product reaches PatchCore and PatchClient, never PatchSigning, and C modules only on Linux")
    func manifestConditions() throws {
        let manifest = try Self.manifest()
        let (targets, cModules) = manifest.closure(of: "PatchClient")
        #expect(targets.isSuperset(of: ["PatchCore", "PatchClient", "PatchClientObjC"]))
        #expect(targets.isDisjoint(with: ["PatchSigning", "PatchRegistry", "PatchServer", "PatchPush"]))
        #expect(Set(cModules.map(\.name)) == ["CCrypto", "CCurl"])
        for module in cModules { #expect(module.linuxOnly, "\(module.name) is linked on every platform") }
        // The registry side keeps OpenSSL everywhere.
        #expect(manifest.targets["PatchSigning"]?.contains(Dependency(name: "CCrypto", linuxOnly: false)) == true)
    }

    @Test("every import of a C module or an Apple framework in the client's sources is under #if canImport of it")
    func guardedImports() throws {
        let cModules = try Self.manifest().systemLibraries
        var checked = 0
        for file in try Self.clientSources() {
            for found in Self.imports(file.lines) where cModules.contains(found.module) || Self.appleModules.contains(found.module) {
                checked += 1
                let guarded = found.guards.contains { $0.taken && $0.condition.contains("canImport(\(found.module))") && !$0.condition.contains("!canImport(\(found.module))") }
                #expect(guarded, "\(file.path):\(found.line) imports \(found.module) outside #if canImport(\(found.module))")
            }
        }
        #expect(checked >= 4, "the scan found the guarded imports it should (CCrypto, CCurl, CryptoKit, Security)")
    }

    @Test("OpenSSL is called only in the seam's OpenSSL backend, CryptoKit and Security only in its Apple backend, libcurl only in HTTPClient+Curl")
    func cryptoGoesThroughTheSeam() throws {
        let openSSL = #"\b(EVP_|ERR_|RAND_|PEM_|BIO_|OSSL_|OPENSSL_|d2i_|i2d_|RSA_|EC_|HMAC\b)"#
        let apple = #"\b(Curve25519|P256|P384|P521|AES\.GCM|SHA256\(|SHA384\(|SHA512\(|Insecure\.|SymmetricKey|SecKey\w*|kSec\w+)"#
        let curl = #"\b(curl_\w+|CURL\w*)"#
        let sources = try Self.clientSources()
        #expect(sources.contains { $0.path.hasPrefix(Self.openSSLBackend) } && sources.contains { $0.path.hasPrefix(Self.appleBackend) })
        for file in sources {
            for (number, line) in file.lines.enumerated() {
                let code = Self.code(line)
                if !file.path.hasPrefix(Self.openSSLBackend) {
                    #expect(Manifest.matches(openSSL, in: code).isEmpty, "\(file.path):\(number + 1) calls OpenSSL outside the seam: \(line)")
                }
                if !file.path.hasPrefix(Self.appleBackend) {
                    #expect(Manifest.matches(apple, in: code).isEmpty, "\(file.path):\(number + 1) calls CryptoKit/Security outside the seam: \(line)")
                }
                if file.path != Self.curlFile {
                    #expect(Manifest.matches(curl, in: code).isEmpty, "\(file.path):\(number + 1) calls libcurl outside HTTPClient+Curl: \(line)")
                }
                if !file.path.hasSuffix("Crypto/VerificationCrypto.swift") {
                    #expect(Manifest.matches(#"((OpenSSL|CryptoKit)Verification)\("#, in: code).isEmpty, "\(file.path):\(number + 1) picks a backend itself")
                }
            }
        }
    }

    @Test("the stand-ins for Apple's modules (Tests/AppleShaped) are declared only in the HOTPATCH_APPLE_SHAPED block, on a Linux host")
    func standInsOnlyInTheAppleShapedBuild() throws {
        let text = try String(contentsOf: Self.root.appendingPathComponent("Package.swift"), encoding: .utf8)
        let opening = try #require(text.range(of: "#if os(Linux)\nif Context.environment[\"HOTPATCH_APPLE_SHAPED\"] == \"1\" {"))
        let closing = try #require(text.range(of: "\n}\n#endif", range: opening.upperBound..<text.endIndex))
        let block = opening.lowerBound..<closing.upperBound
        let standIns = try FileManager.default.contentsOfDirectory(atPath: Self.root.appendingPathComponent("Tests/AppleShaped").path)
        #expect(Set(standIns) == Self.appleModules, "one stand-in per Apple module the client uses")
        for needle in ["Tests/AppleShaped"] + standIns.map({ "\"\($0)\"" }) {
            var from = text.startIndex
            while let found = text.range(of: needle, range: from..<text.endIndex) {
                #expect(block.contains(found.lowerBound), "\(needle) named outside the apple-shaped block")
                from = found.upperBound
            }
        }
    }

    @Test("each backend file is compiled only where its library exists; the Objective-C face only on Apple platforms")
    func backendFilesAreGuarded() throws {
        // The Objective-C names need the Objective-C runtime; their Swift half needs UIKit alone
        // (the apple-shaped Linux build compiles it against a stand-in). First match wins.
        let required = [(Self.openSSLBackend, "#if canImport(CCrypto)"), (Self.appleBackend, "#if canImport(CryptoKit)"),
                        ("Sources/PatchClientObjC/HPPatchClient.swift", "#if canImport(ObjectiveC) && canImport(UIKit)"),
                        ("Sources/PatchClientObjC/HPNativeManifest.swift", "#if canImport(ObjectiveC) && canImport(UIKit)"),
                        ("Sources/PatchClientObjC/", "#if canImport(UIKit)"), (Self.curlFile, "#if canImport(CCurl)")]
        for file in try Self.clientSources() {
            guard let (_, opening) = required.first(where: { file.path.hasPrefix($0.0) }) else { continue }
            let code = file.lines.filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
            #expect(code.first?.hasPrefix(opening) == true, "\(file.path) must open with \(opening)")
            #expect(code.last == "#endif", "\(file.path) must close its #if")
        }
    }
}
