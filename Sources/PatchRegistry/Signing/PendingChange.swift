import Foundation
import PatchCore
import PatchSigning

/// A release change as it was asked for: what `approve` runs again, at the time it was
/// proposed, once enough key holders have signed the metadata it makes.
///
/// Stored as the arguments, not as its effect: the registry's tables only ever hold what is
/// signed and served, so a pending change leaves them exactly as they were (nothing to
/// undo when it is rejected, nothing a listing or the server could show early).
public enum ReleaseChange: Sendable, Equatable {
    /// `newChannel`: the publish declares its channel (`publish --new-channel`), when it lands.
    case publish(appVersion: AppVersion, channel: ChannelName, rollout: Int, message: String?, conditions: DeliveryConditions?,
                 allowSame: Bool, newChannel: Bool, bundle: [UInt8])
    case promote(appVersion: AppVersion, from: ChannelName, to: ChannelName, number: Int?, rollout: Int, message: String?)
    case rollBack(appVersion: AppVersion, channel: ChannelName, to: Int, rollout: Int, message: String?)
    case revoke(appVersion: AppVersion, channel: ChannelName?, number: Int?, message: String?)
    case rollout(appVersion: AppVersion, number: Int, percent: Int)
    /// `keys set --role targets`: the keys (and how many of them) that sign top-level targets
    /// from now on. Pending like a release: the targets the new root needs are signed by the
    /// new keys.
    case targetsKeys(keys: [TUFKey], threshold: Int)
    /// `keys delegate` (with `replace`: a rotation), on an app whose targets keys are not here.
    case delegate(channel: ChannelName, role: String, keys: [TUFKey], threshold: Int?, replace: Bool)

    public var kind: String {
        switch self {
        case .publish: "publish"
        case .promote: "promote"
        case .rollBack: "rollback"
        case .revoke: "revoke"
        case .rollout: "rollout"
        case .targetsKeys: "targets-keys"
        case .delegate: "delegate"
        }
    }

    /// One line for listings: what the change does.
    public var summary: String {
        switch self {
        case .publish(let v, let channel, let rollout, _, let conditions, _, let newChannel, let bundle):
            "publish a \(bundle.count)-byte bundle to \(v) \(channel)\(newChannel ? " (a new channel)" : "") at \(rollout) %\(conditions == nil ? "" : " (conditional)")"
        case .promote(let v, let from, let to, let number, let rollout, _):
            "promote \(v) \(number.map { "patch \($0)" } ?? "the newest patch") of \(from) to \(to) at \(rollout) %"
        case .rollBack(let v, let channel, let to, let rollout, _): "roll \(v) \(channel) back to patch \(to) at \(rollout) %"
        case .revoke(let v, let channel, let number, _):
            number.map { "revoke \(v) patch \($0)" } ?? "revoke every active patch of \(v) \(channel ?? .production)"
        case .rollout(let v, let number, let percent): "set \(v) patch \(number) to \(percent) %"
        case .targetsKeys(let keys, let threshold): "targets signed by \(threshold) of \(keys.count) keys"
        case .delegate(let channel, let role, let keys, let threshold, let replace):
            "\(replace ? "rotate the keys of" : "delegate \(channel) to") the role \(role): \(threshold.map { "\($0) of " } ?? "")\(keys.count) key\(keys.count == 1 ? "" : "s")"
        }
    }

