import Foundation
import PatchCore

// The project's one HTTP client (`HTTPClient`): libcurl on Linux (HTTPClient+Curl.swift),
// URLSession on Apple platforms (HTTPClient+URLSession.swift). The updater, device reports,
// patchctl's `--server` commands and the APNs provider all go through it, so every answer
// meets the same rules: its body goes into a `DownloadBody`, which alone decides how much is
// accepted; redirects are never followed (a 3xx is the answer); a cancelled task ends the
// transfer; header names come back lower-cased in `FetchHead`.

extension HTTPClient {
    /// What every request of one client obeys. A client keeps its connection alive across
    /// requests, so callers with different needs (APNs, a registry) hold different clients.
    public struct Configuration: Sendable {
        /// Seconds for connecting, and the longest wait for the next byte.
        public var requestTimeout: TimeInterval
        /// Seconds one request may take in all.
        public var resourceTimeout: TimeInterval
        /// Refuse `http://` URLs (APNs' provider API is reached over TLS only).
        public var httpsOnly = false
        /// Refuse an answer that did not come over HTTP/2. HTTP/2 is negotiated in the TLS
        /// handshake (ALPN), so a plain `http://` answer is always refused too.
        public var requireHTTP2 = false
        /// PEM CA certificates to trust instead of the system's (tests' loopback stand-ins).
        /// libcurl only: URLSession trusts the keychain, and a client told to trust a file
        /// refuses every request rather than quietly trusting something else.
        public var caFile: String?
        /// Connect to this address instead of resolving the URL's host (`HOST:PORT:ADDRESS:PORT`,
        /// libcurl's CURLOPT_CONNECT_TO; an IPv6 address in brackets), and through no proxy:
        /// patchd's webhooks connect to the address they checked, so a name that resolves
        /// elsewhere a moment later (DNS rebinding) reaches nothing else. The host still names
        /// the server in TLS and `Host`. libcurl only: URLSession refuses a request with one.
        public var connectTo: String?

        public init(requestTimeout: TimeInterval = 20, resourceTimeout: TimeInterval = 60) {
            self.requestTimeout = requestTimeout
            self.resourceTimeout = resourceTimeout
        }
    }

    /// The instant every transfer of the work under way must be over by: a sync's
    /// `syncTimeout`, bound for the sync's task (`PatchClient.runSync`). A transfer asked for
    /// after it is refused (`.timeout`); one under way is cut when it comes, by the transport
    /// (libcurl's total timeout; a timer on URLSession's task). A task-local instant rather
    /// than a timer that cancels the sync: a sync only ever waits in its transfers (the work
    /// between them is bounded computation and local files), and arming a dispatch timer per
    /// sync woke Dispatch's timer thread every sync, ~9 % of a cold sync's CPU (issue 23).
    @TaskLocal package static var deadline: ContinuousClock.Instant?

    /// Milliseconds a transfer may take: `limit` seconds, or less when the deadline comes
    /// sooner; nil when the deadline has passed.
    static func allowedMilliseconds(_ limit: TimeInterval) -> Int? {
        let own = max(1, Int(limit * 1000))
        guard let deadline else { return own }
        let left = ContinuousClock.now.duration(to: deadline).components
        let milliseconds = left.seconds * 1000 + left.attoseconds / 1_000_000_000_000_000
        return milliseconds > 0 ? min(own, Int(milliseconds)) : nil
    }

    /// `send`, for synchronous command-line code: blocks the calling thread, which must not
    /// be one of Swift concurrency's own (`blockingWait`).
    public func sendBlocking(_ method: String, _ url: URL, headers: [String: String] = [:], body: [UInt8]? = nil,
                             into answer: DownloadBody) throws(FetchError) -> FetchHead {
        let result = blockingWait { () async -> Result<FetchHead, FetchError> in
            do throws(FetchError) {
                return .success(try await self.send(method, url, headers: headers, body: body, into: answer))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// The bytes to send: a method that carries a body gets an empty one when given none, so
    /// the request says `Content-Length: 0` (an HTTP/1.1 server may answer 411 otherwise).
    static func upload(_ method: String, _ body: [UInt8]?) -> [UInt8]? {
        body ?? (["POST", "PUT", "PATCH"].contains(method) ? [] : nil)
    }
}

/// One response header line as libcurl hands it over (`Name: value\r\n`): the name
/// lower-cased, the value without the whitespace around it. Byte by byte, because this runs
/// for every header of every request of a sync (Foundation's `trimmingCharacters(in:)` cost a
/// tenth of a cold sync's instructions).
struct HeaderLine: Equatable {
    let name: String
    let value: String

    init(name: String, value: String) {
        self.name = name
        self.value = value
    }

    init?(_ line: UnsafeRawBufferPointer) {
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > 0 else { return nil }
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A }
        var start = colon + 1, end = line.count
        while start < end, isSpace(line[start]) { start += 1 }
        while end > start, isSpace(line[end - 1]) { end -= 1 }
        // Header names are ASCII tokens; lower-casing A–Z is all `lowercased()` did to them.
        // Written straight into the string's storage: no intermediate array per header.
        let raw = UnsafeRawBufferPointer(rebasing: line[..<colon])
        name = String(unsafeUninitializedCapacity: raw.count) { out in
            for (i, byte) in raw.enumerated() { out[i] = (0x41...0x5A).contains(byte) ? byte | 0x20 : byte }
            return raw.count
        }
        value = String(decoding: UnsafeRawBufferPointer(rebasing: line[start..<end]), as: UTF8.self)
    }
}

