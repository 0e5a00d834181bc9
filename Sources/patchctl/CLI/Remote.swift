import Foundation
import HTTPClientKit
import HotpatchCLI
import PatchAPI
import PatchCore

/// A patchd server for the commands that work remotely (`--server URL` or `HOTPATCH_SERVER`,
/// with the token from `--token-file FILE` or `HOTPATCH_TOKEN`; see `Token`).
struct Remote {
    let base: URL
    let token: String?
    /// Where `token` came from (`--token-file FILE`, `$HOTPATCH_TOKEN`), for a 401's message.
    var tokenSource: String? = nil

    static let options: [Option] = [
        .value("--server", "URL", "act on a patchd server instead of the local registry (or $HOTPATCH_SERVER)"),
        .value("--token-file", "FILE", "file holding the bearer token for --server; use this or $HOTPATCH_TOKEN"),
        .value("--token", "TOKEN", "the token itself: other users of this machine can read it (ps, /proc); avoid"),
    ]

    /// nil when the command should act on the local registry.
    static func from(_ arguments: Arguments, environment: [String: String] = ProcessInfo.processInfo.environment) throws(CLIError) -> Remote? {
        var configured = arguments.value("--server") ?? environment["HOTPATCH_SERVER"]
        // Last, hotpatch.json's `server`: read only when nothing else names one.
        if configured == nil { configured = try ProjectFile.current.get()?.server }
        guard let server = configured else { return nil }
        let base = try url(server)
        let token = try Token.resolve(arguments, environment: environment)
        return Remote(base: base, token: token?.token, tokenSource: token?.source)
    }

    static func url(_ text: String) throws(CLIError) -> URL {
        guard let url = URL(string: text), let scheme = url.scheme, ["http", "https"].contains(scheme), url.host != nil else {
            throw .usage("--server must be an http:// or https:// URL, got \(text.debugSanitized)")
        }
        return url
    }

    struct Response {
        let status: Int
        let headers: [String: String]
        let body: [UInt8]
    }

    /// Tries of one request, at most, when the server answers 429 or 503.
    static let maxTries = 3
    /// Seconds spent waiting between those tries, at most, in all.
    static let maxRetryWait = 30

    /// One request, synchronously; a 429 or 503 is tried again after its `Retry-After`
    /// (1 s without one), at most `maxTries` times and `maxRetryWait` seconds of waiting in
    /// all. patchd answers both before it changes anything (a busy registry rolls back; the
    /// limits refuse from the head), so a publish is never applied twice. Transport failures
    /// are "could not run" (exit 2).
    /// `operation` with its path parameters `values` (the operation table builds the URL).
    func send(_ operation: APIOperation, _ values: [String: String] = [:], query: [String: String] = [:], headers: [String: String] = [:],
              body: [UInt8]? = nil, timeout: TimeInterval = 30) throws(CLIError) -> Response {
        var waited = 0
        for attempt in 1... {
            let response = try sendOnce(operation.method, operation.target(values, query: query), headers: headers, body: body, timeout: timeout)
            guard response.status == 429 || response.status == 503, attempt < Remote.maxTries else { return response }
            let delay = Remote.retryDelay(response.headers["retry-after"])
            guard let delay, waited + delay <= Remote.maxRetryWait else { return response }
            Output.error("the server answered \(response.status); trying again in \(delay) s (try \(attempt + 1) of \(Remote.maxTries))")
            if delay > 0 { sleep(UInt32(delay)) }
            waited += delay
        }
        fatalError("unreachable: the loop returns")
    }

    /// Whole seconds to wait for a `Retry-After` value, read as PatchClient reads it
    /// (`RetryAfter`: delay seconds or an HTTP-date); 1 when absent, nil (do not retry) when
    /// unreadable.
    static func retryDelay(_ header: String?, now: Date = Date()) -> Int? {
        guard let header else { return 1 }
        guard let seconds = RetryAfter.seconds(header, now: now) else { return nil }
        return seconds >= Double(Int.max / 4) ? Int.max / 2 : Int(seconds.rounded(.up))
    }

