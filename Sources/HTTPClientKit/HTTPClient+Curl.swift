#if canImport(CCurl)
import Foundation
import Locking
import PatchCore
internal import CCurl

/// The libcurl side of `HTTPClient` (HTTPClient.swift): the write callback aborts the
/// transfer the moment the `DownloadBody` refuses a chunk (the TUF "endless data" attack), and
/// so does a Content-Length over its limit; a cancelled task aborts from the progress callback,
/// and the sync's deadline (`HTTPClient.deadline`) bounds the request's total time.
/// One easy handle per client, used by one transfer at a time (its lock): a transfer runs on
/// the client's queue, or on the calling thread when that is a blocked caller's `LentThread`
/// (`PatchClient.syncBlocking`), which saves the queue's two thread wake-ups per request.
/// Connections (and DNS answers) live in the process's `CurlShare`, so a new client to the
/// same server reuses an idle connection an earlier one left (a PatchClient per sync opens one TCP connection per process, not one per sync). A
/// client that requires HTTP/2 (APNs) keeps its connections to itself: it multiplexes its
/// own streams, and libcurl's easy interface does not multiplex across handles.
public final class HTTPClient: Sendable {
    public let configuration: Configuration
    private let queue = DispatchQueue(label: "hotpatch.http-client")
    /// nil when libcurl cannot start. Never replaced, but reached only inside the lock, which a
    /// transfer holds from its options to its last callback: libcurl lets one transfer at a
    /// time use an easy handle.
    private let handle: Locked<EasyHandle?>
    /// Whether `handle` came from `CurlHandles` (on the process's share) and goes back there.
    private let pooled: Bool

    /// Once per process, before the first handle: PushSender opens its clients on several
    /// threads at once, and libcurl's implicit global init (in `curl_easy_init`) is not
    /// thread-safe. A static `let` is initialised once, whichever thread gets there first.
    static let globalInit: CURLcode = hp_curl_global_init()
    /// CURLOPT_MAXCONNECTS: how many connections the process's share keeps.
    static let maxCachedConnections = 256

    public init(_ configuration: Configuration = Configuration()) {
        self.configuration = configuration
        let pooled = !configuration.requireHTTP2 && CurlShare.process.handle != nil
        self.pooled = pooled
        handle = Locked(pooled ? CurlHandles.process.take() : EasyHandle(share: nil))
    }

    // A handle not handed on is cleaned up as it goes (EasyHandle's deinit).
    deinit {
        if pooled, let handle = handle.withLock({ $0 }) { CurlHandles.process.give(handle) }
    }

    /// One request: `method` (GET, POST, PUT, DELETE…) to `url` with `headers` and `body`,
    /// the answer's body into `answer`. Stopped by `answer`'s cap, it returns the head: the
    /// caller reads the cut-off from `answer.isOverLimit`.
    public func send(_ method: String, _ url: URL, headers: [String: String] = [:], body: [UInt8]? = nil,
                     into answer: DownloadBody) async throws(FetchError) -> FetchHead {
        // Read here, in the caller's task: the queue's thread does not see task-locals.
        guard let milliseconds = HTTPClient.allowedMilliseconds(configuration.resourceTimeout) else { throw .timeout }
        let transfer = Transfer(body: answer, milliseconds: milliseconds)
        let upload = HTTPClient.upload(method, body)
        let result: Result<FetchHead, FetchError> = await withTaskCancellationHandler {
            // A lent thread is the blocked caller's own: the transfer may block it. A pool
            // thread must not block on the network, so it hands the transfer to the queue.
            if onLentThread() { return self.performLocked(method, url, headers: headers, upload: upload, transfer: transfer) }
            return await withCheckedContinuation { continuation in
                queue.async { continuation.resume(returning: self.performLocked(method, url, headers: headers, upload: upload, transfer: transfer)) }
            }
        } onCancel: {
            transfer.cancel()
        }
        return try result.get()
    }

    private func performLocked(_ method: String, _ url: URL, headers: [String: String], upload: [UInt8]?, transfer: Transfer) -> Result<FetchHead, FetchError> {
        handle.withLock { handle in perform(on: handle, method, url, headers: headers, upload: upload, transfer: transfer) }
    }

