#if !canImport(CCurl)
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Locking
import PatchCore

/// The URLSession side of `HTTPClient` (HTTPClient.swift): the transfer is cancelled the
/// moment the `DownloadBody` refuses a chunk or a declared length (the TUF "endless data"
/// attack), and redirects are never followed (a server may not send the client to another host).
public final class HTTPClient: @unchecked Sendable {
    // @unchecked: URLSession is documented thread-safe; the session and router never change.
    public let configuration: Configuration

    /// One session for the client's lifetime, so connections are reused across requests
    /// (the five or so of a sync; and creating a session is costly).
    private let session: URLSession
    private let router = TaskRouter()

    public init(_ configuration: Configuration = Configuration()) {
        self.configuration = configuration
        let settings = URLSessionConfiguration.ephemeral
        settings.timeoutIntervalForRequest = configuration.requestTimeout
        settings.timeoutIntervalForResource = configuration.resourceTimeout
        settings.requestCachePolicy = .reloadIgnoringLocalCacheData
        settings.urlCache = nil
        session = URLSession(configuration: settings, delegate: router, delegateQueue: nil)
    }

    deinit { session.invalidateAndCancel() }

    /// One request: `method` (GET, POST, PUT, DELETE…) to `url` with `headers` and `body`,
    /// the answer's body into `answer`. Stopped by `answer`'s cap, it returns the head: the
    /// caller reads the cut-off from `answer.isOverLimit`.
    public func send(_ method: String, _ url: URL, headers: [String: String] = [:], body: [UInt8]? = nil,
                     into answer: DownloadBody) async throws(FetchError) -> FetchHead {
        // URLSession has no per-session CA file: refused, so a test's stand-in is never
        // reached with the system's trust instead (nor production with a test's).
        if let caFile = configuration.caFile {
            throw .network("a CA file (\(caFile)) cannot be trusted through URLSession; trust the certificate in the keychain instead")
        }
        if configuration.connectTo != nil { throw .network("URLSession cannot connect to a given address (connectTo)") }
        if configuration.httpsOnly, url.scheme?.lowercased() != "https" { throw .network("\(url.absoluteString) is not an https:// URL") }
        guard let milliseconds = HTTPClient.allowedMilliseconds(configuration.resourceTimeout) else { throw .timeout }
        var request = URLRequest(url: url)
        request.httpMethod = method
        if let upload = HTTPClient.upload(method, body) { request.httpBody = Data(upload) }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let download = CappedDownload(body: answer, requireHTTP2: configuration.requireHTTP2)
        let task = session.dataTask(with: request)
        router.register(download, for: task)
        // Within a sync, what is left of its deadline (the session's resource timeout is one
        // figure for every request, and bounds the others).
        let expiry = DispatchWorkItem { download.abort(.failure(.timeout)) }
        if HTTPClient.deadline != nil {
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(milliseconds), execute: expiry)
        }
        defer {
            expiry.cancel()
            router.remove(task)
        }
        // Cancelling the task (the sync's deadline) answers at once; the transfer is torn down
        // behind it.
        let result: Result<FetchHead, FetchError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                download.start(task, continuation: continuation)
            }
        } onCancel: {
            download.abort(.failure(.timeout))
        }
        return try result.get()
    }
}

/// The session's delegate: hands each callback to the download of its task.
private final class TaskRouter: NSObject, URLSessionDataDelegate, Sendable {
    /// By task identifier: requests register from their tasks, callbacks read on the
    /// session's delegate queue.
    private let downloads = Locked<[Int: CappedDownload]>([:])

    func register(_ download: CappedDownload, for task: URLSessionTask) {
        let id = task.taskIdentifier
        downloads.withLock { $0[id] = download }
    }

    func remove(_ task: URLSessionTask) {
        let id = task.taskIdentifier
        downloads.withLock { $0[id] = nil }
    }

