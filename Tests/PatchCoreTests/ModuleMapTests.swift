import Foundation
import Testing

/// The module map of issue 46 ("a map that stays true"), kept in one table: each module, what
/// it is in one line, and what it may depend on and import. Package.swift, every `import` in
/// each module's Swift files (tests aside) and README's Layout section are held to it, so
/// an arrow that runs the wrong way fails here with its file and line, a new module fails until
/// it is placed on the map, and README's map cannot drift from it. The arrows the issue names
/// (server-side code on the device SDK, the transport on anything above it, PatchCore on
/// anything but Foundation and crypto, device code on server code) are also written as
/// boundaries, checked before a module's row: widening a row does not let one through.
@Suite("The module map: Package.swift, every import and README's Layout agree with one table")
struct ModuleMapTests {
    struct Module {
        let name: String
        /// Its directory from the package root, as Package.swift gives it.
        let path: String
        /// What it is, in one line: README's Layout prints it.
        let role: String
        /// Everything it may depend on in Package.swift and import in its Swift files, in the
        /// order README prints them; nil for a system library, which holds headers only.
        let imports: [String]?
    }

    static func swift(_ name: String, at path: String? = nil, _ role: String, imports: [String]) -> Module {
        Module(name: name, path: path ?? "Sources/\(name)", role: role, imports: imports)
    }

    static func c(_ name: String, _ role: String) -> Module {
        Module(name: name, path: "Sources/\(name)", role: "system library: " + role, imports: nil)
    }

