import Foundation
import Testing

/// What an iOS app links when it adds the PatchClient product, checked on Linux, where no
/// Apple build can run: the targets the product reaches (read from Package.swift), every C
/// module among them only under `.when(platforms: [.linux])`, every import of one in their
/// sources under `#if canImport(thatModule)`, and every crypto call through the verification
/// seam — OpenSSL only in its backend's files, CryptoKit and Security only in the Apple ones.
@Suite("The client product links no C module on Apple platforms")
struct ClientModuleGraphTests {
    static let openSSLBackend = "Sources/PatchCore/Crypto/OpenSSL/"
    static let appleBackend = "Sources/PatchCore/Crypto/Apple/"
    static let curlFile = "Sources/HTTPClientKit/HTTPClient+Curl.swift"
    /// Apple frameworks the client may use only where they exist.
    static let appleModules: Set<String> = ["CryptoKit", "Security", "UIKit"]

    /// Every Swift file of the targets the PatchClient product reaches.
    static func clientSources() throws -> [SourceFile] {
        let manifest = try Manifest.load()
        return try manifest.closure(of: "PatchClient").targets.sorted().flatMap { try manifest.sources(of: $0) }
    }

    static func code(_ line: String) -> Substring {
        line.range(of: "//").map { line[..<$0.lowerBound] } ?? line[...]
    }

    @Test("Package.swift: the product reaches PatchCore and PatchClient, never PatchSigning, and C modules only on Linux")
    func manifestConditions() throws {
        let manifest = try Manifest.load()
        let (targets, cModules) = manifest.closure(of: "PatchClient")
        #expect(targets.isSuperset(of: ["PatchCore", "PatchClient", "PatchClientObjC"]))
        #expect(targets.isDisjoint(with: ["PatchSigning", "PatchRegistry", "PatchServer", "PatchPush"]))
        #expect(Set(cModules.map(\.name)) == ["CCrypto", "CCurl"])
        for module in cModules { #expect(module.linuxOnly, "\(module.name) is linked on every platform") }
        // The registry side keeps OpenSSL everywhere.
        #expect(manifest.targets["PatchSigning"]?.contains(Manifest.Dependency(name: "CCrypto", linuxOnly: false)) == true)
    }

    @Test("every import of a C module or an Apple framework in the client's sources is under #if canImport of it")
    func guardedImports() throws {
        let cModules = try Manifest.load().systemLibraries
        var checked = 0
        for file in try Self.clientSources() {
            for found in file.imports where cModules.contains(found.module) || Self.appleModules.contains(found.module) {
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
        let text = try String(contentsOf: Manifest.root.appendingPathComponent("Package.swift"), encoding: .utf8)
        let opening = try #require(text.range(of: "#if os(Linux)\nif Context.environment[\"HOTPATCH_APPLE_SHAPED\"] == \"1\" {"))
        let closing = try #require(text.range(of: "\n}\n#endif", range: opening.upperBound..<text.endIndex))
        let block = opening.lowerBound..<closing.upperBound
        let standIns = try FileManager.default.contentsOfDirectory(atPath: Manifest.root.appendingPathComponent("Tests/AppleShaped").path)
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
