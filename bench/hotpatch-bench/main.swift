import Foundation
import Locking
import PatchClient
import PatchCore
import PatchSigning
import PatchRegistry

// In-process measurements for `make bench` (bench/bench.py), one JSON object per run on stdout:
//   publish --data D | --database URL --keys K --count N --size BYTES [--encrypted]   publish latency
//   crypto --mb N                                                  hashing / AES-GCM throughput
//   client --server URL --app A --app-version V --root F [--key F] --runs N [--reports] [--only cold|nochange]
//                                                                  PatchClient sync (wall and CPU time)
//   seed --data D --keys K --apps A --versions V --patches P        a large registry
//   revoke-landing --server URL --app A --app-version V --root F --devices N --workers W
//                  --patchctl PATH --token-file F --patch N [--device-prefix P]   revoke → forced sync drops it

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("hotpatch-bench: \(message)\n".utf8))
    exit(2)
}

/// `--name value` pairs and `--flag`s after the command word.
struct Options {
    var values: [String: String] = [:]
    var flags: Set<String> = []

    init(_ words: [String]) {
        var words = words[...]
        while let word = words.popFirst() {
            if word == "--encrypted" || word == "--reports" { flags.insert(word); continue }
            guard let value = words.popFirst() else { fail("\(word) needs a value") }
            values[word] = value
        }
    }

    func string(_ name: String) -> String {
        guard let value = values[name] else { fail("\(name) is required") }
        return value
    }

    func int(_ name: String, _ fallback: Int? = nil) -> Int {
        guard let text = values[name] else {
            guard let fallback else { fail("\(name) is required") }
            return fallback
        }
        guard let value = Int(text) else { fail("\(name) must be an integer") }
        return value
    }
}

let words = Array(CommandLine.arguments.dropFirst())
guard let command = words.first else { fail("usage: hotpatch-bench publish|crypto|client|seed OPTIONS") }
let options = Options(Array(words.dropFirst()))

/// `--database postgres://…` as patchctl and patchd take it, else the SQLite registry under
/// `--data`; both at once is a usage error there too.
func registryDatabase() -> RegistryDatabase {
    guard let url = options.values["--database"] else { return .sqlite(dataDirectory: URL(fileURLWithPath: options.string("--data"))) }
    if options.values["--data"] != nil { fail("--data and --database name two registries: give one") }
    do { return try RegistryDatabase.resolve(database: url, dataDirectory: URL(fileURLWithPath: ".")) } catch { fail("\(error)") }
}

func emit(_ fields: [String: JSON]) { print(JSON.object(fields).canonicalString) }

/// Milliseconds as an integer number of microseconds (canonical JSON has no floats).
func micros(_ seconds: Double) -> JSON { .int(Int64((seconds * 1e6).rounded())) }

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
}

func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
}

func now() -> Double { IPMonotonic.seconds() }

/// The process's CPU time so far (user + sys of all its threads), from getrusage.
func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

enum IPMonotonic {
    static func seconds() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }
}

/// A JSPatch script of exactly `size` bytes (at least 3) in the shape of a large main.js: view
/// controllers of a few overrides and helpers each, whose bodies call Objective-C, then a
/// comment for the rest, so JavaScriptCore parses it (every publish runs the script check,
/// and what a check costs depends on what the script defines: about 200 classes per 100 KB).
func bundle(size: Int, seed: Int) -> [UInt8] {
    var out = Array("require('UITableViewCell, UIColor, HPLogger');\n".utf8)
    out.reserveCapacity(size)
    var n = 0
    while true {
        n += 1
        let block = Array("""
            defineClass('Screen\(n)ViewController : UIViewController', {
              viewDidLoad: function() {
                self.super().viewDidLoad();
                self.view().setBackgroundColor(UIColor.whiteColor());
                HPLogger.log('screen \(n) of build \(seed)');
              },
              tableView_numberOfRowsInSection: function(tableView, section) { return self.items().count(); },
              items: function() { return self.valueForKey('items\(n)'); },
            });

            """.utf8)
        guard out.count + block.count <= size - 3 else { break }
        out += block
    }
    out += Array("//".utf8) + [UInt8](repeating: 0x2d, count: max(0, size - out.count - 2))
    return out
}

