import Foundation
import PatchCore
import PatchSigning

/// `X-Hotpatch-Signature` (docs/PROTOCOL.md, "Webhooks", with a test vector): HMAC-SHA256 under
/// the subscription's secret over the decimal Unix time of the attempt (`X-Hotpatch-Timestamp`),
/// a full stop and the body, as `v1=` and 64 lower-case hex digits. The time is signed with
/// the body so a receiver that refuses old timestamps cannot be replayed a captured delivery
/// later; `v1` leaves room for another scheme beside it. The one function the sender uses.
public enum WebhookSignature {
    public static let header = "X-Hotpatch-Signature"
    public static let timestampHeader = "X-Hotpatch-Timestamp"

    public static func sign(secret: String, timestamp: Int64, body: [UInt8]) -> String {
        "v1=" + Hex.encode(Digest.hmacSHA256(key: Array(secret.utf8), Array("\(timestamp).".utf8) + body))
    }
}
