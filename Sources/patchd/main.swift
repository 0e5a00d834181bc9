import Foundation
import PatchCore
import PatchRegistry
import PatchPush
import PatchServer

/// patchd: serves every app in a registry over HTTP(S).
/// Options, each also read from an environment variable:
///   --data DIR (HOTPATCH_DATA, ./data)  --keys DIR (HOTPATCH_KEYS, ./keys)
///   --database postgres://… (HOTPATCH_DATABASE): the registry on PostgreSQL instead of --data
///   --listen HOST:PORT (HOTPATCH_LISTEN, 127.0.0.1:8080; [::1]:8080 for IPv6; port 0 picks a free one)
///   --tls-cert FILE --tls-key FILE (HOTPATCH_TLS_CERT, HOTPATCH_TLS_KEY)
///   --threads N (HOTPATCH_THREADS)
///   --trusted-proxy CIDR[,CIDR...] (HOTPATCH_TRUSTED_PROXIES)
///   front-door limits: --max-conns, --max-conns-per-ip, --max-new-conns-per-ip, --header-timeout,
///   --request-timeout, --idle-timeout, --body-budget, --ipv6-prefix (HOTPATCH_MAX_CONNS, …; see `usage`)
///   --push-new-per-network N (HOTPATCH_PUSH_NEW_PER_NETWORK)
///   --upkeep-lease S, --expiry-margin S (HOTPATCH_UPKEEP_LEASE, HOTPATCH_EXPIRY_MARGIN)
let usage = """
    Usage: patchd [--version] [--data DIR | --database postgres://…] [--keys DIR] [--listen HOST:PORT] [--tls-cert FILE --tls-key FILE] [--threads N]
                  [--trusted-proxy CIDR[,CIDR...]] [--max-conns N] [--max-conns-per-ip N] [--max-new-conns-per-ip N] [--header-timeout S]
                  [--request-timeout S] [--idle-timeout S] [--body-budget BYTES] [--ipv6-prefix N]
                  [--report-devices-per-network N] [--report-devices-per-block N] [--report-devices-per-app N]
                  [--report-events-per-network N] [--report-events-per-app N] [--guard-min-blocks N] [--report-queue N] [--push-new-per-network N]
                  [--upkeep-lease S] [--expiry-margin S]
    Serves the apps of a hotpatch registry over HTTP. Each option can also be set with
    HOTPATCH_DATA, HOTPATCH_DATABASE, HOTPATCH_KEYS, HOTPATCH_LISTEN, HOTPATCH_TLS_CERT, HOTPATCH_TLS_KEY, HOTPATCH_THREADS,
    HOTPATCH_TRUSTED_PROXIES, HOTPATCH_MAX_CONNS, HOTPATCH_MAX_CONNS_PER_IP, HOTPATCH_MAX_NEW_CONNS_PER_IP,
    HOTPATCH_HEADER_TIMEOUT, HOTPATCH_REQUEST_TIMEOUT,
    HOTPATCH_IDLE_TIMEOUT, HOTPATCH_BODY_BUDGET, HOTPATCH_IPV6_PREFIX, HOTPATCH_REPORT_DEVICES_PER_NETWORK,
    HOTPATCH_REPORT_DEVICES_PER_BLOCK, HOTPATCH_REPORT_DEVICES_PER_APP, HOTPATCH_REPORT_EVENTS_PER_NETWORK,
    HOTPATCH_REPORT_EVENTS_PER_APP, HOTPATCH_GUARD_MIN_BLOCKS, HOTPATCH_REPORT_QUEUE,
    HOTPATCH_PUSH_NEW_PER_NETWORK, HOTPATCH_UPKEEP_LEASE, HOTPATCH_EXPIRY_MARGIN.
    --database: a PostgreSQL registry that several patchd (and patchctl) share; each instance
    serves a change any of them commits within milliseconds (LISTEN/NOTIFY).
    --trusted-proxy: load balancers whose X-Forwarded-For names the client for the per-IP limits
    (addresses or networks, like 10.0.0.0/8 or fd00::/8); without it the header is ignored.
    They are also exempt from --max-conns-per-ip and --max-new-conns-per-ip.
    --max-conns N            open connections in all (default 10000); at the cap the oldest idle
                             connection is closed to admit a new one
    --max-conns-per-ip N     open connections per client address, IPv6 per network; the /56 and /48
                             around it hold 2x and 8x as many (default 128; 0: no limit)
    --max-new-conns-per-ip N new connections (TLS handshakes) per second per address, bursting to
                             5 s worth; past it 429 and closed (default 50; 0: no limit)
    --header-timeout S       from a request's first byte to the end of its head, and from the
                             accept to the end of the first head, TLS handshake included (default 10)
    --request-timeout S      from a request's first byte to the end of its body (default 60)
    --idle-timeout S         between requests on a keep-alive connection, or a stalled write (default 30)
    --body-budget BYTES      request-body bytes all uploads in flight may hold together; past it
                             uploads get 503 with Retry-After (default 67108864)
    --ipv6-prefix N          IPv6 clients are one client per network of N bits for the per-IP
                             limits (default 64)
    Device reports (docs/SECURITY.md, "Device reports"): per app and hour, at most
    --report-devices-per-network N  new reporting devices per /24 (IPv4) or /48 (IPv6) (default 20)
    --report-devices-per-block N    new reporting devices per /16 or /32 (default 200)
    --report-devices-per-app N      new reporting devices in all (default 20000)
    --report-events-per-network N   events stored per /24 or /48 (default 1000)
    --report-events-per-app N       events stored in all (default 100000)
    --guard-min-blocks N     a guard trips on rollbacks, a staged rollout steps on installs, only
                             from devices in at least N distinct /16 or /32 blocks (default 5)
    --report-queue N         report events queued for counting; past it 503 (default 50000)
    --push-new-per-network N new device tokens per app an IPv4 /24 or IPv6 /48 may register per
                             hour; past it 429 (default 100; 0: no quota)
    --upkeep-lease S         PostgreSQL: the instance running re-signing, guards and pruning renews
                             its lease every min(60, S/3) s; another takes over S s after the last
                             renewal (default 180)
    --expiry-margin S        /healthz answers 200 "degraded" once an app's timestamp expires within
                             S s (default: a quarter of the timestamp lifetime, 21600)
    SIGTERM or SIGINT stop accepting connections, finish in-flight requests and exit 0.

    """

