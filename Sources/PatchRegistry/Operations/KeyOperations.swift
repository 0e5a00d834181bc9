import Foundation
import PatchCore
import PatchSigning

/// `keys delegate`: a channel's targets signed by a role with its own keys, or (`replace`) the
/// role's keys rotated (`Registry.delegate`). With no `keys`, one Ed25519 key is made and kept
/// where the registry is. A dry run answers the role's next metadata, unsigned, under
/// `unsigned`: what a key holder signs where the role's keys are and sends back as `role`, so
/// the registry needs none of them.
public struct DelegateOperation: ReleaseOperation, Equatable {
    public static let definition = OperationDefinition(
        kind: "delegate", routes: [.delegateChannel],
        parameters: [
            OperationParameter("channel", .body, .channel, required: true, "the channel the role signs (not production)"),
            OperationParameter("name", .body, .text, required: true, "the role's name: 1-32 characters of a-z, 0-9 and -"),
            OperationParameter("keys", .body, .json, "the role's public keys, 1 to 16 TUF key objects (left out: one made where the registry is)"),
            OperationParameter("threshold", .body, .integer, "how many of them must sign (1 to 16)"),
            OperationParameter("replace", .body, .flag, "true: rotate the keys of the role that signs the channel now"),
            OperationParameter("role", .body, .json, "the role's next metadata, signed where its keys are (as the dry run answered it)"),
        ],
        // 16 TUF key objects fit with room to spare.
        audits: ["keys.delegate", "change.propose"], danger: .routine, expectPatch: false, status: 201, metric: "delegations", bodyLimit: 16_384)

    public var channel: ChannelName
    public var role: String
    public var keys: [TUFKey]
    public var threshold: Int?
    public var replace: Bool
    /// The role's metadata signed elsewhere (its canonical JSON).
    public var signedRole: JSON?

    public init(channel: ChannelName, role: String, keys: [TUFKey] = [], threshold: Int? = nil, replace: Bool = false, signedRole: JSON? = nil) {
        self.channel = channel
        self.role = role
        self.keys = keys
        self.threshold = threshold
        self.replace = replace
        self.signedRole = signedRole
    }

    public init(_ values: OperationValues) throws(RegistryError) {
        guard let channel = try values.channel("channel"), let role = values.text("name") else {
            throw .invalidCall("channel and name (the role) are required, like {\"channel\": \"staging\", \"name\": \"qa\"}")
        }
        var keys: [TUFKey] = []
        if let raw = try values.json("keys") {
            // A pending change stored before operations were values kept them by keyid.
            let listed = raw.arrayValue ?? raw.objectValue.map { object in object.keys.sorted().compactMap { object[$0] } }
            guard let list = listed, (1...16).contains(list.count) else { throw .invalidCall("keys must be an array of 1 to 16 TUF key objects") }
            for json in list {
                do { keys.append(try TUFKey(json: json, role: role)) } catch { throw .invalidCall("keys: not a TUF public key object: \(error)") }
            }
        }
        let signedRole = try values.json("role")
        if signedRole != nil, keys.isEmpty { throw .invalidCall("a signed role goes with the role's public keys (keys)") }
        self.init(channel: channel, role: role, keys: keys, threshold: try values.integer("threshold", in: 1...16), replace: try values.flag("replace"),
                  signedRole: signedRole)
    }

    public var values: OperationValues {
        .encode(["channel": channel, "name": role, "keys": keys.isEmpty ? Optional<JSON>.none : JSON.array(keys.map(\.json)), "threshold": threshold,
                 "replace": replace, "role": signedRole])
    }

    public var summary: String {
        "\(replace ? "rotate the keys of" : "delegate \(channel) to") the role \(role): \(threshold.map { "\($0) of " } ?? "")\(max(keys.count, 1)) key\(keys.count > 1 ? "s" : "")"
    }

    public var status: Int { replace ? 200 : 201 }