    /// Bottom up: a row names only rows above it.
    static let map: [Module] = [
        c("CCrypto", "OpenSSL's libcrypto, PatchCore's verification backend on Linux and PatchSigning's keys"),
        c("CNetwork", "epoll, sockets and OpenSSL's libssl, for patchd's HTTP transport"),
        c("CCurl", "libcurl, HTTPClientKit's engine on Linux"),
        c("CSQLite3", "SQLite, the registry's one-box storage"),
        c("CPostgres", "libpq, under Postgres"),
        c("CZip", "libzip, for the registry's JSPatch packages"),
        c("CJavaScriptCore", "JavaScriptCore's C API (WebKitGTK's libjavascriptcoregtk-4.1), the script check's engine"),
        c("CProcess", "posix_spawn's addclosefrom and pipe2, to start the script check's worker with no descriptor of patchd"),
        swift("Locking", "the one lock, `Locked<Value>`: Mutex on Linux, NSLock on Apple platforms so the client library runs on iOS 15; every module with Foundation may stand on it",
              imports: ["Foundation", "Synchronization"]),
        swift("WireFormat", "what bytes on a wire decode to: JSON (values, the parser, canonical bytes), the readable-text rule, ValidationError; PatchCore re-exports it",
              imports: ["Foundation"]),
        swift("PatchCore", "what a device needs: the TUF model and the one client workflow (TUF/Updater.swift: PatchClient and `patchctl verify` both drive it), the verification seam (Crypto/: OpenSSL/ on Linux, Apple/ on CryptoKit + Security, compiled here only against Tests/AppleShaped's stand-ins), identifiers, the rollout rule, RoutePath and the device's DeviceRoutes",
              imports: ["WireFormat", "Locking", "CCrypto", "Foundation", "CryptoKit", "Security"]),
        swift("PatchSigning", "what only the registry needs, on OpenSSL: key generation, signing (Ed25519/ECDSA/RSA private keys), key import (PEM), AES-GCM seal, HMAC, random salts",
              imports: ["PatchCore", "Locking", "CCrypto", "Foundation"]),
        swift("PatchAPI", "the operation table: every HTTP operation once (id, method, path, token scope, the patchctl commands that call it); patchd's router, patchctl's --server requests and the console's operations.js are built from it, OperationTableTests and RouteTableTests hold docs/openapi.yaml, README and the router to it; an app never links it",
              imports: ["PatchCore", "Locking", "Foundation"]),
        swift("HotpatchCLI", "the one option grammar of patchctl and patchd (Option, CommandSpec, Arguments, CLIError: --name VALUE or --name=VALUE, exit 64 for usage errors)",
              imports: ["PatchCore", "Locking", "Foundation"]),
        swift("Postgres", "a PostgreSQL connection that knows no domain (docs/POSTGRES.md)",
              imports: ["Locking", "CPostgres", "Foundation", "Glibc"]),
        swift("PatchCheck", "the script check (issue 45; docs/PROTOCOL.md section 13): starts the worker under its limits, reads what the script did, holds it to the app's native manifest, JSPatch's selector names; the registry runs it before every publish, promote and rollback, the client library never links it",
              imports: ["PatchCore", "Locking", "CProcess", "Foundation", "Synchronization"]),
        swift("patchcheck", "the check's worker, one process per check: JavaScriptCore runs the script's top level against the recording JSPatch runtime (Recorder.swift); built beside patchctl and patchd, where they look for it; no Foundation, as it starts for every check",
              imports: ["CJavaScriptCore", "Glibc"]),
        swift("HTTPClientKit", "the one HTTP client (HTTPClient: libcurl on Linux, URLSession on Apple; no redirects, every answer capped), HTTPRepository, LentThread: the device library, patchctl --server, APNs and webhooks all send through it",
              imports: ["PatchCore", "Locking", "CCurl", "Foundation", "FoundationNetworking"]),
        swift("PatchClient", "the device SDK: the updater over HTTP, decryption, atomic installs, launch confirmation and rollback (PatchClient+Launch), device reports (Reports/)",
              imports: ["PatchCore", "HTTPClientKit", "Locking", "Foundation"]),
        swift("PatchClientObjC", "Apple only (docs/IOS.md): HPPatchClient, PatchClient's Objective-C face (its Swift half, BundledPatchClient, compiled and tested here against a stand-in UIKit), and HPNativeManifest, which writes an app version's native manifest from the Objective-C runtime (never compiled here)",
              imports: ["PatchClient", "PatchCore", "HTTPClientKit", "Locking", "Foundation", "ObjectiveC", "UIKit"]),
        swift("PatchPush", "delivery (issues 15, 47): APNs pushes (ES256 tokens, HTTP/2) and webhooks through HTTPClientKit; it knows no storage, a round reads and writes through PushStore, which the registry implements",
              imports: ["PatchCore", "PatchSigning", "HTTPClientKit", "Locking", "Foundation", "Synchronization"]),
        swift("PatchRegistry", "the registry behind one storage seam (Storage/: SQLite and PostgreSQL), key store, signing chain, audit log, rotation, export, JSPatch packages (libzip)",
              imports: ["PatchCore", "PatchAPI", "PatchPush", "PatchSigning", "PatchCheck", "Postgres", "Locking", "CSQLite3", "CZip", "Foundation", "Synchronization"]),
        swift("HTTPTransport", "patchd's HTTP/1.1 transport: its own epoll loops, TLS via libssl, the strict RFC 9112 parser, the HTTP types, per-IP limits; it knows no patch, token or registry",
              imports: ["Locking", "WireFormat", "CNetwork", "Foundation", "Dispatch", "Synchronization", "Glibc"]),
        swift("WebConsole", at: "console", "the web console patchd serves at /console/ (HTML, CSS, JavaScript modules): SwiftPM compiles each file into patchd, WebConsole.swift lists them",
              imports: []),
        swift("PatchServer", "the server: router, prepared catalog, route handlers, device throttles, metrics, the console's site (Console/: console/'s files, operations.js rendered from the operation table); it answers through HTTPTransport",
              imports: ["HTTPTransport", "PatchCore", "PatchAPI", "PatchRegistry", "PatchCheck", "PatchPush", "WebConsole", "Locking", "Foundation", "Synchronization"]),
        swift("patchctl", "the CLI: one type per command under Commands/; Backend/ is the operation layer every remote-capable command calls (LocalBackend: the registry; RemoteBackend: the operation table over HTTP)",
              imports: ["HotpatchCLI", "PatchCore", "PatchAPI", "HTTPClientKit", "PatchSigning", "PatchRegistry", "PatchCheck", "PatchPush", "Locking", "Foundation", "Synchronization"]),
        swift("patchd", "the server executable: PatchServer over HTTPTransport, its options declared once, in HotpatchCLI's grammar",
              imports: ["HotpatchCLI", "PatchServer", "HTTPTransport", "PatchRegistry", "PatchCore", "PatchPush", "Locking", "Foundation"]),
        swift("hotpatch-bench", at: "bench/hotpatch-bench", "in-process measurements for `make bench` (bench/bench.py): publish latency, crypto throughput, the client library against a registry",
              imports: ["PatchClient", "PatchRegistry", "PatchCore", "PatchSigning", "Locking", "Foundation", "Synchronization"]),
    ]

    /// Files allowed one import their module's row refuses, and so their module the dependency.
    static let fileExceptions: [(file: String, imports: String)] = [
        // `patchctl fetch` runs the client library on purpose, as an app would, to try a server.
        ("Sources/patchctl/Commands/FetchCommand.swift", "PatchClient"),
    ]

    /// HTTPTransport is being carved out of PatchServer (Transport/, HTTP/, part of Throttle/).
    /// Until Package.swift declares it, its row stands on the map alone and PatchServer may still
    /// import what the transport does; once it is declared, both allowances lapse by themselves.
    static let extraction = (module: "HTTPTransport", from: "PatchServer", imports: ["CNetwork", "Dispatch"])

