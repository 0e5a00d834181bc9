#if !canImport(CCurl)
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One HTTP GET with a hard cap on the bytes accepted: the transfer is cancelled the
/// moment the body exceeds `limit` (the TUF "endless data" attack), and redirects are never
/// followed (a server may not send the client to another host).
final class HTTPFetcher: @unchecked Sendable {
    // @unchecked: URLSession is documented thread-safe; the session and router never change.
    struct Response: Sendable {
        let status: Int
        let headers: [String: String]
        let body: [UInt8]
    }

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

    func get(_ url: URL, headers: [String: String] = [:], limit: Int) async throws(PatchClientError) -> Response {
        var request = URLRequest(url: url)
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let download = CappedDownload(limit: limit)
        let task = session.dataTask(with: request)
        router.register(download, for: task)
        defer { router.remove(task) }
        // Cancelling the task (the sync's deadline) answers at once; the transfer is torn down
        // behind it.
        let result: Result<Response, PatchClientError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                download.start(task, continuation: continuation)
            }
        } onCancel: {
            download.abort(.timeout)
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

/// Collects one response body up to a limit. Callbacks arrive on the session's serial
/// delegate queue; the lock guards against the continuation being resumed twice.
private final class CappedDownload: @unchecked Sendable {
    private let limit: Int
    private let lock = NSLock()
    private var body: [UInt8] = []
    private var response: HTTPURLResponse?
    private var continuation: CheckedContinuation<Result<HTTPFetcher.Response, PatchClientError>, Never>?
    private var task: URLSessionDataTask?
    /// Set once the outcome is decided early (cap exceeded, cancelled): later callbacks are ignored.
    private var aborted: PatchClientError?

    init(limit: Int) { self.limit = limit }

    func start(_ task: URLSessionDataTask, continuation: CheckedContinuation<Result<HTTPFetcher.Response, PatchClientError>, Never>) {
        lock.lock()
        if let aborted {
            lock.unlock()
            continuation.resume(returning: .failure(aborted))
            return
        }
        self.continuation = continuation
        self.task = task
        lock.unlock()
        task.resume()
    }

    /// Ends the download now with `error`: the caller gets its answer at once instead of
    /// waiting for the transfer to notice the cancel (with an endless body it may not).
    func abort(_ error: PatchClientError) {
        lock.lock()
        if aborted == nil { aborted = error }
        let task = self.task
        body = []
        lock.unlock()
        task?.cancel()
        finish(.failure(error))
    }

    private func finish(_ result: Result<HTTPFetcher.Response, PatchClientError>) {
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
        if let declared = http?.expectedContentLength, declared > Int64(limit) {
            completionHandler(.cancel)
            abort(.tooLarge(what: dataTask.originalRequest?.url?.absoluteString ?? "?", limit: limit))
            return
        }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        lock.lock()
        if aborted != nil {
            lock.unlock()
            return
        }
        if body.count + data.count > limit {
            lock.unlock()
            abort(.tooLarge(what: dataTask.originalRequest?.url?.absoluteString ?? "?", limit: limit))
            return
        }
        body.append(contentsOf: data)
        lock.unlock()
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        lock.lock()
        let aborted = self.aborted
        let response = self.response
        let body = self.body
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
            finish(.success(HTTPFetcher.Response(status: response.statusCode, headers: headers, body: body)))
        } else {
            finish(.failure(.network("no response from \(url)")))
        }
    }
}
#endif
