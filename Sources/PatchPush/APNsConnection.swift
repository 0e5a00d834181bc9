import Foundation
import HTTPClientKit
import PatchCore

/// One HTTP/2 connection to APNs: an `HTTPClient` held by this object and used by one thread
/// at a time (PushSender gives each worker its own), kept alive across requests.
final class APNsConnection {
    private let client: HTTPClient

    /// APNs' answer is `{"reason": …}` and a few headers; anything longer is cut off (the
    /// status still counts, the reason is then unknown).
    static let answerLimit = 4096

    init(timeout: TimeInterval, caFile: String?) {
        var configuration = HTTPClient.Configuration(requestTimeout: timeout, resourceTimeout: timeout)
        configuration.httpsOnly = true
        configuration.requireHTTP2 = true
        configuration.caFile = caFile
        client = HTTPClient(configuration)
    }

    /// `POST {base}/3/device/{token}`: what APNs answered, or status 0 and the client's
    /// account when no answer came (connection, TLS, timeout, not HTTP/2). Blocks: PushSender
    /// calls it from its own worker threads.
    func post(base: URL, token: String, headers: [(String, String)], body: [UInt8]) -> APNsAnswer {
        var base = base.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        guard let url = URL(string: "\(base)/3/device/\(token)") else {
            return APNsAnswer(status: 0, unanswered: "cannot build a URL for the device token")
        }
        let answer = DownloadBody(limit: APNsConnection.answerLimit)
        let head: FetchHead
        do {
            head = try client.sendBlocking("POST", url, headers: Dictionary(headers, uniquingKeysWith: { _, last in last }),
                                           body: body, into: answer)
        } catch {
            return APNsAnswer(status: 0, unanswered: error.reason)
        }
        let reason = (try? JSONParser.parse(answer.received, maxDepth: 3, maxLength: APNsConnection.answerLimit))?["reason"]?.stringValue
        return APNsAnswer(status: head.status, reason: reason, apnsID: APNsConnection.apnsID(head.headers), unanswered: nil)
    }

    /// The `apns-id` header of an answer (APNs' name for the notification), bounded.
    static func apnsID(_ headers: [String: String]) -> String? {
        guard let value = headers["apns-id"], !value.isEmpty else { return nil }
        return String(value.prefix(64))
    }
}

@available(*, unavailable) extension APNsConnection: Sendable {}
