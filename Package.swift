// swift-tools-version:6.0
import Foundation
import PackageDescription

// Every file of console/ but its Swift file, each compiled into the WebConsole module as bytes
// (`.embedInCode`), so adding a file to the console needs no line here. Unreadable, the list is
// empty and console/WebConsole.swift, which names each file's bytes, does not compile.
let consoleFiles: [Resource] = ((try? FileManager.default.contentsOfDirectory(atPath: Context.packageDirectory + "/console")) ?? [])
    .filter { !$0.hasPrefix(".") && !$0.hasSuffix(".swift") }.sorted().map { .embedInCode($0) }

// Only the toolchain and C libraries from Debian packages: no Swift package can be fetched
// on the machines this is built on, so every C dependency is a system-library target.
let package = Package(
    name: "hotpatch",
    // iOS: apps link the PatchClient product (PatchCore + PatchClient, and the PatchClientObjC
    // façade), which links no OpenSSL there: every crypto operation a device does goes through
    // PatchCore's VerificationCrypto seam, CryptoKit and Security.framework on Apple platforms,
    // OpenSSL (CCrypto) on Linux only. Key generation, signing and key import are PatchSigning's,
    // on OpenSSL alone, for the registry side (built on Linux). Nothing here is compiled for
    // Apple platforms on the Linux machines this is built on (README, "iOS").
    platforms: [.macOS(.v14), .iOS(.v15)],
    products: [
        .library(name: "PatchCore", targets: ["PatchCore"]),
        .library(name: "PatchRegistry", targets: ["PatchRegistry"]),
        .library(name: "PatchClient", targets: ["PatchClient", "PatchClientObjC"]),
        .library(name: "PatchSigning", targets: ["PatchSigning"]),
        .executable(name: "patchctl", targets: ["patchctl"]),
        .executable(name: "patchd", targets: ["patchd"]),
        .executable(name: "patchcheck", targets: ["patchcheck"]),
    ],
    targets: [
        .systemLibrary(name: "CCrypto", path: "Sources/CCrypto", pkgConfig: "libcrypto",
                       providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CSQLite3", path: "Sources/CSQLite3", pkgConfig: "sqlite3",
                       providers: [.apt(["libsqlite3-dev"])]),
        // patchd's own HTTP/1.1 transport: epoll, sockets and OpenSSL's libssl for HTTPS.
        .systemLibrary(name: "CNetwork", path: "Sources/CNetwork", pkgConfig: "libssl",
                       providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CZip", path: "Sources/CZip", pkgConfig: "libzip",
                       providers: [.apt(["libzip-dev"])]),
        .systemLibrary(name: "CPostgres", path: "Sources/CPostgres", pkgConfig: "libpq",
                       providers: [.apt(["libpq-dev"])]),
        // The one lock (`Locked`): Mutex on Linux, NSLock on Apple platforms (iOS 15 has no Mutex).
        // No module of ours below it: every module may stand on it (ModuleMapTests).
        .target(name: "Locking"),
        // JSON (values, the parser, canonical bytes), the readable-text rule and ValidationError:
        // what bytes on a wire decode to. Foundation only; PatchCore re-exports it.
        .target(name: "WireFormat"),
        // What a device needs: TUF verification, digests, AES-GCM open, JSON, the patch layout.
        .target(name: "PatchCore", dependencies: ["Locking", "WireFormat", .target(name: "CCrypto", condition: .when(platforms: [.linux]))]),
        // What only the registry needs: key generation, signing, key import, sealing, HMAC.
        .target(name: "PatchSigning", dependencies: ["PatchCore", "CCrypto"]),
        // Every operation of patchd's HTTP API (id, method, path, token scope, the patchctl
        // commands that call it): the server, patchctl and the console share it; an app does not.
        .target(name: "PatchAPI", dependencies: ["PatchCore"]),
        // The one option grammar of patchctl and patchd: declarations that parse and print help.
        .target(name: "HotpatchCLI", dependencies: ["PatchCore"]),
        // A PostgreSQL connection (libpq) that knows nothing of patches: the second registry
        // backend of issue 13 stands on it (docs/POSTGRES.md).
        .target(name: "Postgres", dependencies: ["CPostgres"]),
        // JavaScriptCore's C API (WebKitGTK's build of it): the engine family iOS runs JSPatch
        // scripts in, for the script check (issue 45). Only the worker links it.
        .systemLibrary(name: "CJavaScriptCore", path: "Sources/CJavaScriptCore", pkgConfig: "javascriptcoregtk-4.1",
                       providers: [.apt(["libjavascriptcoregtk-4.1-dev"])]),
        .systemLibrary(name: "CProcess", path: "Sources/CProcess"),
        // The script check's worker: one process per check, under CPU, memory and time limits,
        // evaluating a script against the recording JSPatch runtime. No Foundation: it starts
        // for every check.
        // Optimised in every configuration: a name or a script can be megabytes, and the test
        // build's unoptimised byte loops would spend the script's CPU limit on them.
        .executableTarget(name: "patchcheck", dependencies: ["CJavaScriptCore"], swiftSettings: [.unsafeFlags(["-O"])]),
        // The publisher's side of the script check: starts the worker, reads what the script
        // did, checks it against the app's native manifest. Never linked by the client library.
        .target(name: "PatchCheck", dependencies: ["PatchCore", "Locking", "CProcess"]),
        .target(name: "PatchRegistry", dependencies: ["PatchCore", "PatchAPI", "PatchPush", "Locking", "PatchSigning", "PatchCheck", "CSQLite3", "CZip", "Postgres"]),
        // The web console's files, compiled in by SwiftPM (console/WebConsole.swift lists them):
        // console/ is their one copy, and patchd serves them from its own binary.
        .target(name: "WebConsole", path: "console", resources: consoleFiles),
        // patchd's HTTP/1.1 transport, held to nginx's standard: epoll loops, TLS (libssl), the
        // RFC 9112 parser, the HTTP types, per-address limits. It knows no registry, token or
        // TUF file, so it can be built, fuzzed and read alone; PatchServer answers through it.
        // Its release build also makes its functions' bodies available to PatchServer
        // (cross-module optimization): what the check path calls here on every request (header
        // lookups, the response types) is inlined there as when both were one module.
        .target(name: "HTTPTransport", dependencies: ["WireFormat", "Locking", "CNetwork"],
                swiftSettings: [.unsafeFlags(["-enforce-exclusivity=unchecked", "-cross-module-optimization"], .when(configuration: .release))]),
        // patchd's release build drops exclusivity's runtime checks (a begin/end pair per access
        // to a class's stored property the compiler cannot prove alone: 8 % of a check path
        // request's instructions, docs/BENCHMARKS.md). The static checks stay, and every test
        // build (debug) keeps the runtime ones, so a conflicting access traps in `make test`.
        // Not on the targets apps link: a package with unsafe flags cannot be depended on.
        .target(name: "PatchServer", dependencies: ["PatchCore", "PatchAPI", "PatchRegistry", "PatchCheck", "PatchPush", "WebConsole", "HTTPTransport", "Locking"],
                swiftSettings: [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]),
        .systemLibrary(name: "CCurl", path: "Sources/CCurl", pkgConfig: "libcurl",
                       providers: [.apt(["libcurl4-openssl-dev"])]),
        // The project's one HTTP client (HTTPClient): the device library, patchctl's --server
        // commands, APNs and webhooks all send through it, and none of them through another's
        // module. libcurl on Linux: swift-corelibs-foundation's URLSession adds milliseconds
        // of thread hand-offs per request; Apple platforms keep URLSession.
        .target(name: "HTTPClientKit", dependencies: ["PatchCore", "Locking", .target(name: "CCurl", condition: .when(platforms: [.linux]))]),
        .target(name: "PatchClient", dependencies: ["PatchCore", "HTTPClientKit", "Locking"]),
        // The Objective-C face of PatchClient (HPPatchClient) for an Objective-C AppDelegate;
        // every file is `#if canImport(ObjectiveC) && canImport(UIKit)`, empty on Linux.
        .target(name: "PatchClientObjC", dependencies: ["PatchClient"]),
        // Delivery (issue 15, issue 47): APNs pushes (ES256 tokens, HTTP/2) and webhooks through
        // HTTPClientKit, for patchctl's --notify and patchd's guards and upkeep. It knows no
        // storage: what a round reads and writes comes through `PushStore`, which the registry
        // implements, and the registry stores its vocabulary (tokens, APNs identities, deliveries).
        .target(name: "PatchPush", dependencies: ["PatchCore", "PatchSigning", "HTTPClientKit", "Locking"]),
        .executableTarget(name: "patchctl", dependencies: ["HotpatchCLI", "PatchCore", "PatchAPI", "HTTPClientKit", "Locking", "PatchSigning", "PatchRegistry", "PatchCheck", "PatchClient", "PatchPush"]),
        .executableTarget(name: "patchd", dependencies: ["HotpatchCLI", "PatchServer", "PatchRegistry", "PatchCore", "PatchPush"]),
        // In-process measurements for `make bench`; lives with the rest of the benchmarks.
        .executableTarget(name: "hotpatch-bench", dependencies: ["PatchClient", "Locking", "PatchRegistry", "PatchCore", "PatchSigning"],
                          path: "bench/hotpatch-bench"),
        .testTarget(name: "PatchCoreTests", dependencies: ["PatchCore", "PatchAPI", "PatchSigning", "PatchCheck"],
                    resources: [.copy("Fixtures")]),
        // Against the cluster `make test` starts (scripts/pg-test-cluster.sh).
        .testTarget(name: "PostgresTests", dependencies: ["Postgres"]),
        // Runs the real worker (.build/…/patchcheck, built with the tests) on real scripts.
        .testTarget(name: "PatchCheckTests", dependencies: ["PatchCheck", "PatchCore"]),
        // Maps a test's data directory to its registry: SQLite, or PostgreSQL in its own schema
        // when HOTPATCH_TEST_REGISTRY=postgres (`make test-swift` runs the suites below both ways).
        .target(name: "HotpatchTestSupport", dependencies: ["PatchRegistry", "PatchCore", "PatchSigning", "Postgres"], path: "Tests/Support"),
        .testTarget(name: "PatchRegistryTests", dependencies: ["PatchRegistry", "PatchAPI", "PatchPush", "PatchCheck", "PatchCore", "PatchSigning", "HotpatchTestSupport"]),
        .testTarget(name: "PatchPushTests", dependencies: ["PatchPush", "HTTPClientKit", "PatchRegistry", "PatchCore", "PatchSigning"]),
        .testTarget(name: "PatchctlTests", dependencies: ["HotpatchCLI", "PatchCore", "PatchSigning", "patchctl", "HotpatchTestSupport"]),
        // patchctl: the content key file is read as `patchctl apps create --encrypt` writes it.
        .testTarget(name: "PatchClientTests", dependencies: ["PatchClient", "HTTPClientKit", "PatchServer", "HTTPTransport", "PatchRegistry", "PatchCore", "PatchSigning", "patchctl", "HotpatchTestSupport"]),
        .testTarget(name: "JSPatchTests", dependencies: ["PatchServer", "HTTPTransport", "PatchRegistry", "PatchCore", "PatchSigning", "HotpatchTestSupport"]),
        .testTarget(name: "PatchServerTests", dependencies: ["PatchServer", "PatchAPI", "HTTPTransport", "Locking", "PatchRegistry", "PatchCore", "PatchSigning", "patchd", "patchctl", "HotpatchTestSupport", "Postgres"]),
    ],
    swiftLanguageModes: [.v6]
)

