import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One HTTP GET with a hard cap on the bytes accepted: the transfer is cancelled the
/// moment the body exceeds `limit` (the TUF "endless data" attack), and redirects are never
/// followed (a server may not send the client to another host).
struct HTTPFetcher: Sendable {
    struct Response: Sendable {
        let status: Int
        let headers: [String: String]
        let body: [UInt8]
    }

    let requestTimeout: TimeInterval
    let resourceTimeout: TimeInterval

    func get(_ url: URL, headers: [String: String] = [:], limit: Int) async throws(PatchClientError) -> Response {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = requestTimeout
        configuration.timeoutIntervalForResource = resourceTimeout
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        var request = URLRequest(url: url)
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let delegate = CappedDownload(limit: limit)
        let session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
        defer { session.finishTasksAndInvalidate() }
        let result: Result<Response, PatchClientError> = await withCheckedContinuation { continuation in
            delegate.start(session.dataTask(with: request), continuation: continuation)
        }
        return try result.get()
    }
}

/// Collects one response body up to a limit. Callbacks arrive on the session's serial
/// delegate queue; the lock guards against the continuation being resumed twice.
private final class CappedDownload: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private let limit: Int
    private let lock = NSLock()
    private var body: [UInt8] = []
    private var response: HTTPURLResponse?
    private var continuation: CheckedContinuation<Result<HTTPFetcher.Response, PatchClientError>, Never>?
    private var overflow = false

    init(limit: Int) { self.limit = limit }

    func start(_ task: URLSessionDataTask, continuation: CheckedContinuation<Result<HTTPFetcher.Response, PatchClientError>, Never>) {
        lock.lock()
        self.continuation = continuation
        lock.unlock()
        task.resume()
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
            lock.lock()
            overflow = true
            lock.unlock()
            completionHandler(.cancel)
            return
        }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        lock.lock()
        if body.count + data.count > limit {
            overflow = true
            lock.unlock()
            dataTask.cancel()
            return
        }
        body.append(contentsOf: data)
        lock.unlock()
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void) {
        completionHandler(nil)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        lock.lock()
        let overflow = self.overflow
        let response = self.response
        let body = self.body
        lock.unlock()
        let url = task.originalRequest?.url?.absoluteString ?? "?"
        if overflow {
            finish(.failure(.tooLarge(what: url, limit: limit)))
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