    /// The arrows issue 46 names, each with what to do instead.
    struct Boundary {
        let from: Set<String>
        let to: Set<String>
        let rule: String
    }

    static let serverSide: Set = ["PatchAPI", "PatchSigning", "PatchRegistry", "PatchServer", "PatchPush", "PatchCheck",
                                  "HTTPTransport", "Postgres", "HotpatchCLI", "patchctl", "patchd"]
    static let deviceSide: Set = ["Locking", "WireFormat", "PatchCore", "HTTPClientKit", "PatchClient", "PatchClientObjC"]
    static let boundaries: [Boundary] = {
        let everything = Set(map.map(\.name))
        return [
            Boundary(from: serverSide, to: ["PatchClient", "PatchClientObjC"],
                     rule: "server-side code never stands on the device SDK: send through HTTPClientKit, and move a type both sides need down to PatchCore"),
            Boundary(from: deviceSide, to: serverSide,
                     rule: "an app links this module and must link no server-side code: move what it needs down to PatchCore, or the code up to the server side"),
            Boundary(from: ["HTTPTransport"], to: everything.subtracting(["Locking", "WireFormat", "CNetwork"]),
                     rule: "the transport knows no patch, token or registry: PatchServer hands it what it needs as values or closures"),
            Boundary(from: ["PatchCore"], to: everything.subtracting(["Locking", "WireFormat", "CCrypto"]),
                     rule: "PatchCore is what every app links: Foundation, its crypto and the two leaves, nothing else; put the code in the module that needs it"),
            Boundary(from: ["PatchPush"], to: ["PatchRegistry", "PatchServer"],
                     rule: "delivery knows no storage: it reads and writes through PushStore, which the registry implements"),
        ]
    }()

    /// Why `module` may not stand on `dependency` (in `file`, or in Package.swift when nil), or
    /// nil when the map draws that arrow.
    static func refusal(of dependency: String, by module: Module, in file: String?, manifest: Manifest) -> String? {
        for exception in fileExceptions where exception.imports == dependency {
            if let file, file == exception.file { return nil }
            if file == nil, exception.file.hasPrefix(module.path + "/") { return nil }
        }
        if let boundary = boundaries.first(where: { $0.from.contains(module.name) && $0.to.contains(dependency) }) {
            return "\(module.name) → \(dependency) crosses a boundary issue 46 draws: \(boundary.rule)."
        }
        var allowed = module.imports ?? []
        if module.name == extraction.from, !manifest.declared.contains(where: { $0.name == extraction.module }) { allowed += extraction.imports }
        if allowed.contains(dependency) { return nil }
        return "\(dependency) is not on \(module.name)'s row of the map (ModuleMapTests.map allows: \(allowed.isEmpty ? "nothing" : allowed.joined(separator: ", "))). "
            + "Remove it; or, if \(module.name) should stand on \(dependency), add it to that row and paste the README line this suite prints."
    }

    /// The modules Package.swift declares that the map covers: every target but the tests' own.
    static func modules(of manifest: Manifest) -> [Manifest.Target] {
        manifest.declared.filter { $0.kind != .testTarget && !$0.path.hasPrefix("Tests/") }
    }