    /// The stored form, without a publish's bundle (kept in its own column).
    var json: JSON {
        func optional(_ value: String?) -> JSON { value.map { .string($0) } ?? .null }
        func optional(_ value: Int?) -> JSON { value.map { .int(Int64($0)) } ?? .null }
        var out: [String: JSON] = ["kind": .string(kind)]
        switch self {
        case .publish(let v, let channel, let rollout, let message, let conditions, let allowSame, let newChannel, _):
            out.merge(["appVersion": .string(v.rawValue), "channel": .string(channel.rawValue), "rollout": .int(Int64(rollout)),
                       "message": optional(message), "conditions": conditions?.json ?? .null, "allowSame": .bool(allowSame)]) { $1 }
            // Written only when set: a change stored before the flag existed reads back the same.
            if newChannel { out["newChannel"] = .bool(true) }
        case .promote(let v, let from, let to, let number, let rollout, let message):
            out.merge(["appVersion": .string(v.rawValue), "from": .string(from.rawValue), "to": .string(to.rawValue), "patch": optional(number),
                       "rollout": .int(Int64(rollout)), "message": optional(message)]) { $1 }
        case .rollBack(let v, let channel, let to, let rollout, let message):
            out.merge(["appVersion": .string(v.rawValue), "channel": .string(channel.rawValue), "to": .int(Int64(to)),
                       "rollout": .int(Int64(rollout)), "message": optional(message)]) { $1 }
        case .revoke(let v, let channel, let number, let message):
            out.merge(["appVersion": .string(v.rawValue), "channel": optional(channel?.rawValue), "patch": optional(number),
                       "message": optional(message)]) { $1 }
        case .rollout(let v, let number, let percent):
            out.merge(["appVersion": .string(v.rawValue), "patch": .int(Int64(number)), "rollout": .int(Int64(percent))]) { $1 }
        case .targetsKeys(let keys, let threshold):
            out.merge(["keys": .object(Dictionary(uniqueKeysWithValues: keys.map { ($0.keyID, $0.json) })),
                       "threshold": .int(Int64(threshold))]) { $1 }
        case .delegate(let channel, let role, let keys, let threshold, let replace):
            out.merge(["channel": .string(channel.rawValue), "name": .string(role),
                       "keys": .object(Dictionary(uniqueKeysWithValues: keys.map { ($0.keyID, $0.json) })),
                       "threshold": optional(threshold), "replace": .bool(replace)]) { $1 }
        }
        return .object(out)
    }

    /// Reads the stored form back (written by this code, so anything else is corruption).
    init(json: JSON, bundle: [UInt8]?) throws(RegistryError) {
        func bad(_ what: String) -> RegistryError { .internalError("a stored pending change does not parse: \(what)") }
        guard let object = json.objectValue, let kind = object["kind"]?.stringValue else { throw bad("no kind") }
        func text(_ key: String) -> String? { object[key]?.stringValue }
        func int(_ key: String) -> Int? { object[key]?.intValue.map { Int($0) } }
        do {
            func version() throws -> AppVersion {
                guard let raw = text("appVersion") else { throw bad("no appVersion") }
                return try AppVersion(raw)
            }
            func channel(_ key: String) throws -> ChannelName? { try text(key).map { try ChannelName($0) } }
            switch kind {
            case "publish":
                guard let bundle, let channel = try channel("channel"), let rollout = int("rollout") else { throw bad("publish") }
                let conditions = object["conditions"].flatMap { $0 == .null ? nil : DeliveryConditions($0) }
                // Stored before `newChannel` existed: its channel was declared by the upgrade
                // (`Schema.declareChannelsInUse` reads pending changes), so false is right.
                self = .publish(appVersion: try version(), channel: channel, rollout: rollout, message: text("message"), conditions: conditions,
                                allowSame: object["allowSame"]?.boolValue ?? false, newChannel: object["newChannel"]?.boolValue ?? false,
                                bundle: bundle)
            case "promote":
                guard let from = try channel("from"), let to = try channel("to"), let rollout = int("rollout") else { throw bad("promote") }
                self = .promote(appVersion: try version(), from: from, to: to, number: int("patch"), rollout: rollout, message: text("message"))
            case "rollback":
                guard let channel = try channel("channel"), let to = int("to"), let rollout = int("rollout") else { throw bad("rollback") }
                self = .rollBack(appVersion: try version(), channel: channel, to: to, rollout: rollout, message: text("message"))
            case "revoke":
                self = .revoke(appVersion: try version(), channel: try channel("channel"), number: int("patch"), message: text("message"))
            case "rollout":
                guard let number = int("patch"), let percent = int("rollout") else { throw bad("rollout") }
                self = .rollout(appVersion: try version(), number: number, percent: percent)
            case "targets-keys":
                guard let keys = object["keys"]?.objectValue, let threshold = int("threshold") else { throw bad("targets-keys") }
                self = .targetsKeys(keys: try keys.keys.sorted().map { try TUFKey(json: keys[$0]!, role: "targets") }, threshold: threshold)
            case "delegate":
                guard let channel = try channel("channel"), let role = text("name"), let keys = object["keys"]?.objectValue else { throw bad("delegate") }
                self = .delegate(channel: channel, role: role, keys: try keys.keys.sorted().map { try TUFKey(json: keys[$0]!, role: role) },
                                 threshold: int("threshold"), replace: object["replace"]?.boolValue ?? false)
            default: throw bad("kind \(kind)")
            }
        } catch let error as RegistryError { throw error } catch { throw bad("\(error)") }
    }
}

