import Foundation
import Locking
import PatchCore
import PatchSigning

/// The provider authentication token APNs takes instead of a certificate: a JWT signed with
/// the team's .p8 key (ES256), header `{"alg":"ES256","kid":KEY_ID}`, claims
/// `{"iss":TEAM_ID,"iat":SECONDS}`. Apple refuses one older than an hour
/// (`ExpiredProviderToken`) and one renewed more often than every 20 minutes
/// (`TooManyProviderTokenUpdates`), so one token is reused and replaced after `lifetime`.
public final class APNsToken: Sendable {
    /// How long one token is used: well inside Apple's hour, well past its 20 minutes.
    public static let lifetime: TimeInterval = 50 * 60

    public let teamID: String
    public let keyID: String
    private let key: ECDSAPrivateKey
    private let current = Locked<(jwt: String, issued: Date)?>(nil)

    public init(teamID: String, keyID: String, key: ECDSAPrivateKey) {
        self.teamID = teamID
        self.keyID = keyID
        self.key = key
    }

    public convenience init(config: APNsConfig, key: ECDSAPrivateKey) {
        self.init(teamID: config.teamID, keyID: config.keyID, key: key)
    }

    /// The token to send now: the cached one while younger than `lifetime`, else a new one.
    /// Signed under the lock: workers that start together share one token, not one each
    /// (Apple counts renewals). The clock is read under the lock too, and a cached token
    /// issued up to `skew` after `now` is still used: a worker that read the time a moment
    /// before another signed had renewed the token once more in the same round. A clock
    /// set back further than that renews it (its `iat` would be in the future).
    public func bearer(now: Date? = nil) throws(CryptoError) -> String {
        try current.withLock { cached throws(CryptoError) -> String in
            let now = now ?? Date()
            if let cached, now.timeIntervalSince(cached.issued) < APNsToken.lifetime,
               now.timeIntervalSince(cached.issued) > -APNsToken.skew { return cached.jwt }
            let jwt = try APNsToken.sign(teamID: teamID, keyID: keyID, key: key, issuedAt: now)
            cached = (jwt, now)
            return jwt
        }
    }

    /// How far the clock may read before a cached token's issue and still use it.
    static let skew: TimeInterval = 60

    /// Drops the cached token (APNs answered 403 ExpiredProviderToken: the clock moved).
    public func invalidate() { current.withLock { $0 = nil } }

    /// One JWT, `base64url(header).base64url(claims).base64url(r‖s)`.
    public static func sign(teamID: String, keyID: String, key: ECDSAPrivateKey, issuedAt: Date) throws(CryptoError) -> String {
        let header: JSON = ["alg": "ES256", "kid": .string(keyID)]
        let claims: JSON = ["iss": .string(teamID), "iat": .int(Int64(issuedAt.timeIntervalSince1970))]
        let input = base64URL(header.canonicalBytes) + "." + base64URL(claims.canonicalBytes)
        return input + "." + base64URL(try key.joseSignature(for: Array(input.utf8)))
    }

    static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
