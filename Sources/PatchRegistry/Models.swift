import Foundation
import PatchCore

public struct AppRecord: Sendable, Equatable {
    public let name: AppName
    public let encrypted: Bool
    public let contentKeyID: String?
    public let createdAt: String
    public let createdBy: String

    /// What `patchctl apps list` and `GET /v1/apps` show of an app.
    public var json: JSON {
        ["app": .string(name.rawValue), "encrypted": .bool(encrypted), "createdAt": .string(createdAt), "createdBy": .string(createdBy)]
    }
}

public enum PatchState: String, Sendable, Codable {
    case active, revoked
}

/// One published patch as the registry keeps it.
public struct PatchRecord: Sendable, Equatable {
    public let app: AppName
    public let appVersion: AppVersion
    public let number: Int
    /// The channel devices must follow to get it (`production` for patches from before channels).
    public let channel: ChannelName
    public let rollout: Int
    public let state: PatchState
    /// Digests of the script as the publisher gave it.
    public let plaintext: BundleDigests
    /// Digests of the bytes devices download (the ciphertext for encrypted apps).
    public let served: BundleDigests
    public let contentKeyID: String?
    public let publishedAt: String
    public let publishedBy: String
    public let revokedAt: String?
    public let revokedBy: String?
    /// Release notes given with `--message`, signed with the target.
    public let message: String?
    /// The patch of another channel this one was promoted from (same plaintext).
    public let promotedFrom: PatchTargetInfo.Origin?
    /// The earlier patch of its channel whose plaintext it republishes (`rollback --to`).
    public var rolledBackTo: PatchTargetInfo.Origin? = nil
    /// Why it was revoked (`revoke --message`), kept with the patch and in the audit event.
    public var revokeMessage: String? = nil
    /// Signed delivery conditions: only the devices they admit get it.
    public var conditions: DeliveryConditions? = nil
    /// The script check it passed or was released past (issue 45): set on a patch just
    /// released and in listings (`Registry.listing`); nil for a patch from before the check.
    public var check: PatchCheckRecord? = nil

    public var encrypted: Bool { contentKeyID != nil }

    /// The TUF target path: `[{channel}/]{appVersion}/{patchNumber}/main.js` (PatchTargetInfo).
    public var targetPath: String {
        PatchTargetInfo.path(appVersion: appVersion.rawValue, channel: channel, patch: number, conditional: conditions != nil)
    }

    public var json: JSON {
        var out: [String: JSON] = [
            "app": .string(app.rawValue), "appVersion": .string(appVersion.rawValue), "patch": .int(Int64(number)),
            "rollout": .int(Int64(rollout)), "state": .string(state.rawValue),
            "length": .int(Int64(plaintext.length)), "sha256": .string(plaintext.sha256), "md5": .string(plaintext.md5),
            "served": ["length": .int(Int64(served.length)), "sha256": .string(served.sha256), "md5": .string(served.md5)],
            "encrypted": .bool(encrypted), "publishedAt": .string(publishedAt), "publishedBy": .string(publishedBy),
            "targetPath": .string(targetPath), "channel": .string(channel.rawValue),
        ]
        if let message { out["message"] = .string(message) }
        if let promotedFrom { out["promotedFrom"] = promotedFrom.json }
        if let rolledBackTo { out["rolledBackTo"] = rolledBackTo.json }
        if let revokedAt { out["revokedAt"] = .string(revokedAt) }
        if let revokedBy { out["revokedBy"] = .string(revokedBy) }
        if let revokeMessage { out["revokeMessage"] = .string(revokeMessage) }
        // The device count and OS range, never the hashes.
        if let conditions { out["conditions"] = conditions.listing }
        if let check { out["check"] = check.json }
        return .object(out)
    }
}

/// Lifetimes of freshly signed metadata. The timestamp is short so a frozen mirror is
/// noticed within a day; root is long because re-signing it needs the offline root key.
public struct ExpiryPolicy: Sendable {
    public var root: TimeInterval = 365 * 86_400
    public var targets: TimeInterval = 90 * 86_400
    public var snapshot: TimeInterval = 30 * 86_400
    public var timestamp: TimeInterval = 86_400

    /// For the end-to-end tests of re-signing (`test_upkeep_lease.py`), which cannot wait a
    /// day: `HOTPATCH_TEST_TIMESTAMP_LIFETIME=S` makes the timestamp lifetime S seconds in
    /// patchctl and patchd alike. Unset (always, outside tests) it changes nothing.
    public init() {
        if let raw = ProcessInfo.processInfo.environment["HOTPATCH_TEST_TIMESTAMP_LIFETIME"], let seconds = TimeInterval(raw), seconds >= 1 {
            timestamp = seconds
        }
    }

    func lifetime(_ role: Role) -> TimeInterval {
        switch role {
        case .root: return root
        case .targets: return targets
        case .snapshot: return snapshot
        case .timestamp: return timestamp
        }
    }
}

/// Who did something, as the audit log records it: text held to `ReadableText`'s rule, so
/// the log shows who it was and two actors cannot look alike.
public struct Actor: Sendable {
    public let name: String

    /// Bounded: the actor lands in listings and logs. A token's actor is its name (at most
    /// `Registry.maxTokenName`) and " (token ID)", which always fits.
    public static let maxLength = 256

    /// Names from outside (`$HOTPATCH_ACTOR`, `$USER`): refused, not cleaned, when they break
    /// the rule, so what is recorded is what was given.
    public init(validating name: String) throws(ValidationError) {
        guard !name.isEmpty else { throw ValidationError("the actor is empty") }
        try ReadableText.check(name, field: "actor", maxLength: Actor.maxLength)
        self.name = name
    }

    /// The code's own actors (`"patchd guard"`): a literal, so no text from outside can take
    /// this way past the rule.
    public init(_ literal: StaticString) {
        name = literal.description
    }

    /// Who runs this process, the default for local commands: `$HOTPATCH_ACTOR` when set,
    /// else `user@host`. The user is `$USER`, `$LOGNAME`, else the account of the process's
    /// uid (a cron job or a container often has neither variable), else `uid N`: never a bare
    /// "unknown" that says nothing about who changed a release. A `$HOTPATCH_ACTOR` the rule
    /// refuses is an error naming it, not a silent fallback.
    public static func current(environment: [String: String]) throws(ValidationError) -> Actor {
        if let named = environment["HOTPATCH_ACTOR"], !named.isEmpty {
            do { return try Actor(validating: named) } catch { throw ValidationError("$HOTPATCH_ACTOR: \(error.message)") }
        }
        let user = [environment["USER"], environment["LOGNAME"], accountName()].compactMap { $0 }.first { !$0.isEmpty }
        let host = ProcessInfo.processInfo.hostName
        return try Actor(validating: "\(user ?? "uid \(getuid())")@\(host.isEmpty ? "localhost" : host)")
    }

    private static func accountName() -> String? {
        guard let entry = getpwuid(getuid()), let name = entry.pointee.pw_name else { return nil }
        return String(cString: name)
    }
}