    /// `DelegationChange.json` with `app`, and where a key made for the role is kept: its file
    /// (`keyFile`) for the registry's own user, only `serverKey` for a caller over patchd,
    /// which never learns the server's paths.
    public func execute(on registry: Registry, _ context: OperationContext) throws(RegistryError) -> JSON {
        let app = try context.requireApp()
        if context.dryRun {
            // What a key holder signs: the role's next metadata as of now. Nothing changes.
            try Registry.checkDelegatedRoleName(role)
            let body = try registry.nextDelegatedBody(app: app, role: role, channel: channel, now: context.now)
            return ["app": .string(app.rawValue), "name": .string(role), "channel": .string(channel.rawValue), "unsigned": body.signedJSON]
        }
        var publicKeys = keys, made: (key: SigningKey, file: URL)?
        if publicKeys.isEmpty {
            // Checked before a key file is written for a role that cannot be made.
            try Registry.checkDelegatedRoleName(role)
            let key: SigningKey
            do throws(CryptoError) { key = try SigningKey.generateEd25519() } catch { throw .crypto(error) }
            made = (key, try registry.keys.storeDelegated(key, app: app, role: role))
            publicKeys = [key.tufKey]
        }
        do throws(RegistryError) {
            let change = try registry.delegate(app: app, channel: channel, role: role, keys: publicKeys, threshold: threshold,
                                               signingKeys: made.map { [$0.key] } ?? [], presignedRole: signedRole?.canonicalBytes, replace: replace,
                                               actor: context.actor, now: context.now)
            var json = change.json.objectValue ?? [:]
            json["app"] = .string(app.rawValue)
            if let made {
                if context.caller == nil { json["keyFile"] = .string(made.file.path) } else { json["serverKey"] = true }
            }
            return .object(json)
        } catch {
            if let made { try? FileManager.default.removeItem(at: made.file) }
            throw DelegateOperation.keysElsewhere(error, role: role, context: context)
        }
    }

    /// Over patchd, a key the change needs that is not on the server is the caller's to fix
    /// (409, nothing changed), not the server's failure; the message says where the change can
    /// be made and names no file of the server's (the registry's own words may).
    static func keysElsewhere(_ error: RegistryError, role: String?, context: OperationContext) -> RegistryError {
        guard context.caller != nil else { return error }
        switch error {
        case .keys, .signaturesNeeded: break
        default: return error
        }
        guard let role else { return .conflict("this server does not hold the top-level targets key, which signs the end of a delegation: run it where that key is") }
        return .conflict("this server cannot sign it: it lacks a threshold of the role \(role)'s private keys (leave out keys to let the server make one, or sign where they are: --key-file) or the top-level targets key, which signs the delegation")
    }
}

/// `keys undelegate`: the channel's targets return to top-level targets (`Registry.undelegate`).
public struct UndelegateOperation: ReleaseOperation, Equatable {
    public static let definition = OperationDefinition(
        kind: "undelegate", routes: [.undelegateChannel],
        parameters: [OperationParameter("channel", .path, .channel, required: true, "the delegated channel")],
        audits: ["keys.undelegate"], danger: .routine, dryRun: false, expectPatch: false, metric: "delegations")

    public var channel: ChannelName

    public init(channel: ChannelName) { self.channel = channel }

    public init(_ values: OperationValues) throws(RegistryError) {
        guard let channel = try values.channel("channel") else { throw .invalidCall("channel is required") }
        self.init(channel: channel)
    }

    public var values: OperationValues { .encode(["channel": channel]) }

    public var summary: String { "end the delegation of \(channel)" }

    /// The delegation that ended, `DelegationRecord.json` with `app`.
    public func execute(on registry: Registry, _ context: OperationContext) throws(RegistryError) -> JSON {
        let app = try context.requireApp()
        do throws(RegistryError) {
            var json = try registry.undelegate(app: app, channel: channel, actor: context.actor, now: context.now).json.objectValue ?? [:]
            json["app"] = .string(app.rawValue)
            return .object(json)
        } catch { throw DelegateOperation.keysElsewhere(error, role: nil, context: context) }
    }
}