    /// The most of an answer's body kept: well over any listing or audit page patchd sends
    /// (a bundle is at most 10 MiB, `Registry.maxBundleSize`), yet a bound on what a wrong or
    /// hostile `--server` can make patchctl hold.
    static let maxAnswer = 64 << 20

    /// `target`: the path and query, already encoded (`Operation.target`). `timeout` bounds
    /// connecting and each wait for the next byte; a whole request may take up to an hour (a
    /// publish over a slow link).
    private func sendOnce(_ method: String, _ target: String, headers extra: [String: String], body: [UInt8]?,
                          timeout: TimeInterval) throws(CLIError) -> Response {
        var prefix = base.absoluteString
        while prefix.hasSuffix("/") { prefix.removeLast() }
        guard let url = URL(string: prefix + target) else { throw .usage("cannot build a URL for \(target.pathSanitized)") }
        var headers = extra
        if let token { headers["Authorization"] = "Bearer \(token)" }
        if body != nil { headers["Content-Type"] = "application/octet-stream" }
        let client = HTTPClient(HTTPClient.Configuration(requestTimeout: timeout, resourceTimeout: max(timeout, 3600)))
        let answer = DownloadBody(limit: Remote.maxAnswer)
        let head: FetchHead
        do { head = try client.sendBlocking(method, url, headers: headers, body: body, into: answer) } catch {
            throw .failed("cannot reach \(base.absoluteString): \(error.reason)")
        }
        if answer.isOverLimit { throw .failed("the server's answer is over \(Remote.maxAnswer >> 20) MiB; refused") }
        return Response(status: head.status, headers: head.headers, body: answer.received)
    }

    /// Sends and returns the JSON body of a 2xx answer; any other answer becomes the
    /// server's own error message.
    func json(_ operation: APIOperation, _ values: [String: String] = [:], query: [String: String] = [:], headers: [String: String] = [:],
              body: [UInt8]? = nil) throws(CLIError) -> JSON {
        let answer = try bytes(operation, values, query: query, headers: headers, body: body)
        guard let parsed = try? JSONParser.parse(answer) else { throw .failed("server sent a body that is not JSON") }
        return parsed
    }

    /// Sends and returns the body of a 2xx answer as it came (a script's text); any other
    /// answer becomes the server's own error message.
    func bytes(_ operation: APIOperation, _ values: [String: String] = [:], query: [String: String] = [:], headers: [String: String] = [:],
               body: [UInt8]? = nil) throws(CLIError) -> [UInt8] {
        try answer(try send(operation, values, query: query, headers: headers, body: body))
    }

    /// The body of a 2xx answer; any other answer becomes the server's own error message,
    /// with what to do about it where patchctl knows: a 401 says whether a token was sent and
    /// how to pass one, a 404 for an unknown app names the nearest app the token may read.
    func answer(_ response: Response) throws(CLIError) -> [UInt8] {
        guard (200..<300).contains(response.status) else {
            let message = (try? JSONParser.parse(response.body))?["error"]?["message"]?.stringValue ?? "HTTP \(response.status)"
            if response.status == 404, let app = AppSuggestion.unknownAppName(in: message) {
                // Asked only now, once the server has said no: an extra request on every
                // command would cost each one a round trip to save a typo's.
                let known = (try? json(.listApps))?.arrayValue?.compactMap { $0["app"]?.stringValue }
                // Listed, yet unknown to what patchd serves: an app made a moment ago, which
                // patchd picks up within a second. The server's own words say it best.
                if known?.contains(app) != true {
                    throw AppSuggestion.unknownApp(app, known: known, place: base.absoluteString, refusal: "server refused (404): ")
                }
            }
            if response.status == 401 { throw .failed("server refused (401): \(message); \(unauthorizedHint)") }
            throw .failed("server refused (\(response.status)): \(message)")
        }
        return response.body
    }

    /// What a 401 means for this command: no token sent, or the one sent is not (or no longer) known.
    private var unauthorizedHint: String {
        let how = "pass one with --token-file FILE (a file holding the token `patchctl tokens create` printed) or $HOTPATCH_TOKEN"
        guard let tokenSource else { return "no token was sent: \(how)" }
        return "the token from \(tokenSource) was sent and \(base.absoluteString) does not know it (mistyped, revoked, or another server's): \(how)"
    }
}
