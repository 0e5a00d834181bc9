#if canImport(CCurl)
import Foundation
import PatchCore
internal import CCurl

/// One HTTP GET on libcurl (Linux) into a `DownloadBody`, which alone decides how much is
/// accepted: the write callback aborts the transfer the moment the body refuses a chunk (the
/// TUF "endless data" attack), and so does a Content-Length over its limit. Redirects are
/// never followed, and a cancelled task (the sync deadline) aborts from the progress callback. One easy handle per client keeps the connection
/// alive across a sync's requests; transfers run one at a time on the fetcher's queue, so
/// the handle is never used by two threads at once.
final class HTTPFetcher: @unchecked Sendable {
    // @unchecked: `handle` is only touched on `queue`.
    private let requestTimeout: TimeInterval
    private let resourceTimeout: TimeInterval
    private let queue = DispatchQueue(label: "hotpatch.client.http")
    private let handle: UnsafeMutableRawPointer  // CURL*

    init(requestTimeout: TimeInterval, resourceTimeout: TimeInterval) {
        self.requestTimeout = requestTimeout
        self.resourceTimeout = resourceTimeout
        guard let handle = curl_easy_init() else { fatalError("curl_easy_init failed: libcurl is unusable") }
        self.handle = handle
    }

    deinit { curl_easy_cleanup(handle) }

    func get(_ url: URL, headers: [String: String] = [:], into body: DownloadBody) async throws(FetchError) -> FetchHead {
        try await send(url, headers: headers, upload: nil, into: body)
    }

    /// A POST of `upload` (device reports), answered into `body` like a GET.
    func post(_ url: URL, headers: [String: String] = [:], upload: [UInt8], into body: DownloadBody) async throws(FetchError) -> FetchHead {
        try await send(url, headers: headers, upload: upload, into: body)
    }

    private func send(_ url: URL, headers: [String: String], upload: [UInt8]?, into body: DownloadBody) async throws(FetchError) -> FetchHead {
        let transfer = Transfer(body: body)
        let result: Result<FetchHead, FetchError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                queue.async { continuation.resume(returning: self.perform(url, headers: headers, upload: upload, transfer: transfer)) }
            }
        } onCancel: {
            transfer.cancel()
        }
        return try result.get()
    }

    private func perform(_ url: URL, headers: [String: String], upload: [UInt8]?, transfer: Transfer) -> Result<FetchHead, FetchError> {
        if transfer.isCancelled { return .failure(.timeout) }
        curl_easy_reset(handle)  // options only: the connection cache stays
        var list: UnsafeMutablePointer<curl_slist>?
        for (name, value) in headers { list = curl_slist_append(list, "\(name): \(value)") }
        // No `Expect: 100-continue` round trip before a body: a report is small and sent once.
        if upload != nil { list = curl_slist_append(list, "Expect:") }
        defer { curl_slist_free_all(list) }
        let context = Unmanaged.passUnretained(transfer).toOpaque()
        let seconds = max(1, Int(requestTimeout.rounded(.up)))
        _ = url.absoluteString.withCString { hp_curl_setopt_string(handle, CURLOPT_URL, $0) }
        _ = hp_curl_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "http,https")
        _ = hp_curl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0)
        _ = hp_curl_setopt_long(handle, CURLOPT_NOSIGNAL, 1)
        _ = hp_curl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT, seconds)
        // The idle timeout: abort when under 1 byte/s for requestTimeout seconds.
        _ = hp_curl_setopt_long(handle, CURLOPT_LOW_SPEED_LIMIT, 1)
        _ = hp_curl_setopt_long(handle, CURLOPT_LOW_SPEED_TIME, seconds)
        _ = hp_curl_setopt_long(handle, CURLOPT_TIMEOUT_MS, max(1, Int(resourceTimeout * 1000)))
        _ = hp_curl_setopt_slist(handle, CURLOPT_HTTPHEADER, list)
        if let upload {
            // The size first, so COPYPOSTFIELDS copies that many bytes rather than up to a NUL.
            _ = hp_curl_setopt_long(handle, CURLOPT_POSTFIELDSIZE, upload.count)
            var bytes = upload.map { CChar(bitPattern: $0) }
            bytes.append(0)  // never read past the size; keeps an empty body a valid pointer
            _ = bytes.withUnsafeBufferPointer { hp_curl_setopt_string(handle, CURLOPT_COPYPOSTFIELDS, $0.baseAddress) }
        }
        _ = hp_curl_set_write(handle, writeBody, context)
        _ = hp_curl_set_header(handle, readHeader, context)
        _ = hp_curl_set_progress(handle, checkCancelled, context)
        let code = curl_easy_perform(handle)
        let head = FetchHead(status: Int(hp_curl_response_code(handle)), headers: transfer.headers)
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
    // @unchecked: `headers` is only touched by curl's callbacks on the fetcher's queue,
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
