import Foundation
import HTTPTransport
import HotpatchCLI
import PatchCore
import PatchRegistry
import PatchPush
import PatchServer

/// patchd: serves every app in a registry over HTTP(S). Its options are declared once below,
/// in the grammar patchctl's use (HotpatchCLI: `--name VALUE` or `--name=VALUE`), each also
/// read from an environment variable; the declarations print `--help`.
let spec = CommandSpec("", program: "patchd", summary: "patchd \(Hotpatch.version): serves the apps of a hotpatch registry over HTTP(S)", options: [
    Option.value("--data", "DIR", "the registry directory (default ./data)").environment("HOTPATCH_DATA"),
    Option.value("--database", "URL", "a PostgreSQL registry (postgres://…) instead of --data, which several patchd (and patchctl) share; each serves a change any of them commits within milliseconds (LISTEN/NOTIFY)").environment("HOTPATCH_DATABASE"),
    Option.value("--keys", "DIR", "the key directory (default ./keys)").environment("HOTPATCH_KEYS"),
    Option.value("--listen", "HOST:PORT", "where to listen (default 127.0.0.1:8080; [::1]:8080 for IPv6; port 0 picks a free one)").environment("HOTPATCH_LISTEN"),
    Option.value("--tls-cert", "FILE", "serve HTTPS with this certificate chain (PEM), with --tls-key").environment("HOTPATCH_TLS_CERT"),
    Option.value("--tls-key", "FILE", "the certificate's private key (PEM)").environment("HOTPATCH_TLS_KEY"),
    Option.value("--threads", "N", "HTTP worker threads, 1 to 256 (default: one per core, at least 2)").environment("HOTPATCH_THREADS"),
    Option.value("--trusted-proxy", "CIDR[,CIDR...]", "load balancers whose X-Forwarded-For names the client for the per-IP limits (addresses or networks, like 10.0.0.0/8 or fd00::/8); without it the header is ignored. They are also exempt from --max-conns-per-ip and --max-new-conns-per-ip").environment("HOTPATCH_TRUSTED_PROXIES"),
    Option.value("--max-conns", "N", "open connections in all (default 10000); at the cap the connection that made progress longest ago among those idle or stalled (--stall-timeout) is closed to admit a new one").environment("HOTPATCH_MAX_CONNS"),
    Option.value("--stall-timeout", "S", "a connection with a request in flight that has completed no step (head, body, answer) nor moved another KiB for S s is stalled, and may be closed at --max-conns (default 2)").environment("HOTPATCH_STALL_TIMEOUT"),
    Option.value("--max-conns-per-ip", "N", "open connections per client address, IPv6 per network; the /56 and /48 around it hold 2x and 8x as many (default 128; 0: no limit)").environment("HOTPATCH_MAX_CONNS_PER_IP"),
    Option.value("--max-new-conns-per-ip", "N", "new connections (TLS handshakes) per second per address, bursting to 5 s worth; past it 429 and closed (default 50; 0: no limit)").environment("HOTPATCH_MAX_NEW_CONNS_PER_IP"),
    Option.value("--header-timeout", "S", "from a request's first byte to the end of its head, and from the accept to the end of the first head, TLS handshake included (default 10)").environment("HOTPATCH_HEADER_TIMEOUT"),
    Option.value("--request-timeout", "S", "from a request's first byte to the end of its body (default 60)").environment("HOTPATCH_REQUEST_TIMEOUT"),
    Option.value("--anonymous-body-timeout", "S", "from the end of the head to the end of the body, for a request without a token (a device report or registration; default 5)").environment("HOTPATCH_ANONYMOUS_BODY_TIMEOUT"),
    Option.value("--idle-timeout", "S", "between requests on a keep-alive connection, or a stalled write (default 30)").environment("HOTPATCH_IDLE_TIMEOUT"),
    Option.value("--body-budget", "BYTES", "request-body bytes all uploads in flight may hold together; past it uploads get 503 with Retry-After (default 67108864)").environment("HOTPATCH_BODY_BUDGET"),
    Option.value("--token-body-budget", "BYTES", "the part of --body-budget only requests with a token may hold; requests without one share the rest (default: half)").environment("HOTPATCH_TOKEN_BODY_BUDGET"),
    Option.value("--token-body-share", "BYTES", "what one token (with the tokens issued from it) may hold of --token-body-budget; keep it at least the 10 MiB a publish may be (default: half of it)").environment("HOTPATCH_TOKEN_BODY_SHARE"),
    Option.value("--ip-body-share", "BYTES", "what one client address (IPv6: per --ipv6-prefix network) may hold of the bodies without a token (default: a sixteenth of them)").environment("HOTPATCH_IP_BODY_SHARE"),
    Option.value("--network-body-share", "BYTES", "what one IPv4 /24 or IPv6 /48 may hold of the bodies without a token (default: a quarter of them)").environment("HOTPATCH_NETWORK_BODY_SHARE"),
    Option.value("--ipv6-prefix", "N", "IPv6 clients are one client per network of N bits for the per-IP limits (default 64)").environment("HOTPATCH_IPV6_PREFIX"),
    Option.value("--global-ip-rate", "N", "requests a minute per address to what names no app of the registry (tokens, the audit log, /healthz, unknown paths), refusals included; 0: off (default 600)").environment("HOTPATCH_GLOBAL_IP_RATE"),
    // Device reports (docs/SECURITY.md, "Device reports"): per app and hour, at most these.
    Option.value("--report-devices-per-network", "N", "device reports: new reporting devices per app and hour per /24 (IPv4) or /48 (IPv6) (default 20)").environment("HOTPATCH_REPORT_DEVICES_PER_NETWORK"),
    Option.value("--report-devices-per-block", "N", "new reporting devices per app and hour per /16 or /32 (default 200)").environment("HOTPATCH_REPORT_DEVICES_PER_BLOCK"),
    Option.value("--report-devices-per-app", "N", "new reporting devices per app and hour in all (default 20000)").environment("HOTPATCH_REPORT_DEVICES_PER_APP"),
    Option.value("--report-events-per-network", "N", "report events stored per app and hour per /24 or /48 (default 1000)").environment("HOTPATCH_REPORT_EVENTS_PER_NETWORK"),
    Option.value("--report-events-per-app", "N", "report events stored per app and hour in all (default 100000)").environment("HOTPATCH_REPORT_EVENTS_PER_APP"),
    Option.value("--guard-min-blocks", "N", "a guard trips on rollbacks, a staged rollout steps on installs, only from devices in at least N distinct /16 or /32 blocks (default 5)").environment("HOTPATCH_GUARD_MIN_BLOCKS"),
    Option.value("--guard-block-share", "N", "a guard trips only on rollbacks from at least one in N of the blocks the patch's installs came from (default 8)").environment("HOTPATCH_GUARD_BLOCK_SHARE"),
    Option.value("--report-queue", "N", "report events queued for counting; past it 503 (default 50000)").environment("HOTPATCH_REPORT_QUEUE"),
    Option.value("--push-queue", "N", "device-token registrations waiting to be written, each answered once written; past it 503 (default 4096)").environment("HOTPATCH_PUSH_QUEUE"),
    Option.value("--push-new-per-network", "N", "new device tokens per app an IPv4 /24 or IPv6 /48 may register per hour; past it 429 (default 100; 0: no quota)").environment("HOTPATCH_PUSH_NEW_PER_NETWORK"),
    Option.value("--upkeep-lease", "S", "PostgreSQL: the instance running re-signing, guards and pruning renews its lease every min(60, S/3) s; another takes over S s after the last renewal (default 180)").environment("HOTPATCH_UPKEEP_LEASE"),
    Option.value("--expiry-margin", "S", "/healthz answers 200 \"degraded\" once an app's timestamp expires within S s (default: a quarter of the timestamp lifetime, 21600)").environment("HOTPATCH_EXPIRY_MARGIN"),
    // Webhooks (docs/PROTOCOL.md, "Webhooks"): delivered from the registry's outbox by the
    // upkeep lease's holder (every instance on SQLite), one claim per attempt.
    Option.value("--webhook-interval", "S", "seconds between webhook delivery passes (default 1)").environment("HOTPATCH_WEBHOOK_INTERVAL"),
    Option.value("--webhook-timeout", "S", "seconds one webhook attempt may take in all (default 10)").environment("HOTPATCH_WEBHOOK_TIMEOUT"),
    Option.value("--webhook-connect-timeout", "S", "seconds to connect to a webhook receiver (default 5)").environment("HOTPATCH_WEBHOOK_CONNECT_TIMEOUT"),
    Option.value("--webhook-retry-base", "S", "the first retry of a failed attempt waits S to 2S s after it, doubling each time (default 10)").environment("HOTPATCH_WEBHOOK_RETRY_BASE"),
    Option.value("--webhook-retry-cap", "S", "the longest wait between two attempts (default 3600)").environment("HOTPATCH_WEBHOOK_RETRY_CAP"),
    Option.value("--webhook-retry-for", "S", "an event not delivered S s after it was written is given up and counted as failed (default 86400)").environment("HOTPATCH_WEBHOOK_RETRY_FOR"),
    Option.flag("--webhook-deny-private", "refuse webhook URLs whose host is or resolves to a loopback, link-local, private or reserved address, when added and at every delivery (the default when --listen is not a loopback address)"),
    Option.flag("--webhook-allow-private", "allow such webhook URLs (the default when --listen is a loopback address)"),
    Option.value("--expiry-warning", "S", "send the metadata.expiring webhook event once an app's root or targets metadata expires within S s (default 1209600, 14 days)").environment("HOTPATCH_EXPIRY_WARNING"),
    Option.flag("--version", "print the release and exit"),
])