func fail(_ message: String, code: Int32 = 2) -> Never {
    writeLine("patchd: \(message)")
    exit(code)
}

var options: [String: String] = [:]
let environment = ProcessInfo.processInfo.environment
let optionVariables = [("--data", "HOTPATCH_DATA"), ("--database", "HOTPATCH_DATABASE"), ("--keys", "HOTPATCH_KEYS"), ("--listen", "HOTPATCH_LISTEN"),
                       ("--tls-cert", "HOTPATCH_TLS_CERT"), ("--tls-key", "HOTPATCH_TLS_KEY"), ("--threads", "HOTPATCH_THREADS"),
                       ("--trusted-proxy", "HOTPATCH_TRUSTED_PROXIES"), ("--max-conns", "HOTPATCH_MAX_CONNS"),
                       ("--max-conns-per-ip", "HOTPATCH_MAX_CONNS_PER_IP"), ("--max-new-conns-per-ip", "HOTPATCH_MAX_NEW_CONNS_PER_IP"),
                       ("--header-timeout", "HOTPATCH_HEADER_TIMEOUT"), ("--request-timeout", "HOTPATCH_REQUEST_TIMEOUT"),
                       ("--idle-timeout", "HOTPATCH_IDLE_TIMEOUT"), ("--body-budget", "HOTPATCH_BODY_BUDGET"),
                       ("--ipv6-prefix", "HOTPATCH_IPV6_PREFIX"),
                       ("--report-devices-per-network", "HOTPATCH_REPORT_DEVICES_PER_NETWORK"),
                       ("--report-devices-per-block", "HOTPATCH_REPORT_DEVICES_PER_BLOCK"),
                       ("--report-devices-per-app", "HOTPATCH_REPORT_DEVICES_PER_APP"),
                       ("--report-events-per-network", "HOTPATCH_REPORT_EVENTS_PER_NETWORK"),
                       ("--report-events-per-app", "HOTPATCH_REPORT_EVENTS_PER_APP"),
                       ("--guard-min-blocks", "HOTPATCH_GUARD_MIN_BLOCKS"), ("--report-queue", "HOTPATCH_REPORT_QUEUE"),
                       ("--push-new-per-network", "HOTPATCH_PUSH_NEW_PER_NETWORK"),
                       ("--upkeep-lease", "HOTPATCH_UPKEEP_LEASE"), ("--expiry-margin", "HOTPATCH_EXPIRY_MARGIN")]