/// `keys withhold`: sets or rotates the app's withhold role, whose keys can only take patches
/// away (`Registry.setWithholdRole`). Without keys, patchd (or patchctl's registry) makes one
/// and keeps it: then a guard's halt and a person's halt or revoke land at once even when the
/// targets keys are elsewhere (the two-person rule).
public struct WithholdRoleOperation: ReleaseOperation, Equatable {
    public static let definition = OperationDefinition(
        kind: "withhold-role", routes: [.setWithholdRole],
        parameters: [
            OperationParameter("keys", .body, .json, "the role's public keys, 1 to 16 TUF key objects (left out: one made where the registry is)"),
            OperationParameter("threshold", .body, .integer, "how many of them must sign (1 to 16; default 1)"),
        ],
        audits: ["keys.withhold", "change.propose"], danger: .routine, expectPatch: false, metric: "delegations", bodyLimit: 16_384)

    public var keys: [TUFKey]
    public var threshold: Int?

    public init(keys: [TUFKey] = [], threshold: Int? = nil) {
        self.keys = keys
        self.threshold = threshold
    }

    public init(_ values: OperationValues) throws(RegistryError) {
        var keys: [TUFKey] = []
        if let raw = try values.json("keys") {
            guard let list = raw.arrayValue, (1...16).contains(list.count) else { throw .invalidCall("keys must be an array of 1 to 16 TUF key objects") }
            for json in list {
                do { keys.append(try TUFKey(json: json, role: Withholds.roleName)) } catch { throw .invalidCall("keys: not a TUF public key object: \(error)") }
            }
        }
        self.init(keys: keys, threshold: try values.integer("threshold", in: 1...16))
    }

    public var values: OperationValues {
        .encode(["keys": keys.isEmpty ? Optional<JSON>.none : JSON.array(keys.map(\.json)), "threshold": threshold])
    }

    public var summary: String {
        "set the withhold role: \(threshold.map { "\($0) of " } ?? "")\(max(keys.count, 1)) key\(keys.count > 1 ? "s" : "")"
    }

    /// The role with `app`, and where a key made for it is kept (as `delegate` answers).
    public func execute(on registry: Registry, _ context: OperationContext) throws(RegistryError) -> JSON {
        let app = try context.requireApp()
        var publicKeys = keys, made: (key: SigningKey, file: URL)?
        if publicKeys.isEmpty, !context.dryRun {
            let key: SigningKey
            do throws(CryptoError) { key = try SigningKey.generateEd25519() } catch { throw .crypto(error) }
            made = (key, try registry.keys.storeDelegated(key, app: app, role: Withholds.roleName))
            publicKeys = [key.tufKey]
        }
        do throws(RegistryError) {
            let role: WithholdRole
            if context.dryRun, publicKeys.isEmpty {
                guard try registry.withholdRole(app: app) == nil || threshold != nil else { throw .invalidInput("nothing to change") }
                return ["app": .string(app.rawValue), "name": .string(Withholds.roleName), "keyids": .array([]), "threshold": .int(Int64(threshold ?? 1))]
            }
            role = try registry.setWithholdRole(app: app, keys: publicKeys, threshold: threshold, dryRun: context.dryRun, actor: context.actor, now: context.now)
            var json = role.json.objectValue ?? [:]
            json["app"] = .string(app.rawValue)
            if let made {
                if context.caller == nil { json["keyFile"] = .string(made.file.path) } else { json["serverKey"] = true }
            }
            return .object(json)
        } catch {
            if let made { try? FileManager.default.removeItem(at: made.file) }
            throw DelegateOperation.keysElsewhere(error, role: nil, context: context)
        }
    }
}
