import Foundation
import PatchCore

/// One thing that happened to a patch on this device, as `POST /v1/apps/{app}/reports`
/// carries it (docs/PROTOCOL.md, "Device reports"). The ID is random and kept across resends,
/// so the server counts an event once however often it arrives.
public struct ReportEvent: Codable, Sendable, Equatable {
    /// The event types the server counts (PatchCore: one list for both sides).
    public typealias Kind = ReportEventType

    public let id: String
    public let type: Kind
    public let appVersion: String
    public let channel: String
    /// Absent only for a `syncFailed` that no patch was involved in.
    public let patch: Int?
    /// The machine-readable code of a `refused` or `syncFailed` (`ReportReason`).
    public let reason: String?
    /// The device's clock, `YYYY-MM-DDTHH:MM:SSZ`.
    public let at: String
    /// The server's receipt for the patch (`X-Patch-Receipt`): without it an event about a
    /// patch does not count.
    public let receipt: String?

    init(_ type: Kind, configuration: ClientConfiguration, patch: Int?, reason: String? = nil, receipt: String? = nil, at: Date) {
        self.id = UUID().uuidString
        self.type = type
        self.appVersion = configuration.appVersion.rawValue
        self.channel = configuration.channel.rawValue
        self.patch = patch
        self.reason = reason
        self.receipt = type.needsReceipt ? receipt : nil
        self.at = TUFTime.format(at)
    }

    /// A receipt as the server sends it (32 lowercase hex digits), or nil: anything else is
    /// not kept, so a hostile server cannot make the device store or send arbitrary text.
    static func receipt(_ raw: String) -> String? {
        raw.utf8.count == 32 && raw.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) ? raw : nil
    }
}

/// The reason codes of the contract: a sync failure becomes a `refused` when a patch was
/// refused on verification, else a `syncFailed`.
enum ReportReason {
    /// nil: not a failure worth reporting (a cancelled sync changed and learnt nothing).
    static func event(for error: PatchClientError, patch: Int?) -> (ReportEvent.Kind, String)? {
        switch error {
        case .cancelled: return nil
        case .network, .timeout, .server, .storage, .invalidContentKey: return (.syncFailed, code(error))
        case .verification, .tooLarge, .decryption, .missingContentKey, .malformedTarget:
            // `refused` names a patch; a refusal of metadata (before any patch was picked)
            // is a failed sync, its cause in the device's own `lastError`.
            guard patch != nil else { return (.syncFailed, "other") }
            return (.refused, code(error))
        }
    }

    /// The code of `error`, whichever event (if any) it becomes; also `SyncFailure.code`.
    static func code(_ error: PatchClientError) -> String {
        switch error {
        case .cancelled: return "cancelled"
        case .network: return "network"
        case .timeout: return "timeout"
        case .server: return "server"
        case .storage, .invalidContentKey: return "storage"
        case .verification(let tuf):
            switch tuf {
            case .unsignedThreshold: return "signature"
            case .hashMismatch, .lengthMismatch: return "hashMismatch"
            case .expired: return "expired"
            case .rollback, .versionMismatch: return "rollback"
            case .malformed, .wrongType, .uncheckableHashes, .missingRole, .unknownTarget: return "malformed"
            }
        case .tooLarge: return "tooLarge"
        case .decryption, .missingContentKey: return "decryption"
        case .malformedTarget: return "malformed"
        }
    }
}
