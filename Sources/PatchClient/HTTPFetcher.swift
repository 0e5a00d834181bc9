#if !canImport(CCurl)
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import PatchCore

/// One HTTP GET into a `DownloadBody`, which alone decides how much is accepted: the
/// transfer is cancelled the moment the body refuses a chunk or a declared length (the TUF
/// "endless data" attack), and redirects are never followed (a server may not send the
/// client to another host).
final class HTTPFetcher: @unchecked Sendable {
    // @unchecked: URLSession is documented thread-safe; the session and router never change.

    /// One session for the client's lifetime, so connections are reused across the five
    /// or so requests of a sync (and creating a session is costly on Linux).
    private let session: URLSession
    private let router = TaskRouter()

    init(requestTimeout: TimeInterval, resourceTimeout: TimeInterval) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = requestTimeout
        configuration.timeoutIntervalForResource = resourceTimeout
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        session = URLSession(configuration: configuration, delegate: router, delegateQueue: nil)
    }

    deinit { session.invalidateAndCancel() }

    func get(_ url: URL, headers: [String: String] = [:], into body: DownloadBody) async throws(FetchError) -> FetchHead {
        try await send(URLRequest(url: url), headers: headers, into: body)
    }

    /// A POST of `upload` (device reports), answered into `body` like a GET.
    func post(_ url: URL, headers: [String: String] = [:], upload: [UInt8], into body: DownloadBody) async throws(FetchError) -> FetchHead {
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.httpBody = Data(upload)
        return try await send(request, headers: headers, into: body)
    }

    private func send(_ request: URLRequest, headers: [String: String], into body: DownloadBody) async throws(FetchError) -> FetchHead {
        var request = request
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let download = CappedDownload(body: body)
        let task = session.dataTask(with: request)
        router.register(download, for: task)
        defer { router.remove(task) }
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
private final class TaskRouter: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var downloads: [Int: CappedDownload] = [:]

    func register(_ download: CappedDownload, for task: URLSessionTask) {
        lock.lock()
        downloads[task.taskIdentifier] = download
        lock.unlock()
    }

    func remove(_ task: URLSessionTask) {
        lock.lock()
        downloads[task.taskIdentifier] = nil
        lock.unlock()
    }

    private func download(_ task: URLSessionTask) -> CappedDownload? {
        lock.lock()
        defer { lock.unlock() }
        return downloads[task.taskIdentifier]
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

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        download(task)?.urlSession(session, task: task, didCompleteWithError: error)
    }
}

/// Feeds one response body into its `DownloadBody`. Callbacks arrive on the session's serial
/// delegate queue; the lock guards against the continuation being resumed twice.
private final class CappedDownload: @unchecked Sendable {
    private let body: DownloadBody
    private let lock = NSLock()
    private var response: HTTPURLResponse?
    private var continuation: CheckedContinuation<Result<FetchHead, FetchError>, Never>?
    private var task: URLSessionDataTask?
    /// Set once the outcome is decided early (cap exceeded, cancelled): later callbacks are ignored.
    private var aborted: Result<FetchHead, FetchError>?

    init(body: DownloadBody) { self.body = body }

    func start(_ task: URLSessionDataTask, continuation: CheckedContinuation<Result<FetchHead, FetchError>, Never>) {
        lock.lock()
        if let aborted {
            lock.unlock()
            continuation.resume(returning: aborted)
            return
        }
        self.continuation = continuation
        self.task = task
        lock.unlock()
        task.resume()
    }

    /// Ends the download now with `outcome`: the caller gets its answer at once instead of
    /// waiting for the transfer to notice the cancel (with an endless body it may not).
    func abort(_ outcome: Result<FetchHead, FetchError>) {
        lock.lock()
        if aborted == nil { aborted = outcome }
        let task = self.task
        lock.unlock()
        task?.cancel()
        finish(outcome)
    }

    /// Stopped by the body's cap: the updater reads that from the body.
    private func abortOverLimit() {
        lock.lock()
        let status = response?.statusCode ?? 0
        lock.unlock()
        abort(.success(FetchHead(status: status)))
    }

    private func finish(_ result: Result<FetchHead, FetchError>) {
        lock.lock()
        let continuation = self.continuation
        self.continuation = nil
        lock.unlock()
        continuation?.resume(returning: result)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
        let http = response as? HTTPURLResponse
        lock.lock()
        self.response = http
        lock.unlock()
        if let declared = http?.expectedContentLength, declared >= 0, !body.announce(length: declared) {
            completionHandler(.cancel)
            abortOverLimit()
            return
        }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        lock.lock()
        let done = aborted != nil
        lock.unlock()
        if done { return }
        if !data.withUnsafeBytes({ body.append($0) }) { abortOverLimit() }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        lock.lock()
        let aborted = self.aborted
        let response = self.response
        lock.unlock()
        let url = task.originalRequest?.url?.absoluteString ?? "?"
        if aborted != nil {
            return  // already answered
        } else if let error = error as? URLError {
            finish(.failure(error.code == .timedOut ? .timeout : .network(error.localizedDescription)))
        } else if let error {
            finish(.failure(.network(error.localizedDescription)))
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