    private func perform(on easy: EasyHandle?, _ method: String, _ url: URL, headers: [String: String], upload: [UInt8]?,
                         transfer: Transfer) -> Result<FetchHead, FetchError> {
        guard let handle = easy?.pointer else { return .failure(.network("libcurl cannot be initialised")) }
        if transfer.isCancelled { return .failure(.timeout) }
        curl_easy_reset(handle)  // options only: the connection cache stays
        var list: UnsafeMutablePointer<curl_slist>?
        for (name, value) in headers { list = curl_slist_append(list, "\(name): \(value)") }
        // No `Expect: 100-continue` round trip before a body: bodies are sent once, whole.
        if upload != nil { list = curl_slist_append(list, "Expect:") }
        defer { curl_slist_free_all(list) }
        let context = Unmanaged.passUnretained(transfer).toOpaque()
        let seconds = max(1, Int(configuration.requestTimeout.rounded(.up)))
        _ = url.absoluteString.withCString { hp_curl_setopt_string(handle, CURLOPT_URL, $0) }
        _ = hp_curl_setopt_string(handle, CURLOPT_PROTOCOLS_STR, configuration.httpsOnly ? "https" : "http,https")
        if configuration.requireHTTP2 { _ = hp_curl_use_http2(handle) }
        if let caFile = configuration.caFile { _ = caFile.withCString { hp_curl_setopt_string(handle, CURLOPT_CAINFO, $0) } }
        var connectTo: UnsafeMutablePointer<curl_slist>?
        defer { curl_slist_free_all(connectTo) }
        if let pinned = configuration.connectTo {
            connectTo = curl_slist_append(nil, pinned)
            _ = hp_curl_setopt_slist(handle, CURLOPT_CONNECT_TO, connectTo)
            _ = hp_curl_setopt_string(handle, CURLOPT_NOPROXY, "*")
        }
        _ = hp_curl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0)
        _ = hp_curl_setopt_long(handle, CURLOPT_NOSIGNAL, 1)
        // The connections kept (past that, the oldest idle one is closed): with the share it
        // bounds the whole process's, and libcurl's default of 5 would churn as soon as a few
        // clients to different servers run at once. Idle ones also go after 118 s unused
        // (libcurl's CURLOPT_MAXAGE_CONN), or when found dead.
        _ = hp_curl_setopt_long(handle, CURLOPT_MAXCONNECTS, HTTPClient.maxCachedConnections)
        _ = hp_curl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT, seconds)
        // The idle timeout: abort when under 1 byte/s for requestTimeout seconds.
        _ = hp_curl_setopt_long(handle, CURLOPT_LOW_SPEED_LIMIT, 1)
        _ = hp_curl_setopt_long(handle, CURLOPT_LOW_SPEED_TIME, seconds)
        // The whole request: resourceTimeout, or what is left of the sync's deadline.
        _ = hp_curl_setopt_long(handle, CURLOPT_TIMEOUT_MS, transfer.milliseconds)
        _ = hp_curl_setopt_slist(handle, CURLOPT_HTTPHEADER, list)
        if let upload {
            // The size first, so COPYPOSTFIELDS copies that many bytes rather than up to a NUL.
            _ = hp_curl_setopt_long(handle, CURLOPT_POSTFIELDSIZE, upload.count)
            var bytes = upload.map { CChar(bitPattern: $0) }
            bytes.append(0)  // never read past the size; keeps an empty body a valid pointer
            _ = bytes.withUnsafeBufferPointer { hp_curl_setopt_string(handle, CURLOPT_COPYPOSTFIELDS, $0.baseAddress) }
        }
        // HEAD has no body to wait for; any other method is the request line's word, with
        // POSTFIELDS (above) supplying the body whatever the method.
        if method == "HEAD" {
            _ = hp_curl_setopt_long(handle, CURLOPT_NOBODY, 1)
        } else if method != (upload == nil ? "GET" : "POST") {
            _ = method.withCString { hp_curl_setopt_string(handle, CURLOPT_CUSTOMREQUEST, $0) }
        }
        _ = hp_curl_set_write(handle, writeBody, context)
        _ = hp_curl_set_header(handle, readHeader, context)
        _ = hp_curl_set_progress(handle, checkCancelled, context)
        let code = curl_easy_perform(handle)
        let head = FetchHead(status: Int(hp_curl_response_code(handle)), headers: transfer.headers)
        // An answer came, over the wrong protocol: refused before anyone reads it.
        if configuration.requireHTTP2, head.status != 0, hp_curl_http_version(handle) != Int(CURL_HTTP_VERSION_2_0) {
            return .failure(.network("the host did not speak HTTP/2"))
        }
        // Stopped by the body's cap: the caller reads that from the body, not from us.
        if transfer.body.isOverLimit { return .success(head) }
        if transfer.isCancelled { return .failure(.timeout) }
        switch code {
        case CURLE_OK:
            return .success(head)
        case CURLE_OPERATION_TIMEDOUT:
            return .failure(.timeout)
        default:
            return .failure(.network(String(cString: curl_easy_strerror(code))))
        }
    }
}