for (flag, variable) in optionVariables {
    if let value = environment[variable] { options[flag] = value }
}
var words = Array(CommandLine.arguments.dropFirst())
while !words.isEmpty {
    let word = words.removeFirst()
    if word == "--help" || word == "-h" { print(usage, terminator: ""); exit(0) }
    if word == "--version" { print("patchd \(Hotpatch.version)"); exit(0) }
    guard optionVariables.contains(where: { $0.0 == word }) else { fail("unknown option \(word.debugSanitized)\n\(usage)", code: 64) }
    guard !words.isEmpty else { fail("\(word) needs a value", code: 64) }
    options[word] = words.removeFirst()
}

var configuration = HTTPServerConfiguration()
let listen = options["--listen"] ?? "127.0.0.1:8080"
guard let colon = listen.lastIndex(of: ":"), let port = UInt16(listen[listen.index(after: colon)...]) else {
    fail("--listen must be HOST:PORT, got \(listen.debugSanitized)", code: 64)
}
// An IPv6 host is written in brackets, as in a URL: [::1]:8080.
var host = String(listen[..<colon])
if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
configuration.host = host
configuration.port = port
if let threads = options["--threads"] {
    guard let n = Int(threads), (1...256).contains(n) else { fail("--threads must be 1 to 256", code: 64) }
    configuration.threads = n
}
/// An integer option within `range`, or a usage error naming it.
@MainActor func integer(_ flag: String, in range: ClosedRange<Int>) -> Int? {
    guard let raw = options[flag] else { return nil }
    guard let n = Int(raw), range.contains(n) else { fail("\(flag) must be an integer from \(range.lowerBound) to \(range.upperBound)", code: 64) }
    return n
}
if let n = integer("--max-conns", in: 1...1_000_000) { configuration.maxConnections = n }
if let n = integer("--max-conns-per-ip", in: 0...1_000_000) { configuration.maxConnectionsPerIP = n }
if let n = integer("--max-new-conns-per-ip", in: 0...1_000_000) { configuration.maxNewConnectionsPerIPPerSecond = n }
if let n = integer("--header-timeout", in: 1...3600) { configuration.headerTimeout = Double(n) }
if let n = integer("--request-timeout", in: 1...86_400) { configuration.requestTimeout = Double(n) }
if let n = integer("--idle-timeout", in: 1...86_400) { configuration.idleTimeout = Double(n) }
if let n = integer("--body-budget", in: 1...(1 << 40)) { configuration.bodyBudget = n }
let ipv6Prefix = integer("--ipv6-prefix", in: 1...128) ?? 64
configuration.ipv6Prefix = ipv6Prefix

switch (options["--tls-cert"], options["--tls-key"]) {
case (let cert?, let key?):
    guard let certPEM = try? String(contentsOfFile: cert, encoding: .utf8) else { fail("cannot read --tls-cert \(cert)") }
    guard let keyPEM = try? String(contentsOfFile: key, encoding: .utf8) else { fail("cannot read --tls-key \(key)") }
    configuration.tlsCertificatePEM = certPEM
    configuration.tlsKeyPEM = keyPEM
case (nil, nil): break
default: fail("--tls-cert and --tls-key go together", code: 64)
}

// SIGTERM and SIGINT are blocked here, before any thread exists, so every thread inherits
// the mask and the signals stay pending until the main thread takes them (sigwait, at the
// end). Otherwise one could land on an HTTP worker thread and be lost (the stop hung), and
// one arriving during start-up is kept, not lost.
var stopSignals = sigset_t()
sigemptyset(&stopSignals)
for sig in [SIGTERM, SIGINT] { sigaddset(&stopSignals, sig) }
pthread_sigmask(SIG_BLOCK, &stopSignals, nil)