    private func download(_ task: URLSessionTask) -> CappedDownload? {
        let id = task.taskIdentifier
        return downloads.withLock { $0[id] }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
        guard let download = download(dataTask) else { return completionHandler(.cancel) }
        download.urlSession(session, dataTask: dataTask, didReceive: response, completionHandler: completionHandler)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        download(dataTask)?.urlSession(session, dataTask: dataTask, didReceive: data)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void) {
        completionHandler(nil)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didFinishCollecting metrics: URLSessionTaskMetrics) {
        download(task)?.urlSession(session, task: task, didFinishCollecting: metrics)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        download(task)?.urlSession(session, task: task, didCompleteWithError: error)
    }
}

/// Feeds one response body into its `DownloadBody`. Callbacks arrive on the session's serial
/// delegate queue, but an abort comes from the caller's task or the deadline's timer: the
/// lock keeps the continuation from being resumed twice.
private final class CappedDownload: Sendable {
    private let body: DownloadBody
    private let requireHTTP2: Bool
    private let state = Locked(State())

    private struct State {
        var response: HTTPURLResponse?
        /// ALPN's name of the protocol the answer came over ("h2", "http/1.1"), from the metrics.
        var protocolName: String?
        var continuation: CheckedContinuation<Result<FetchHead, FetchError>, Never>?
        var task: URLSessionDataTask?
        /// Set once the outcome is decided early (cap exceeded, cancelled): later callbacks are ignored.
        var aborted: Result<FetchHead, FetchError>?
    }

    init(body: DownloadBody, requireHTTP2: Bool) {
        self.body = body
        self.requireHTTP2 = requireHTTP2
    }

    func start(_ task: URLSessionDataTask, continuation: CheckedContinuation<Result<FetchHead, FetchError>, Never>) {
        let aborted = state.withLock { state -> Result<FetchHead, FetchError>? in
            if let aborted = state.aborted { return aborted }
            state.continuation = continuation
            state.task = task
            return nil
        }
        if let aborted {
            continuation.resume(returning: aborted)
            return
        }
        task.resume()
    }

    /// Ends the download now with `outcome`: the caller gets its answer at once instead of
    /// waiting for the transfer to notice the cancel (with an endless body it may not).
    func abort(_ outcome: Result<FetchHead, FetchError>) {
        let task = state.withLock { state in
            if state.aborted == nil { state.aborted = outcome }
            return state.task
        }
        task?.cancel()
        finish(outcome)
    }

    /// Stopped by the body's cap: the updater reads that from the body.
    private func abortOverLimit() {
        let status = state.withLock { $0.response?.statusCode ?? 0 }
        abort(.success(FetchHead(status: status)))
    }

    private func finish(_ result: Result<FetchHead, FetchError>) {
        let continuation = state.withLock { $0.continuation.take() }
        continuation?.resume(returning: result)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
        let http = response as? HTTPURLResponse
        state.withLock { $0.response = http }
        if let declared = http?.expectedContentLength, declared >= 0, !body.announce(length: declared) {
            completionHandler(.cancel)
            abortOverLimit()
            return
        }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        if state.withLock({ $0.aborted != nil }) { return }
        if !data.withUnsafeBytes({ body.append($0) }) { abortOverLimit() }
    }

    /// URLSession hands over a task's metrics before its completion, so the protocol is
    /// known when `didCompleteWithError` decides.
    func urlSession(_ session: URLSession, task: URLSessionTask, didFinishCollecting metrics: URLSessionTaskMetrics) {
        let name = metrics.transactionMetrics.last?.networkProtocolName
        state.withLock { $0.protocolName = name }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        let (aborted, response, protocolName) = state.withLock { ($0.aborted, $0.response, $0.protocolName) }
        let url = task.originalRequest?.url?.absoluteString ?? "?"
        if aborted != nil {
            return  // already answered
        } else if let error = error as? URLError {
            finish(.failure(error.code == .timedOut ? .timeout : .network(error.localizedDescription)))
        } else if let error {
            finish(.failure(.network(error.localizedDescription)))
        } else if requireHTTP2, response != nil, protocolName != "h2" {
            finish(.failure(.network("the host did not speak HTTP/2")))
        } else if let response {
            var headers: [String: String] = [:]
            for (key, value) in response.allHeaderFields { headers[String(describing: key).lowercased()] = String(describing: value) }
            finish(.success(FetchHead(status: response.statusCode, headers: headers)))
        } else {
            finish(.failure(.network("no response from \(url)")))
        }
    }
}
#endif