switch command {
case "publish":
    let registry = try Registry(database: registryDatabase(), keysDirectory: URL(fileURLWithPath: options.string("--keys")), create: true)
    // Publishes as patchd makes them: a script-check worker waits ready for each.
    registry.scriptChecker.keepsSpare = true
    let encrypted = options.flags.contains("--encrypted")
    let app = try AppName(encrypted ? "bench-enc" : "bench-plain")
    if (try? registry.app(app)) == nil { try registry.createApp(app, encrypted: encrypted, actor: Actor("bench")) }
    let count = options.int("--count", 200)
    let size = options.int("--size", 100 * 1024)
    var times: [Double] = []
    for i in 0..<count {
        let payload = bundle(size: size, seed: i)
        let started = now()
        // Rounds into one registry repeat the same bundles: allowSame, as a re-release would.
        _ = try registry.publish(app: app, appVersion: try AppVersion("2.3"), bundle: payload, allowSame: true, actor: Actor("bench"))
        times.append(now() - started)
    }
    emit(["count": .int(Int64(count)), "size": .int(Int64(size)), "encrypted": .bool(encrypted),
          "median_us": micros(median(times)), "p90_us": micros(percentile(times, 0.9)), "p95_us": micros(percentile(times, 0.95)),
          // Every time, so a caller alternating short runs can take one median over all of them.
          "times_us": .array(times.map(micros))])

case "crypto":
    // openssl speed reuses one buffer; without this, glibc maps and unmaps every 64 MB
    // output afresh and the figure measures ~16,000 page faults rather than the cipher.
    _ = glibcMallopt(-3 /* M_MMAP_THRESHOLD */, 512 << 20)
    _ = glibcMallopt(-1 /* M_TRIM_THRESHOLD */, 1 << 30)
    let megabytes = options.int("--mb", 64)
    let buffer = [UInt8](repeating: 0x61, count: megabytes << 20)
    let key = try SecureRandom.bytes(32)
    func best(_ body: () throws -> Void) rethrows -> Double {
        var fastest = Double.infinity
        for _ in 0..<3 {
            let started = now()
            try body()
            fastest = min(fastest, now() - started)
        }
        return Double(megabytes) / fastest
    }
    let sha = best { _ = Digest.sha256(buffer) }
    let md5 = best { _ = Digest.md5(buffer) }
    let gcm = try best { _ = try AESGCM.seal(buffer, key: key, aad: []) }
    // The same work in 16 KB calls, as `openssl speed -bytes 16384` measures it: a fresh
    // 64 MB output costs ~16,000 page faults, which the one-buffer figure includes.
    let block = [UInt8](repeating: 0x61, count: 16_384)
    let blocks = (megabytes << 20) / block.count
    let gcm16k = try best { for _ in 0..<blocks { _ = try AESGCM.seal(block, key: key, aad: []) } }
    let sha16k = best { for _ in 0..<blocks { _ = Digest.sha256(block) } }
    let md516k = best { for _ in 0..<blocks { _ = Digest.md5(block) } }
    emit(["mb": .int(Int64(megabytes)), "sha256_MBps": .int(Int64(sha)), "md5_MBps": .int(Int64(md5)), "aes256gcm_MBps": .int(Int64(gcm)),
          "sha256_16k_MBps": .int(Int64(sha16k)), "md5_16k_MBps": .int(Int64(md516k)), "aes256gcm_16k_MBps": .int(Int64(gcm16k))])

case "client":
    guard let rootData = FileManager.default.contents(atPath: options.string("--root")) else { fail("cannot read --root") }
    let root = rootData
    let key = try options.values["--key"].map { try ClientConfiguration.contentKey(hexFile: URL(fileURLWithPath: $0)) }
    let runs = options.int("--runs", 20)
    guard let server = URL(string: options.string("--server")) else { fail("bad --server") }
    let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("hotpatch-bench-client-\(getpid())")
    defer { try? FileManager.default.removeItem(at: scratch) }
    func client(cache: URL) throws -> PatchClient {
        var configuration = ClientConfiguration(server: server, app: try AppName(options.string("--app")), appVersion: try AppVersion(options.string("--app-version")),
                                                deviceID: "bench-device", trustedRoot: root, contentKey: key, cacheDirectory: cache)
        configuration.minimumInterval = 0
        // python-tuf, the reference of row 7, sends no device reports: neither does this
        // client unless asked (`--reports`), so the row compares the TUF work alone.
        configuration.reporting = options.flags.contains("--reports")
        return PatchClient(configuration: configuration)
    }
    /// The median wall time of one sync, and the process's CPU time (user + sys, every
    /// thread: the curl queue's and the concurrency pool's too) per sync over all runs.
    func measure(cold: Bool) throws -> (wall: Double, cpu: Double) {
        var times: [Double] = []
        var cpu = 0.0
        let warm = scratch.appendingPathComponent("warm")
        if !cold { _ = try client(cache: warm).syncBlocking(force: true) }
        for i in 0..<runs {
            let cache = cold ? scratch.appendingPathComponent("cold-\(i)") : warm
            let c = try client(cache: cache)
            let cpuStarted = cpuSeconds()
            let started = now()
            let result = c.syncBlocking(force: true)
            times.append(now() - started)
            cpu += cpuSeconds() - cpuStarted
            if case .failed(let error) = result { fail("sync failed: \(error)") }
        }
        return (median(times), cpu / Double(max(1, runs)))
    }
    // `--only cold|nochange` measures one kind (profiling one kind of sync under callgrind).
    let only = options.values["--only"]
    if let only, only != "cold", only != "nochange" { fail("--only takes cold or nochange") }
    var fields: [String: JSON] = ["runs": .int(Int64(runs))]
    if only != "nochange" {
        let cold = try measure(cold: true)
        fields["cold_median_us"] = micros(cold.wall)
        fields["cold_cpu_us"] = micros(cold.cpu)
    }
    if only != "cold" {
        let unchanged = try measure(cold: false)
        fields["nochange_median_us"] = micros(unchanged.wall)
        fields["nochange_cpu_us"] = micros(unchanged.cpu)
    }
    emit(fields)

case "seed":
    let registry = try Registry(dataDirectory: URL(fileURLWithPath: options.string("--data")), keysDirectory: URL(fileURLWithPath: options.string("--keys")),
                                durability: .bulkLoad, create: true)
    let apps = options.int("--apps"), versions = options.int("--versions"), patches = options.int("--patches")
    let started = now()
    for a in 0..<apps {
        let app = try AppName(String(format: "app%04d", a))
        if (try? registry.app(app)) == nil { try registry.createApp(app, encrypted: false, actor: Actor("bench")) }
        for v in 0..<versions {
            for p in 0..<patches {
                _ = try registry.publish(app: app, appVersion: try AppVersion("1.\(v)"), bundle: bundle(size: 512, seed: a * 100_000 + v * 100 + p),
                                         actor: Actor("bench"))
            }
        }
    }
    emit(["apps": .int(Int64(apps)), "patches": .int(Int64(apps * versions * patches)), "seconds": .int(Int64(now() - started))])

case "revoke-landing":
    // N devices (their own caches) install the app version's patch; then `patchctl revoke`
    // runs over the server, and the moment it returns every device syncs with force (as a
    // push would make them), W at a time. Each figure is from just before patchctl starts
    // to the device's sync returning without the revoked patch.
    guard let rootData = FileManager.default.contents(atPath: options.string("--root")) else { fail("cannot read --root") }
    guard let server = URL(string: options.string("--server")) else { fail("bad --server") }
    let devices = options.int("--devices", 1000), workers = options.int("--workers", 64)
    let app = try AppName(options.string("--app")), version = try AppVersion(options.string("--app-version"))
    // Device IDs PREFIX-0…: a second fleet in the same run needs other IDs (the first is inside its interval).
    let prefix = options.values["--device-prefix"] ?? "kill"
    let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("hotpatch-bench-revoke-\(getpid())")
    defer { try? FileManager.default.removeItem(at: scratch) }
    let clients = (0..<devices).map { i -> PatchClient in
        var configuration = ClientConfiguration(server: server, app: app, appVersion: version, deviceID: "\(prefix)-\(i)", trustedRoot: rootData,
                                                cacheDirectory: scratch.appendingPathComponent("d\(i)"))
        configuration.reporting = false
        return PatchClient(configuration: configuration)
    }
    /// Runs `body` for every device on W threads (syncBlocking must not run on Swift concurrency's own).
    func fleet(_ body: @escaping @Sendable (Int) -> Void) {
        let next = Locked(0)
        let group = DispatchGroup()
        for _ in 0..<max(1, workers) {
            group.enter()
            Thread {
                while true {
                    let i = next.withLock { n in defer { n += 1 }; return n }
                    guard i < devices else { break }
                    body(i)
                }
                group.leave()
            }.start()
        }
        group.wait()
    }
    let installed = Locked(0)
    fleet { i in if case .updated = clients[i].syncBlocking(force: true) { installed.withLock { $0 += 1 } } }
    guard installed.withLock({ $0 }) == devices else { fail("only \(installed.withLock { $0 }) of \(devices) devices installed the patch") }
    let revoke = Process()
    revoke.executableURL = URL(fileURLWithPath: options.string("--patchctl"))
    revoke.arguments = ["revoke", "--server", server.absoluteString, "--token-file", options.string("--token-file"), "--app", app.rawValue,
                        "--app-version", version.rawValue, "--patch", options.string("--patch")]
    revoke.standardOutput = FileHandle.nullDevice
    let started = now()
    try revoke.run()
    revoke.waitUntilExit()
    let revoked = now() - started
    guard revoke.terminationStatus == 0 else { fail("patchctl revoke exited \(revoke.terminationStatus)") }
    let revokedNumber = options.int("--patch")
    let times = Locked<[Double]>([])
    let missed = Locked(0)
    fleet { i in
        // Landed: the revoked patch is gone (no patch, or the one before it), whatever the outcome's shape.
        let outcome = clients[i].syncBlocking(force: true)
        let t = IPMonotonic.seconds() - started
        switch outcome {
        case .removed, .updated: if clients[i].currentPatch()?.number != revokedNumber { times.withLock { $0.append(t) }; return }
        default: break
        }
        missed.withLock { $0 += 1 }
    }
    let landed = times.withLock { $0 }
    emit(["devices": .int(Int64(devices)), "workers": .int(Int64(workers)), "landed": .int(Int64(landed.count)), "missed": .int(Int64(missed.withLock { $0 })),
          "revoke_us": micros(revoked), "p50_us": micros(percentile(landed, 0.5)), "p99_us": micros(percentile(landed, 0.99)),
          "max_us": micros(landed.max() ?? 0)])

default:
    fail("unknown command \(command)")
}

/// glibc's mallopt(3): not exported by the Glibc module, so declared by its C name.
@_silgen_name("mallopt")
func glibcMallopt(_ parameter: Int32, _ value: Int32) -> Int32