/// Easy handles on the process's share, between clients: a client takes one and gives it
/// back as it goes, so a client made for one sync does not pay for libcurl's set-up and
/// tear-down of a handle each time (curl_easy_init, the socketpair of the multi handle its
/// first transfer makes, curl_easy_cleanup: about a dozen system calls and 30 k instructions
/// of a cold sync, issue 23). What a handle keeps between clients is what curl_easy_reset
/// keeps, and each request resets it anyway: no option of one client reaches the next. At
/// most `kept` wait; more are cleaned up.
final class CurlHandles: Sendable {
    static let process = CurlHandles()
    static let kept = 8
    /// Each on the share.
    private let idle = Locked<[EasyHandle]>([])

    init() {}

    /// Handles waiting (tests).
    var idleCount: Int { idle.withLock { $0.count } }

    /// An idle handle, or a new one on the share; nil when libcurl cannot start.
    func take() -> EasyHandle? {
        if let handle = idle.withLock({ $0.popLast() }) { return handle }
        guard let share = CurlShare.process.handle else { return nil }
        return EasyHandle(share: share)
    }

    /// `handle` waits for the next client, or, with `kept` waiting already, is cleaned up as
    /// the caller lets it go.
    func give(_ handle: EasyHandle) {
        curl_easy_reset(handle.pointer)
        idle.withLock { idle in
            if idle.count < CurlHandles.kept { idle.append(handle) }
        }
    }
}

/// One libcurl easy handle (CURL*), owned here and cleaned up in `deinit`.
final class EasyHandle: @unchecked Sendable {
    // @unchecked: the pointer never changes, and the handle moves between owners (a client,
    // the idle ones of `CurlHandles`), each reaching it only inside its lock; libcurl's rule,
    // one transfer at a time per handle, is kept by the client's (HTTPClient.handle).
    let pointer: UnsafeMutableRawPointer

    /// nil when libcurl cannot start. On `share` (CURLSH*) when given: set once, since
    /// curl_easy_reset (each request, and on return to `CurlHandles`) keeps the share, as it
    /// keeps connections.
    init?(share: UnsafeMutableRawPointer?) {
        guard HTTPClient.globalInit == CURLE_OK, let pointer = curl_easy_init() else { return nil }
        if let share { _ = hp_curl_set_share(pointer, share) }
        self.pointer = pointer
    }

    deinit { curl_easy_cleanup(pointer) }
}

/// The process's libcurl share handle: the connection cache and the DNS cache every client
/// (but HTTP/2 ones) uses, so connections outlive the client that opened them. A static: it
/// lives as long as the process, and so outlives every easy handle that uses it.
final class CurlShare: @unchecked Sendable {
    // @unchecked: set once in init; libcurl guards the share itself through `locks`.
    static let process = CurlShare()

    /// CURLSH*; nil when libcurl cannot start or the share cannot be set up (clients then
    /// keep their own connections, as before).
    let handle: UnsafeMutableRawPointer?
    private let locks = ShareLocks()

    private init() {
        guard HTTPClient.globalInit == CURLE_OK, let share = curl_share_init() else {
            handle = nil
            return
        }
        let context = Unmanaged.passUnretained(locks).toOpaque()
        guard hp_curl_share_set_locks(share, lockShare, unlockShare, context) == CURLSHE_OK,
              hp_curl_share_data(share, CURL_LOCK_DATA_CONNECT) == CURLSHE_OK,
              hp_curl_share_data(share, CURL_LOCK_DATA_DNS) == CURLSHE_OK else {
            curl_share_cleanup(share)
            handle = nil
            return
        }
        handle = share
    }

