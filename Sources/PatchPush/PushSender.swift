import Foundation
import Locking
import PatchCore
import Synchronization

/// How hard a round of pushes tries.
public struct PushSettings: Sendable {
    /// Requests in flight at once (one HTTP/2 connection each): APNs takes thousands a second
    /// per connection, and a round must not become a flood from one machine.
    public var concurrency = 8
    /// Further attempts of a token answered 429 or 5xx, or not answered at all.
    public var retries = 3
    /// Seconds before the first retry, doubled for each next one (at most 30 s).
    public var backoff: TimeInterval = 0.5
    /// Seconds one request may take, connecting included.
    public var timeout: TimeInterval = 10
    public init() {}
}

/// What one round did: the figures, and the tokens APNs said are gone (to delete).
public struct PushResult: Sendable, Equatable {
    public var summary = PushSummary()
    public var gone: [String] = []
}

/// Sends one announcement to many tokens over APNs' provider API, every per-token answer
/// handled: 200 sent; 410 Unregistered and 400 BadDeviceToken gone; 403
/// ExpiredProviderToken a new JWT and one more try; 429, 5xx and no answer retried with
/// backoff; anything else failed (kept: the next change tries again). Each token not sent
/// is counted under its reason (`PushSummary.reasons`, `APNsAnswer.failure`).
public struct PushSender: Sendable {
    public let endpoint: APNsEndpoint
    public let token: APNsToken
    public let topic: String
    public let settings: PushSettings

    public init(endpoint: APNsEndpoint, token: APNsToken, topic: String, settings: PushSettings = PushSettings()) {
        self.endpoint = endpoint
        self.token = token
        self.topic = topic
        self.settings = settings
    }

    /// A token's end: sent, or gone or failed with the reason counted for it.
    enum Outcome { case sent, gone(String), failed(String) }

    /// Blocks until every token is answered; `progress(done, total)` after each one.
    public func send(_ announcement: PushAnnouncement, to devices: [PushDevice],
                     progress: (@Sendable (Int, Int) -> Void)? = nil) throws(PushError) -> PushResult {
        guard !devices.isEmpty else { return PushResult() }
        let body = announcement.payload
        let headers = announcement.headers(topic: topic)
        let next = Atomic<Int>(0)
        let results = Locked<(done: Int, result: PushResult)>((0, PushResult()))
        let workers = max(1, min(settings.concurrency, devices.count))
        DispatchQueue.concurrentPerform(iterations: workers) { _ in
            let connection = APNsConnection(timeout: settings.timeout, caFile: endpoint.caFile)
            while true {
                let index = next.add(1, ordering: .relaxed).oldValue
                guard index < devices.count else { return }
                let device = devices[index]
                let outcome = send(body, headers: headers, to: device, over: connection)
                let done = results.withLock { state -> Int in
                    state.done += 1
                    switch outcome {
                    case .sent: state.result.summary.sent += 1
                    case .failed(let reason):
                        state.result.summary.failed += 1
                        state.result.summary.reasons[reason, default: 0] += 1
                    case .gone(let reason):
                        state.result.summary.removed += 1
                        state.result.summary.reasons[reason, default: 0] += 1
                        state.result.gone.append(device.token)
                    }
                    return state.done
                }
                progress?(done, devices.count)
            }
        }
        var result = results.withLock { $0.result }
        result.gone.sort()
        return result
    }

    /// One request to one token, no retry (`patchctl apps apns --test`): APNs' answer as it came.
    public func probe(_ announcement: PushAnnouncement, token deviceToken: String, environment: PushEnvironment) throws(PushError) -> APNsAnswer {
        let jwt: String
        do { jwt = try token.bearer() } catch { throw .configuration("cannot sign the provider token with the .p8 key: \(error)") }
        let connection = APNsConnection(timeout: settings.timeout, caFile: endpoint.caFile)
        return connection.post(base: endpoint.url(for: environment), token: deviceToken,
                               headers: [("authorization", "bearer \(jwt)")] + announcement.headers(topic: topic), body: announcement.payload)
    }

    private func send(_ body: [UInt8], headers: [(String, String)], to device: PushDevice, over connection: APNsConnection) -> Outcome {
        var attempt = 0
        var renewed = false
        while true {
            guard let jwt = try? token.bearer() else { return .failed("the .p8 key cannot sign") }
            let answer = connection.post(base: endpoint.url(for: device.environment), token: device.token,
                                         headers: [("authorization", "bearer \(jwt)")] + headers, body: body)
            switch (answer.status, answer.reason) {
            case (200, _): return .sent
            case (410, _), (400, "BadDeviceToken"): return .gone(answer.failure)
            case (403, "ExpiredProviderToken") where !renewed:
                token.invalidate()
                renewed = true
            case (0, _), (429, _), (500...599, _):  // 0: no answer (connection, timeout)
                guard attempt < settings.retries else { return .failed(answer.failure) }
                Thread.sleep(forTimeInterval: min(30, settings.backoff * Double(1 << attempt)))
                attempt += 1
            default:
                return .failed(answer.failure)
            }
        }
    }
}