func fail(_ message: String, code: Int32 = 2) -> Never {
    writeLine("patchd: \(message)")
    exit(code)
}

let words = Array(CommandLine.arguments.dropFirst())
if words.contains("--help") || words.contains("-h") {
    print(spec.help + "\nSIGTERM or SIGINT stop accepting connections, finish in-flight requests and exit 0.\n", terminator: "")
    exit(0)
}
let arguments: Arguments
do { arguments = try Arguments(spec: spec, parsing: words, environment: ProcessInfo.processInfo.environment) } catch {
    fail("\(error.message) (see `patchd --help`)", code: error.exitCode)
}
if arguments.flag("--version") { print("patchd \(Hotpatch.version)"); exit(0) }
let options = arguments.values

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
/// An integer option within `range`, or a usage error naming it.
@MainActor func integer(_ flag: String, in range: ClosedRange<Int>) -> Int? {
    do { return try arguments.int(flag, in: range) } catch { fail(error.message, code: error.exitCode) }
}
if let n = integer("--threads", in: 1...256) { configuration.threads = n }
if let n = integer("--max-conns", in: 1...1_000_000) { configuration.maxConnections = n }
if let n = integer("--max-conns-per-ip", in: 0...1_000_000) { configuration.maxConnectionsPerIP = n }
if let n = integer("--max-new-conns-per-ip", in: 0...1_000_000) { configuration.maxNewConnectionsPerIPPerSecond = n }
if let n = integer("--header-timeout", in: 1...3600) { configuration.headerTimeout = Double(n) }
if let n = integer("--request-timeout", in: 1...86_400) { configuration.requestTimeout = Double(n) }
if let n = integer("--idle-timeout", in: 1...86_400) { configuration.idleTimeout = Double(n) }
if let n = integer("--body-budget", in: 1...(1 << 40)) { configuration.bodyBudget = n }
if let n = integer("--token-body-budget", in: 1...(1 << 40)) { configuration.tokenBodyBudget = n }
if let n = integer("--token-body-share", in: 1...(1 << 40)) { configuration.tokenBodyShare = n }
if let n = integer("--ip-body-share", in: 1...(1 << 40)) { configuration.addressBodyShare = n }
if let n = integer("--network-body-share", in: 1...(1 << 40)) { configuration.networkBodyShare = n }
if let n = integer("--anonymous-body-timeout", in: 1...86_400) { configuration.anonymousBodyTimeout = Double(n) }
if let n = integer("--stall-timeout", in: 1...3600) { configuration.stallTimeout = Double(n) }
let ipv6Prefix = integer("--ipv6-prefix", in: 1...128) ?? 64
configuration.ipv6Prefix = ipv6Prefix
// Budgets and shares that contradict each other are a usage error, told before the registry
// is opened.
do { try configuration.validate() } catch { fail("\(error.message) (--body-budget, --token-body-budget and the body shares)", code: 64) }

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
if let n = integer("--global-ip-rate", in: 0...10_000_000) { serviceConfiguration.globalIPRatePerMinute = n }
var reportRules = ReportRules()
if let n = integer("--report-devices-per-network", in: 1...100_000_000) { reportRules.devicesPerNetwork = n }
if let n = integer("--report-devices-per-block", in: 1...100_000_000) { reportRules.devicesPerBlock = n }
if let n = integer("--report-devices-per-app", in: 1...100_000_000) { reportRules.devicesPerApp = n }
if let n = integer("--report-events-per-network", in: 1...100_000_000) { reportRules.eventsPerNetwork = n }
if let n = integer("--report-events-per-app", in: 1...100_000_000) { reportRules.eventsPerApp = n }
if let n = integer("--guard-min-blocks", in: 1...100_000) { reportRules.minBlocks = n }
if let n = integer("--guard-block-share", in: 1...1_000) { reportRules.installBlocksPerRollbackBlock = n }
serviceConfiguration.reportRules = reportRules
if let n = integer("--report-queue", in: 1...10_000_000) { serviceConfiguration.reportQueueEvents = n }
if let n = integer("--push-queue", in: 1...1_000_000) { serviceConfiguration.pushRegistrationQueue = n }
if let n = integer("--push-new-per-network", in: 0...1_000_000) { serviceConfiguration.pushNewTokensPerNetworkPerHour = n }
if let n = integer("--upkeep-lease", in: 3...86_400) { serviceConfiguration.upkeepLease = Double(n) }
if let n = integer("--expiry-margin", in: 0...(366 * 86_400)) { serviceConfiguration.expiryMargin = Double(n) }
if let n = integer("--webhook-interval", in: 1...3600) { serviceConfiguration.webhooks.interval = Double(n) }
if let n = integer("--webhook-timeout", in: 1...300) { serviceConfiguration.webhooks.timeout = Double(n) }
if let n = integer("--webhook-connect-timeout", in: 1...300) { serviceConfiguration.webhooks.connectTimeout = Double(n) }
if let n = integer("--webhook-retry-base", in: 1...86_400) { serviceConfiguration.webhooks.retry.base = Double(n) }
if let n = integer("--webhook-retry-cap", in: 1...86_400) { serviceConfiguration.webhooks.retry.cap = Double(n) }
if let n = integer("--webhook-retry-for", in: 1...(30 * 86_400)) { serviceConfiguration.webhooks.retry.window = Double(n) }
if let n = integer("--expiry-warning", in: 0...(366 * 86_400)) { serviceConfiguration.webhooks.expiryWarning = Double(n) }
if arguments.flag("--webhook-deny-private"), arguments.flag("--webhook-allow-private") {
    fail("--webhook-deny-private and --webhook-allow-private contradict each other", code: 64)
}
// A patchd that listens beyond loopback refuses private destinations unless told otherwise:
// a publisher token must not make it probe the network it runs in.
serviceConfiguration.webhooks.denyPrivate = arguments.flag("--webhook-deny-private")
    || (!arguments.flag("--webhook-allow-private") && !["127.0.0.1", "::1", "localhost"].contains(host) && !host.hasPrefix("127."))
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

// Only a password on the command line is visible to others; $HOTPATCH_DATABASE's is not.
if let url = options["--database"], url != ProcessInfo.processInfo.environment["HOTPATCH_DATABASE"], RegistryDatabase.hasPassword(url) {
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
// A long-lived process checks many scripts: one worker waits ready for the next (issue 45).
registry.scriptChecker.keepsSpare = true

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
// Reports answered 202 and still queued are counted before exit, and registrations whose
// requests the drain gave up on are written rather than cut off mid-transaction.
service.settleReports(stopping: true)
service.settleRegistrations(stopping: true)
writeLine("patchd: stopped")
exit(0)
