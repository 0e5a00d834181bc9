import Foundation
import PatchCore
import PatchRegistry
import PatchSigning

// What `patchctl keys delegate` and `keys undelegate` do, over HTTP: the same registry calls,
// answering the JSON those commands print with --json.
extension PatchService {
    /// The delegation route's JSON body, at most: 16 TUF key objects fit with room to spare.
    static let delegationBodyLimit = 16_384

    /// `POST /v1/apps/{app}/delegations`: `{"channel", "name", "keys"?, "threshold"?, "replace"?, "role"?}`.
    /// No `keys`: the server makes the role's key and keeps it. `role`: the role's next
    /// metadata signed where its keys are, as `?dryRun=true` answered it under `unsigned`
    /// (the server then needs none of the role's private keys). 201 for a new delegation,
    /// 200 for a rotation (`replace`).
    func delegateChannel(_ request: HTTPRequest, _ p: PathParameters) throws(HTTPError) -> HTTPResponse {
        let app = try appCatalog(p["app"]).app
        let token = try caller(p)
        let body = try PatchService.object(request, limit: PatchService.delegationBodyLimit, members: ["channel", "name", "keys", "threshold", "replace", "role"],
                                           what: "a delegation", example: #"{"channel": "staging", "name": "qa"}"#)
        guard let rawChannel = body["channel"]?.stringValue else { throw .badRequest("channel must be a channel name, like \"staging\"") }
        let channel = try PatchService.channel(rawChannel)
        guard let role = body["name"]?.stringValue else { throw .badRequest("name must be the role's name, like \"qa\"") }
        let threshold = try PatchService.integer(body, "threshold", in: 1...16)
        let replace: Bool
        switch body["replace"] {
        case nil, .bool(false)?: replace = false
        case .bool(true)?: replace = true
        default: throw .badRequest("replace must be true or false")
        }
        if try PatchService.flag(request, "dryRun") {
            // What a key holder signs: the role's next metadata as of now. Nothing changes.
            try PatchService.checked { () throws(RegistryError) in try Registry.checkDelegatedRoleName(role) }
            let body = try read { registry throws(RegistryError) in
                try registry.nextDelegatedBody(app: app, role: role, channel: channel, now: Date())
            }
            return .json(["dryRun": true, "app": .string(app.rawValue), "name": .string(role), "channel": .string(channel.rawValue),
                          "unsigned": body.signedJSON])
        }
        let presigned = body["role"].map(\.canonicalBytes)
        var publicKeys: [TUFKey] = []
        if presigned != nil, body["keys"] == nil { throw .badRequest("a signed role goes with the role's public keys (keys)") }
        if let raw = body["keys"] {
            guard let list = raw.arrayValue, (1...16).contains(list.count) else { throw .badRequest("keys must be an array of 1 to 16 TUF key objects") }
            for json in list {
                do { publicKeys.append(try TUFKey(json: json, role: role)) } catch { throw .badRequest("keys: not a TUF public key object: \(error)") }
            }
        }
        let (change, made) = try change(app: app, by: token) { registry throws(RegistryError) -> (DelegationChange, Bool) in
            var given: [SigningKey] = []
            var stored: URL?
            if publicKeys.isEmpty {
                // Checked before a key file is written for a role that cannot be made.
                try Registry.checkDelegatedRoleName(role)
                let key: SigningKey
                do throws(CryptoError) { key = try SigningKey.generateEd25519() } catch { throw .crypto(error) }
                stored = try registry.keys.storeDelegated(key, app: app, role: role)
                given = [key]
                publicKeys = [key.tufKey]
            }
            do throws(RegistryError) {
                return (try registry.delegate(app: app, channel: channel, role: role, keys: publicKeys, threshold: threshold,
                                              signingKeys: given, presignedRole: presigned, replace: replace, actor: token.actor), stored != nil)
            } catch {
                if let stored { try? FileManager.default.removeItem(at: stored) }
                throw keysHere(error, role: role)
            }
        }
        var json = change.json.objectValue ?? [:]
        json["app"] = JSON.string(app.rawValue)
        if made { json["serverKey"] = JSON.bool(true) }
        return .json(.object(json), status: change.replaced ? 200 : 201)
    }

    /// `DELETE /v1/apps/{app}/delegations/{channel}`: the channel's targets return to
    /// top-level targets. The delegation that ended.
    func undelegateChannel(_ request: HTTPRequest, _ p: PathParameters) throws(HTTPError) -> HTTPResponse {
        let app = try appCatalog(p["app"]).app
        let token = try caller(p)
        let channel = try PatchService.channel(p["channel"])
        let record = try change(app: app, by: token) { registry throws(RegistryError) -> DelegationRecord in
            do throws(RegistryError) { return try registry.undelegate(app: app, channel: channel, actor: token.actor) } catch {
                throw keysHere(error, role: nil)
            }
        }
        var json = record.json.objectValue ?? [:]
        json["app"] = JSON.string(app.rawValue)
        return .json(.object(json))
    }

    /// A registry check's refusal as the route's.
    static func checked(_ body: () throws(RegistryError) -> Void) throws(HTTPError) {
        do { try body() } catch { throw error.httpError }
    }

    /// A key the change needs that is not on the server is the caller's to fix (409, nothing
    /// changed), not the server's failure; the message says where the change can be made and
    /// names no file of the server's (the registry's own message may; it goes to the log).
    func keysHere(_ error: RegistryError, role: String?) -> RegistryError {
        switch error {
        case .keys, .signaturesNeeded: break
        default: return error
        }
        log("delegation change refused for want of a key: \(error)")
        guard let role else { return .conflict("this server does not hold the top-level targets key, which signs the end of a delegation: run it where that key is") }
        return .conflict("this server cannot sign it: it lacks a threshold of the role \(role)'s private keys (leave out keys to let the server make one, or sign where they are: --key-file) or the top-level targets key, which signs the delegation")
    }
}
