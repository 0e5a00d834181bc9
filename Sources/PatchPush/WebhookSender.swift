import Foundation
import HTTPClientKit
import PatchCore

/// Sends one webhook attempt (docs/PROTOCOL.md, "Webhooks") through the project's one HTTP
/// client, as the APNs provider does: no redirect is followed (a 3xx is an answer, and a
/// failure), the connection and the whole request have deadlines, and at most `answerLimit`
/// bytes of the answer are read. With `denyPrivate` the host is resolved here, every address
/// checked (`WebhookAddress.publicAddresses`), and the connection made to the address checked.
public struct WebhookSender: Sendable {
    /// The answer's bytes read at most: a receiver's answer is only looked at for its status.
    public static let answerLimit = 4096
    public static let userAgent = "hotpatch-webhooks/1"

    /// Seconds to connect (and the longest wait for the next byte), and for the whole attempt.
    public var connectTimeout: Double
    public var timeout: Double
    public var denyPrivate: Bool

    public init(connectTimeout: Double = 5, timeout: Double = 10, denyPrivate: Bool) {
        self.connectTimeout = connectTimeout
        self.timeout = timeout
        self.denyPrivate = denyPrivate
    }

    /// The headers of an attempt at `timestamp` (Unix seconds), the signature among them.
    public static func headers(_ delivery: WebhookDelivery, timestamp: Int64) -> [String: String] {
        ["Content-Type": "application/json", "User-Agent": userAgent, "X-Hotpatch-Event": delivery.type, "X-Hotpatch-Event-Id": delivery.eventID,
         WebhookSignature.timestampHeader: String(timestamp),
         WebhookSignature.header: WebhookSignature.sign(secret: delivery.secret, timestamp: timestamp, body: delivery.body)]
    }

    /// One attempt, blocking the calling thread (never one of Swift concurrency's own).
    public func send(_ delivery: WebhookDelivery, now: Date = Date()) -> WebhookOutcome {
        var configuration = HTTPClient.Configuration(requestTimeout: connectTimeout, resourceTimeout: timeout)
        if denyPrivate {
            let addresses: [[UInt8]]
            do {
                addresses = try WebhookAddress.publicAddresses(delivery.url.host)
            } catch .forbidden(let why) {
                return .failed(why)
            } catch {
                return .retry(error.description)  // resolution failed: the name may come back
            }
            let address = WebhookAddress.text(addresses[0])
            let host = delivery.url.host.contains(":") ? "[\(delivery.url.host)]" : delivery.url.host
            configuration.connectTo = "\(host):\(delivery.url.port):\(addresses[0].count == 16 ? "[\(address)]" : address):\(delivery.url.port)"
        }
        let client = HTTPClient(configuration)
        let answer = DownloadBody(limit: WebhookSender.answerLimit)
        let head: FetchHead
        do {
            head = try client.sendBlocking("POST", delivery.url.url, headers: WebhookSender.headers(delivery, timestamp: Int64(now.timeIntervalSince1970)),
                                           body: delivery.body, into: answer)
        } catch .timeout {
            return .retry("no answer within \(Int(timeout)) s")
        } catch {
            return .retry(error.reason)
        }
        switch head.status {
        case 200..<300: return .delivered(status: head.status)
        case 408, 429, 500..<600: return .retry("HTTP \(head.status)")
        case 300..<400: return .failed("HTTP \(head.status): a redirect, which is never followed (subscribe the URL it names)")
        default: return .failed("HTTP \(head.status)")
        }
    }
}
