import Foundation
import HTTPTransport
import Synchronization

/// Prometheus counters, lock-free on the request path: one atomic per (route, status) cell.
public final class Metrics: Sendable {
    public enum Route: String, CaseIterable, Sendable {
        case metadata, target, check, publish, revoke, rollout, list, audit, health, metrics, unknown
        /// Device reports (POST /v1/apps/{app}/reports) and guard changes.
        case report, guards = "guard"
        /// The web console's static files (and `/`, which redirects there).
        case console
        /// Device token registrations (POST /v1/apps/{app}/devices).
        case devices
        /// Throttling rule changes, push rounds asked for (POST /v1/apps/{app}/notify) and
        /// tokens issued (POST /v1/tokens).
        case throttle, push, tokens
        /// Delegated keys per channel (POST and DELETE /v1/apps/{app}/delegations).
        case delegations
        /// Webhook subscriptions (/v1/apps/{app}/webhooks).
        case webhooks

        /// What a request to the route does, for a 403 that says what it needed.
        var action: String {
            switch self {
            case .publish: return "publishing"
            case .revoke: return "revoking"
            case .rollout: return "changing a rollout"
            case .list: return "listing"
            case .audit: return "reading the audit log"
            case .guards: return "changing a guard"
            case .throttle: return "changing throttling rules"
            case .push: return "pushing to devices"
            case .tokens: return "issuing a token"
            case .delegations: return "changing a channel's delegated keys"
            case .webhooks: return "changing a webhook"
            default: return "this request"
            }
        }
    }

    static let statuses = [200, 201, 202, 204, 304, 400, 401, 403, 404, 405, 409, 413, 429, 500, 503]
    static let latencyBounds: [Double] = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1]

    private let requests: [AtomicCounter]
    private let latency: [AtomicCounter]
    private let latencyMicros = AtomicCounter()
    private let latencyCount = AtomicCounter()
    private let bytes = AtomicCounter()
    private let publishes = AtomicCounter()
    private let pushQuotaRefusals = AtomicCounter()
    private let pushQueueRefusals = AtomicCounter()
    private let pushRefreshesFromMemory = AtomicCounter()

    public init() {
        requests = (0..<(Route.allCases.count * (Metrics.statuses.count + 1))).map { _ in AtomicCounter() }
        latency = Metrics.latencyBounds.map { _ in AtomicCounter() }
    }

    private func cell(_ route: Route, _ status: Int) -> Int {
        let routeIndex = Route.allCases.firstIndex(of: route)!
        let statusIndex = Metrics.statuses.firstIndex(of: status) ?? Metrics.statuses.count
        return routeIndex * (Metrics.statuses.count + 1) + statusIndex
    }

    public func record(route: Route, status: Int, bodyBytes: Int, seconds: Double) {
        requests[cell(route, status)].add(1)
        bytes.add(bodyBytes)
        if let bucket = Metrics.latencyBounds.firstIndex(where: { seconds <= $0 }) { latency[bucket].add(1) }
        latencyMicros.add(Int(seconds * 1e6))
        latencyCount.add(1)
    }

    public func recordPublish() { publishes.add(1) }

    /// A new device token refused by its network's hourly quota (`POST /v1/apps/{app}/devices`).
    public func recordPushQuotaRefusal() { pushQuotaRefusals.add(1) }
    /// A registration refused with 503 because the registration queue was full.
    func recordPushQueueRefusal() { pushQueueRefusals.add(1) }
    /// A refresh answered from `RecentRegistrations`, without the registry.
    func recordPushRefreshFromMemory() { pushRefreshesFromMemory.add(1) }

    public func count(route: Route, status: Int) -> Int { requests[cell(route, status)].load }

    /// The Prometheus text exposition format (version 0.0.4).
    public func render(gauges: [(String, String, Int)]) -> String {
        var out = "# HELP hotpatch_requests_total HTTP requests by route and status.\n# TYPE hotpatch_requests_total counter\n"
        var throttled = 0
        for route in Route.allCases {
            for status in Metrics.statuses + [0] {
                let value = requests[cell(route, status == 0 ? -1 : status)].load
                if status == 429 { throttled += value }
                if value > 0 { out += "hotpatch_requests_total{route=\"\(route.rawValue)\",status=\"\(status == 0 ? "other" : String(status))\"} \(value)\n" }
            }
        }
        out += "# HELP hotpatch_throttled_total Requests answered 429.\n# TYPE hotpatch_throttled_total counter\nhotpatch_throttled_total \(throttled)\n"
        out += "# HELP hotpatch_response_bytes_total Response body bytes.\n# TYPE hotpatch_response_bytes_total counter\nhotpatch_response_bytes_total \(bytes.load)\n"
        out += "# HELP hotpatch_publishes_total Patches published through this server.\n# TYPE hotpatch_publishes_total counter\nhotpatch_publishes_total \(publishes.load)\n"
        out += "# HELP hotpatch_push_quota_refusals_total New device tokens refused by their network's hourly quota.\n# TYPE hotpatch_push_quota_refusals_total counter\nhotpatch_push_quota_refusals_total \(pushQuotaRefusals.load)\n"
        out += "# HELP hotpatch_push_registrations_refused_total Device-token registrations refused with 503 because the registration queue was full.\n# TYPE hotpatch_push_registrations_refused_total counter\nhotpatch_push_registrations_refused_total \(pushQueueRefusals.load)\n"
        out += "# HELP hotpatch_push_refreshes_from_memory_total Device-token refreshes answered from what this server wrote recently, without the registry.\n# TYPE hotpatch_push_refreshes_from_memory_total counter\nhotpatch_push_refreshes_from_memory_total \(pushRefreshesFromMemory.load)\n"
        out += "# HELP hotpatch_request_duration_seconds Time to build a response.\n# TYPE hotpatch_request_duration_seconds histogram\n"
        var cumulative = 0
        for (index, bound) in Metrics.latencyBounds.enumerated() {
            cumulative += latency[index].load
            out += "hotpatch_request_duration_seconds_bucket{le=\"\(bound)\"} \(cumulative)\n"
        }
        let total = latencyCount.load
        out += "hotpatch_request_duration_seconds_bucket{le=\"+Inf\"} \(total)\n"
        out += "hotpatch_request_duration_seconds_sum \(Double(latencyMicros.load) / 1e6)\n"
        out += "hotpatch_request_duration_seconds_count \(total)\n"
        for (name, help, value) in gauges {
            out += "# HELP \(name) \(help)\n# TYPE \(name) gauge\n\(name) \(value)\n"
        }
        return out
    }
}