    @Test("every module Package.swift declares is on the map at its path, and every module on the map is declared")
    func everyModuleIsOnTheMap() throws {
        let manifest = try Manifest.load()
        let declared = Self.modules(of: manifest)
        #expect(Set(Self.map.map(\.name)).count == Self.map.count, "a module has two rows in ModuleMapTests.map")
        // README reads the map bottom up, so a row names only rows above it (and no cycle hides).
        for (index, row) in Self.map.enumerated() {
            for later in Self.map[index...] where (row.imports ?? []).contains(later.name) {
                Issue.record("ModuleMapTests.map: \(row.name) may import \(later.name), whose row is not above it: move \(later.name)'s row up, or break the cycle")
            }
        }
        for target in declared {
            guard let row = Self.map.first(where: { $0.name == target.name }) else {
                Issue.record("Package.swift declares \(target.name) (\(target.path)), which the map lacks: add its row to ModuleMapTests.map (what it is, what it may import) and the line this suite prints to README's Layout")
                continue
            }
            #expect(row.path == target.path, "Package.swift puts \(target.name) at \(target.path), the map at \(row.path): correct the map's row and README's line")
            #expect((row.imports == nil) == (target.kind == .systemLibrary),
                    "\(target.name) is a \(target.kind) in Package.swift: on the map, a system library (c(…)) has no imports and a Swift target (swift(…)) has them")
        }
        for row in Self.map where row.name != Self.extraction.module && !declared.contains(where: { $0.name == row.name }) {
            Issue.record("the map has \(row.name), which Package.swift does not declare: remove its row from ModuleMapTests.map and its line from README's Layout")
        }
        #expect(declared.count >= 25, "Package.swift read as \(declared.count) modules: the parser lost some")
    }

    @Test("every dependency a module declares in Package.swift is an arrow the map draws")
    func manifestDependencies() throws {
        let manifest = try Manifest.load()
        var checked = 0
        for target in Self.modules(of: manifest) {
            guard let row = Self.map.first(where: { $0.name == target.name }) else { continue }
            for dependency in target.dependencies {
                checked += 1
                if let refusal = Self.refusal(of: dependency.name, by: row, in: nil, manifest: manifest) {
                    Issue.record("Package.swift: \(target.name) depends on \(dependency.name). \(refusal)")
                }
            }
        }
        #expect(checked >= 40, "Package.swift read as \(checked) dependencies: the parser lost some")
    }

    @Test("every import in a module's Swift files is an arrow the map draws, and each file exception is still used")
    func sourceImports() throws {
        let manifest = try Manifest.load()
        var checked = 0, usedExceptions = Set<String>()
        for target in Self.modules(of: manifest) where target.kind != .systemLibrary {
            guard let row = Self.map.first(where: { $0.name == target.name }) else { continue }
            for file in try manifest.sources(of: target.name) {
                for found in file.imports {
                    checked += 1
                    if Self.fileExceptions.contains(where: { $0 == (file.path, found.module) }) { usedExceptions.insert(file.path) }
                    if let refusal = Self.refusal(of: found.module, by: row, in: file.path, manifest: manifest) {
                        Issue.record("\(file.path):\(found.line): \(target.name) imports \(found.module). \(refusal)")
                    }
                }
            }
        }
        for exception in Self.fileExceptions where !usedExceptions.contains(exception.file) {
            Issue.record("\(exception.file) no longer imports \(exception.imports): drop its line from ModuleMapTests.fileExceptions, and the Package.swift dependency if no other file needs it")
        }
        #expect(checked >= 400, "the scan found \(checked) imports: it lost some files")
    }

    /// The module's line in README's Layout block.
    static func line(_ row: Module) -> String {
        let column = (map.map(\.path.count).max() ?? 0) + 2
        let start = row.path.padding(toLength: column, withPad: " ", startingAt: 0) + row.role
        guard let imports = row.imports else { return start }
        let excepted = fileExceptions.filter { $0.file.hasPrefix(row.path + "/") }
            .map { "\($0.imports) in \($0.file.dropFirst(row.path.count + 1)) only" }
        let list = imports + excepted
        return start + " — imports " + (list.isEmpty ? "nothing" : list.joined(separator: ", "))
    }

    @Test("README's Layout block gives each declared module the map's line, and no line to a module that is gone")
    func readmeLayout() throws {
        let readme = try String(contentsOf: Manifest.root.appendingPathComponent("README.md"), encoding: .utf8)
        let section = try #require(readme.range(of: "\n## Layout\n"), "README has no ## Layout section")
        let opening = try #require(readme.range(of: "```\n", range: section.upperBound..<readme.endIndex), "README's Layout has no code block")
        let closing = try #require(readme.range(of: "\n```", range: opening.upperBound..<readme.endIndex))
        let lines = readme[opening.upperBound..<closing.lowerBound].components(separatedBy: "\n")
        let declared = Set(Self.modules(of: try Manifest.load()).map(\.name))
        let rows = Self.map.filter { declared.contains($0.name) }
        var wrong = false
        for row in rows {
            let expected = Self.line(row)
            let found = lines.filter { $0.split(separator: " ").first.map(String.init) == row.path }
            if found != [expected] {
                wrong = true
                Issue.record("README's Layout: \(row.name)'s line is \(found.isEmpty ? "missing" : found.map { "\"\($0)\"" }.joined(separator: " and ")); the map's line is:\n\(expected)")
            }
        }
        let order = lines.compactMap { line in rows.first { line.split(separator: " ").first.map(String.init) == $0.path }?.name }
        if order != rows.map(\.name), Set(order) == Set(rows.map(\.name)) {
            wrong = true
            Issue.record("README's Layout lists the modules as \(order.joined(separator: ", ")); the map, bottom up, as \(rows.map(\.name).joined(separator: ", "))")
        }
        let paths = Set(rows.map(\.path))
        for line in lines {
            guard let first = line.split(separator: " ").first.map(String.init),
                  Manifest.matches(#"^(Sources/[\w-]+)/?$"#, in: first).first.map({ !paths.contains($0) }) == true else { continue }
            wrong = true
            Issue.record("README's Layout has a line for \(first), which is no module of Package.swift: remove it, or declare the module and give it a row on the map")
        }
        if wrong {
            Issue.record("README's Layout, each module's line as ModuleMapTests.map draws it (paste these over the module lines; the other lines are free text):\n\(rows.map(Self.line).joined(separator: "\n"))")
        }
    }
}
