import Foundation

/// Where pushes go: Apple's provider API, one host per environment, HTTP/2 over TLS.
/// `HOTPATCH_APNS_URL` (an https:// URL) replaces both and `HOTPATCH_APNS_CA` names the CA
/// file that signs its certificate, for tests only (a loopback HTTP/2 stand-in: APNs cannot
/// be reached from the machines the tests run on); each is read only when set, and neither
/// is needed in production.
public struct APNsEndpoint: Sendable, Equatable {
    public var production: URL
    public var sandbox: URL
    /// PEM CA certificates to trust instead of the system's (tests only).
    public var caFile: String?

    public static let apple = APNsEndpoint(production: URL(string: "https://api.push.apple.com")!,
                                           sandbox: URL(string: "https://api.sandbox.push.apple.com")!)

    public init(production: URL, sandbox: URL, caFile: String? = nil) {
        self.production = production
        self.sandbox = sandbox
        self.caFile = caFile
    }

    /// Apple's hosts, or `HOTPATCH_APNS_URL` for both when it is set (tests).
    public static func current(environment: [String: String] = ProcessInfo.processInfo.environment) throws(PushError) -> APNsEndpoint {
        guard let raw = environment["HOTPATCH_APNS_URL"] else { return .apple }
        guard let url = URL(string: raw), url.scheme == "https", url.host != nil else {
            throw .configuration("HOTPATCH_APNS_URL must be an https:// URL (it is for tests only)")
        }
        return APNsEndpoint(production: url, sandbox: url, caFile: environment["HOTPATCH_APNS_CA"])
    }

    public func url(for environment: PushEnvironment) -> URL { environment == .production ? production : sandbox }
}

/// What a round of pushes cannot start without.
public enum PushError: Error, Sendable, CustomStringConvertible {
    case configuration(String)
    /// The store's own error (the registry's `RegistryError`), as it threw it.
    case store(any Error & Sendable)
    public var description: String {
        switch self {
        case .configuration(let message): return message
        case .store(let error): return String(describing: error)
        }
    }
}