/// What a change needs that this machine could not give: `threshold` signatures of `keys`
/// over `message`, the canonical JSON of the role's next metadata (`signed`), with the
/// signatures the keys here made. Raised inside the change's transaction, which then rolls
/// back; `Registry.proposing` turns it into a stored `PendingChange`.
public struct SignatureRequest: Sendable, Equatable {
    /// "targets", or a delegated role's name.
    public let role: String
    public let signed: JSON
    public let message: [UInt8]
    /// The role's keys, by keyid, as the root (or delegation) that checks the signatures lists them.
    public let keys: [String: TUFKey]
    public let threshold: Int
    public let signatures: [TUFSignature]

    public var description: String {
        "the \(role) metadata needs \(threshold) signature\(threshold == 1 ? "" : "s") by the \(role) keys and \(signatures.count) could be made here (the other \(role) keys are not on this machine)"
    }
}

/// A change waiting for signatures (`patchctl pending`, `patchctl approve`).
public struct PendingChange: Sendable, Equatable {
    public enum State: String, Sendable {
        case pending, approved, rejected, superseded
    }

    public let app: AppName
    public let id: Int64
    public let change: ReleaseChange
    public let request: SignatureRequest
    /// Signatures gathered so far: the proposer's and each approval's, each verified when it came.
    public var signatures: [TUFSignature]
    public let proposedAt: Date
    public let proposedBy: String
    public var state: State
    /// Bytes the change made when it was proposed that applying it must use again, as they
    /// cannot be made again the same: the ciphertext of an encrypted app's publish, promote or
    /// rollback (a new seal draws a new nonce, so new hashes), or the delegated role's
    /// metadata of a `keys delegate`, signed by the role's keys, which are not there when the
    /// release keys approve.
    let captured: [UInt8]?

    public var missing: Int { max(0, request.threshold - signatures.count) }

    public var json: JSON {
        var out: [String: JSON] = [
            "app": .string(app.rawValue), "id": .int(id), "kind": .string(change.kind), "summary": .string(change.summary),
            "change": change.json, "role": .string(request.role), "threshold": .int(Int64(request.threshold)),
            "keyids": .array(request.keys.keys.sorted().map { .string($0) }),
            "signedBy": .array(signatures.map { .string($0.keyID) }), "missing": .int(Int64(missing)),
            "proposedAt": .string(TUFTime.format(proposedAt)), "proposedBy": .string(proposedBy), "state": .string(state.rawValue),
            "signed": request.signed,
        ]
        if case .publish(_, _, _, _, _, _, _, let bundle) = change { out["bundleSha256"] = .string(Digest.sha256Hex(bundle)) }
        return .object(out)
    }
}

/// A signature made elsewhere (a key holder's `patchctl approve`), handed to
/// `SignedMetadata(signing:with:)` as if its key were here. It signs only the exact message
/// it was made over; `Registry.resign` compares messages before it is used.
struct Presigned: TUFSigner {
    let tufKey: TUFKey
    let message: [UInt8]
    let value: [UInt8]

    func signature(for message: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard message == self.message else { throw .invalidInput("a signature given for other metadata than is being signed") }
        return value
    }
}

/// What one release change signs with, for the code below the public operation (the
/// operation, `addPatch`, `resign`, `signDelegated`), which would otherwise each take and
/// pass on the same three arguments.
///
/// Bound for one operation with `Registry.signing(with:)` (keys given for one command, e.g.
/// `--key-file`) or by `approve` (the gathered signatures of a pending change, replayed).
/// In-process only: nothing from a request can set it.
final class SigningContext: @unchecked Sendable {
    // @unchecked: one operation's context, used by the thread running it inside its write.
    @TaskLocal static var current: SigningContext?

    let keys: [SigningKey]
    let approval: PendingChange?
    /// The time the chain below targets (snapshot, timestamp) is signed at when a change is
    /// applied later than it was proposed: its targets keep the proposal's time.
    let commitTime: Date?
    /// What the change made that its replay must reuse (`PendingChange.captured`).
    var captured: [UInt8]?
    /// Keyids of `keys` that signed a role of this change.
    var used: Set<String> = []

    init(keys: [SigningKey], approval: PendingChange? = nil, commitTime: Date? = nil) {
        self.keys = keys
        self.approval = approval
        self.commitTime = commitTime
        self.captured = approval?.captured
    }

    /// A context for a part of the change `outer` is bound for (nil: a change of its own),
    /// signing with `keys` as well as `outer`'s.
    convenience init(inheriting outer: SigningContext?, adding keys: [SigningKey] = []) {
        self.init(keys: (outer?.keys ?? []) + keys, approval: outer?.approval, commitTime: outer?.commitTime)
    }
}
