#if canImport(CCurl)
import Foundation
import PatchCore
internal import CCurl

/// The libcurl side of `HTTPClient` (HTTPClient.swift): the write callback aborts the
/// transfer the moment the `DownloadBody` refuses a chunk (the TUF "endless data" attack), and
/// so does a Content-Length over its limit; a cancelled task aborts from the progress callback.
/// One easy handle per client keeps the connection alive across requests; transfers run one at
/// a time on the client's queue, so the handle is never used by two threads at once.
public final class HTTPClient: @unchecked Sendable {
    // @unchecked: `handle` is only touched on `queue`.
    public let configuration: Configuration
    private let queue = DispatchQueue(label: "hotpatch.http-client")
    private let handle: UnsafeMutableRawPointer?  // CURL*; nil when libcurl cannot start

    /// Once per process, before the first handle: PushSender opens its clients on several
    /// threads at once, and libcurl's implicit global init (in `curl_easy_init`) is not
    /// thread-safe. A static `let` is initialised once, whichever thread gets there first.
    private static let globalInit: CURLcode = hp_curl_global_init()

    public init(_ configuration: Configuration = Configuration()) {
        self.configuration = configuration
        handle = HTTPClient.globalInit == CURLE_OK ? curl_easy_init() : nil
    }

    deinit { if let handle { curl_easy_cleanup(handle) } }

    /// One request: `method` (GET, POST, PUT, DELETE…) to `url` with `headers` and `body`,
    /// the answer's body into `answer`. Stopped by `answer`'s cap, it returns the head: the
    /// caller reads the cut-off from `answer.isOverLimit`.
    public func send(_ method: String, _ url: URL, headers: [String: String] = [:], body: [UInt8]? = nil,
                     into answer: DownloadBody) async throws(FetchError) -> FetchHead {
        let transfer = Transfer(body: answer)
        let upload = HTTPClient.upload(method, body)
        let result: Result<FetchHead, FetchError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                queue.async { continuation.resume(returning: self.perform(method, url, headers: headers, upload: upload, transfer: transfer)) }
            }
        } onCancel: {
            transfer.cancel()
        }
        return try result.get()
    }

    private func perform(_ method: String, _ url: URL, headers: [String: String], upload: [UInt8]?, transfer: Transfer) -> Result<FetchHead, FetchError> {
        guard let handle else { return .failure(.network("libcurl cannot be initialised")) }
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
        _ = hp_curl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0)
        _ = hp_curl_setopt_long(handle, CURLOPT_NOSIGNAL, 1)
        _ = hp_curl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT, seconds)
        // The idle timeout: abort when under 1 byte/s for requestTimeout seconds.
        _ = hp_curl_setopt_long(handle, CURLOPT_LOW_SPEED_LIMIT, 1)
        _ = hp_curl_setopt_long(handle, CURLOPT_LOW_SPEED_TIME, seconds)
        _ = hp_curl_setopt_long(handle, CURLOPT_TIMEOUT_MS, max(1, Int(configuration.resourceTimeout * 1000)))
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

/// The state of one transfer, reached from the C callbacks through their context pointer.
private final class Transfer: @unchecked Sendable {
    // @unchecked: `headers` is only touched by curl's callbacks on the client's queue,
    // `cancelled` under `lock`, and `body` guards itself.
    let body: DownloadBody
    var headers: [String: String] = [:]
    private let lock = NSLock()
    private var cancelled = false

    init(body: DownloadBody) { self.body = body }

    func cancel() {
        lock.lock()
        cancelled = true
        lock.unlock()
    }

    var isCancelled: Bool {
        lock.lock()
        defer { lock.unlock() }
        return cancelled
    }
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
    let line = String(decoding: UnsafeRawBufferPointer(start: data, count: length), as: UTF8.self)
    if line.hasPrefix("HTTP/") {
        transfer.headers = [:]
    } else if let colon = line.firstIndex(of: ":") {
        let name = line[..<colon].lowercased()
        let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespacesAndNewlines)
        transfer.headers[name] = value
        // A declared length over the cap ends the transfer before any body byte is read.
        if name == "content-length", let declared = Int64(value), !transfer.body.announce(length: declared) { return 0 }
    }
    return length
}

private let checkCancelled: hp_curl_progress_callback = { context, _, _, _, _ in
    Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue().isCancelled ? 1 : 0
}
#endif