// libFuzzer targets (docs/SECURITY.md, "Fuzzing"; `make fuzz`). Declared only when HOTPATCH_FUZZ=1,
// because they link only with `-sanitize=fuzzer`, which the normal build and `swift test` lack.
if Context.environment["HOTPATCH_FUZZ"] == "1" {
    func harness(_ name: String, _ dependencies: [Target.Dependency]) -> Target {
        .executableTarget(name: name, dependencies: dependencies + ["FuzzSupport"], path: "fuzz/\(name)")
    }
    package.targets += [
        .systemLibrary(name: "CLibFuzzer", path: "fuzz/CLibFuzzer"),
        .target(name: "FuzzSupport", dependencies: ["CLibFuzzer"], path: "fuzz/FuzzSupport"),
        harness("FuzzJSON", ["PatchCore"]),
        harness("FuzzTUF", ["PatchCore", "PatchSigning"]),
        harness("FuzzIdentifiers", ["PatchCore"]),
        harness("FuzzRouter", ["PatchServer", "HTTPTransport", "PatchRegistry", "PatchCore", "PatchSigning"]),
        harness("FuzzBundle", ["PatchCore", "PatchSigning"]),
        harness("FuzzHTTPHead", ["HTTPTransport"]),
    ]
}

// The Apple-only client code compiled and run on Linux (docs/IOS.md, "What is checked here";
// `make test-apple-shaped`): PatchClient over swift-corelibs-foundation's URLSession instead of
// libcurl, PatchCore's CryptoKit backend against test-only `CryptoKit` and `Security` modules
// over OpenSSL, and the Objective-C face's Swift half against a test-only `UIKit`. Declared only
// when HOTPATCH_APPLE_SHAPED=1 and only on a Linux host, where no module of those names exists:
// on a Mac they would shadow Apple's. Nothing here is reached by the PatchClient product as
// Apple builds it (ClientModuleGraphTests).
#if os(Linux)
if Context.environment["HOTPATCH_APPLE_SHAPED"] == "1" {
    func target(_ name: String) -> Target? { package.targets.first { $0.name == name } }
    func shim(_ name: String, _ dependencies: [Target.Dependency]) -> Target {
        .target(name: name, dependencies: dependencies, path: "Tests/AppleShaped/\(name)")
    }
    // Security's stand-in verifies through the CryptoKit stand-in's one OpenSSL key owner.
    package.targets += [
        shim("CryptoKit", ["CCrypto"]),
        shim("Security", ["CryptoKit"]),
        shim("UIKit", []),
    ]
    target("PatchCore")?.dependencies += ["CryptoKit", "Security"]
    // URLSession (HTTPClient+URLSession.swift) instead of libcurl: PatchCore alone.
    target("HTTPClientKit")?.dependencies = ["PatchCore", "Locking"]
    target("PatchClientObjC")?.dependencies += ["UIKit"]
    // Locked's NSLock backend, the one iOS runs, instead of Linux's Mutex.
    target("Locking")?.swiftSettings = [.define("HOTPATCH_APPLE_SHAPED")]
    target("PatchClientTests")?.dependencies += ["PatchClientObjC"]
    // Only the suites this configuration runs are built, and not the benchmark (a few minutes
    // less on 2 cores).
    let run: Set = ["PatchCoreTests", "PatchClientTests"]
    package.targets.removeAll { ($0.type == .test && !run.contains($0.name)) || $0.name == "hotpatch-bench" }
}
#endif