var serviceConfiguration = ServiceConfiguration()
serviceConfiguration.ipv6Prefix = ipv6Prefix
var reportRules = ReportRules()
if let n = integer("--report-devices-per-network", in: 1...100_000_000) { reportRules.devicesPerNetwork = n }
if let n = integer("--report-devices-per-block", in: 1...100_000_000) { reportRules.devicesPerBlock = n }
if let n = integer("--report-devices-per-app", in: 1...100_000_000) { reportRules.devicesPerApp = n }
if let n = integer("--report-events-per-network", in: 1...100_000_000) { reportRules.eventsPerNetwork = n }
if let n = integer("--report-events-per-app", in: 1...100_000_000) { reportRules.eventsPerApp = n }
if let n = integer("--guard-min-blocks", in: 1...100_000) { reportRules.minBlocks = n }
serviceConfiguration.reportRules = reportRules
if let n = integer("--report-queue", in: 1...10_000_000) { serviceConfiguration.reportQueueEvents = n }
if let n = integer("--push-new-per-network", in: 0...1_000_000) { serviceConfiguration.pushNewTokensPerNetworkPerHour = n }
if let n = integer("--upkeep-lease", in: 3...86_400) { serviceConfiguration.upkeepLease = Double(n) }
if let n = integer("--expiry-margin", in: 0...(366 * 86_400)) { serviceConfiguration.expiryMargin = Double(n) }
// Where a guard's halt is pushed (apps with `patchctl apps apns`): Apple's hosts, or the
// test-only HOTPATCH_APNS_URL.
do { serviceConfiguration.apnsEndpoint = try APNsEndpoint.current() } catch { fail("\(error)", code: 64) }
if let proxies = options["--trusted-proxy"] {
    for entry in proxies.split(separator: ",") {
        do { serviceConfiguration.trustedProxies.append(try IPNetwork(entry.trimmingCharacters(in: .whitespaces))) } catch {
            fail("--trusted-proxy: \(error)", code: 64)
        }
    }
    guard !serviceConfiguration.trustedProxies.isEmpty else { fail("--trusted-proxy needs at least one address or network", code: 64) }
    configuration.connectionLimitExempt = serviceConfiguration.trustedProxies
}

if let url = CommandLine.arguments.drop(while: { $0 != "--database" }).dropFirst().first, RegistryDatabase.hasPassword(url) {
    writeLine("patchd: warning: the password in --database is visible to other users of this machine (ps, /proc/PID/cmdline); use ~/.pgpass, PGPASSFILE or HOTPATCH_DATABASE")
}
// Opened once every option is known good: a usage error (exit 64) is told as such, whatever
// the registry.
let registry: Registry
do {
    let database = try RegistryDatabase.resolve(database: options["--database"],
                                                dataDirectory: URL(fileURLWithPath: options["--data"] ?? "data", isDirectory: true))
    // Never a new registry: patchd on a mistyped --data, an emptied file or an empty database
    // would answer /healthz 200 and 404 to every device, and stay in the proxy's rotation.
    registry = try Registry(database: database, keysDirectory: URL(fileURLWithPath: options["--keys"] ?? "keys", isDirectory: true), create: false)
} catch { fail("cannot open the registry: \(error)") }

let service: PatchService
do { service = try PatchService(registry: registry, configuration: serviceConfiguration) } catch { fail("cannot load the registry: \(error)") }

let server: HTTPServer
do { server = try HTTPServer(configuration: configuration, responder: service) } catch { fail("\(error)") }

let upkeep = Upkeep(service: service)

// Written straight to the file descriptor: a pipe-reading supervisor (or test) sees the
// line at once, whatever stdio buffering is in force.
let urlHost = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
writeLine("patchd listening on \(server.scheme)://\(urlHost):\(server.port)", to: STDOUT_FILENO)

// The main thread waits for SIGTERM or SIGINT with sigwait (they are blocked everywhere,
// see above), so draining runs as normal code, and everything that may be inside OpenSSL or
// SQLite is stopped and joined before exit(0). Not a dispatch signal source: on Linux,
// dispatchMain's main thread waits with every signal unblocked, so a signal could land
// there, ignored, and the stop never began.
var received: Int32 = 0
while sigwait(&stopSignals, &received) != 0 {}
writeLine("patchd: draining (signal \(received))")
server.stop(drainTimeout: 10)
upkeep.stop()
// Reports answered 202 and still queued are counted before exit.
service.settleReports(stopping: true)
writeLine("patchd: stopped")
exit(0)