    // Before `locks` goes: cleaning up takes the share's own lock.
    deinit { if let handle { curl_share_cleanup(handle) } }
}

/// One mutex per kind of shared data, which libcurl's lock callbacks take from whichever
/// thread runs a transfer; they reach them through the share's context pointer, this object.
/// It owns the mutexes and frees them in `deinit`. pthread mutexes rather than `Locked`:
/// libcurl locks and unlocks in two separate callbacks, which a scoped `withLock` cannot
/// span, and what they guard is libcurl's own connection and DNS caches, not Swift state.
private final class ShareLocks: @unchecked Sendable {
    // @unchecked: the mutexes are only used through pthread calls.
    private static let kinds = Int(CURL_LOCK_DATA_LAST.rawValue)
    private let mutexes: UnsafeMutablePointer<pthread_mutex_t>

    init() {
        mutexes = .allocate(capacity: Self.kinds)
        for kind in 0..<Self.kinds { pthread_mutex_init(mutexes + kind, nil) }
    }

    deinit {
        for kind in 0..<Self.kinds { pthread_mutex_destroy(mutexes + kind) }
        mutexes.deallocate()
    }

    /// The mutex for one kind of data (a kind past the known ones gets the SHARE one).
    func mutex(_ data: curl_lock_data) -> UnsafeMutablePointer<pthread_mutex_t> {
        let kind = Int(data.rawValue)
        return mutexes + (kind < Self.kinds ? kind : Int(CURL_LOCK_DATA_SHARE.rawValue))
    }
}

private let lockShare: hp_curl_lock_callback = { _, data, _, context in
    pthread_mutex_lock(Unmanaged<ShareLocks>.fromOpaque(context!).takeUnretainedValue().mutex(data))
}

private let unlockShare: hp_curl_unlock_callback = { _, data, context in
    pthread_mutex_unlock(Unmanaged<ShareLocks>.fromOpaque(context!).takeUnretainedValue().mutex(data))
}

/// The state of one transfer, reached from the C callbacks through their context pointer.
private final class Transfer: @unchecked Sendable {
    // @unchecked: `headers` is only touched by curl's callbacks, during the transfer;
    // `cancelled` and `body` guard themselves.
    let body: DownloadBody
    /// How long the request may take in all (CURLOPT_TIMEOUT_MS).
    let milliseconds: Int
    var headers: [String: String] = [:]
    /// Set by the task's cancellation handler, read by the progress callback.
    private let cancelled = Locked(false)

    init(body: DownloadBody, milliseconds: Int) {
        self.body = body
        self.milliseconds = milliseconds
    }

    func cancel() { cancelled.withLock { $0 = true } }

    var isCancelled: Bool { cancelled.withLock { $0 } }
}

/// Appends body bytes; returning less than given makes libcurl abort (CURLE_WRITE_ERROR).
private let writeBody: hp_curl_data_callback = { data, size, count, context in
    let transfer = Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue()
    let length = size * count
    guard length > 0, let data else { return length }
    return transfer.body.append(UnsafeRawBufferPointer(start: data, count: length)) ? length : 0
}

/// One header line per call; a status line (a new response, e.g. after 100 Continue) starts over.
private let readHeader: hp_curl_data_callback = { data, size, count, context in
    let transfer = Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue()
    let length = size * count
    guard let data else { return length }
    let bytes = UnsafeRawBufferPointer(start: data, count: length)
    if bytes.starts(with: "HTTP/".utf8) {
        transfer.headers = [:]
    } else if let header = HeaderLine(bytes) {
        transfer.headers[header.name] = header.value
        // A declared length over the cap ends the transfer before any body byte is read.
        if header.name == "content-length", let declared = Int64(header.value), !transfer.body.announce(length: declared) { return 0 }
    }
    return length
}

private let checkCancelled: hp_curl_progress_callback = { context, _, _, _, _ in
    Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue().isCancelled ? 1 : 0
}
#endif
