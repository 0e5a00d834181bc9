import Foundation
import PatchCore
import PatchRegistry
import PatchSigning

// What `patchctl keys delegate` and `keys undelegate` do, over HTTP: the same registry calls,
// answering the JSON those commands print with --json.
extension PatchService {
    /// The delegation route's JSON body, at most: 16 TUF key objects fit with room to spare.
    static let delegationBodyLimit = 16_384

    /// `POST /v1/apps/{app}/delegations`: `{"channel", "name", "keys"?, "threshold"?, "replace"?}`.
    /// No `keys`: the server makes the role's key and keeps it. 201 for a new delegation, 200
    /// for a rotation (`replace`).
    func delegateChannel(_ request: HTTPRequest, _ p: PathParameters) throws(HTTPError) -> HTTPResponse {
        let app = try appCatalog(p["app"]).app
        let token = try caller(p)
        let body = try PatchService.object(request, limit: PatchService.delegationBodyLimit, members: ["channel", "name", "keys", "threshold", "replace"],
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
        var publicKeys: [TUFKey] = []
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
                                              signingKeys: given, replace: replace, actor: token.actor), stored != nil)
            } catch {
                if let stored { try? FileManager.default.removeItem(at: stored) }
                throw PatchService.keysHere(error, role: role)
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
                throw PatchService.keysHere(error, role: nil)
            }
        }
        var json = record.json.objectValue ?? [:]
        json["app"] = JSON.string(app.rawValue)
        return .json(.object(json))
    }

    /// A key the change needs that is not on the server is the caller's to fix (409, nothing
    /// changed), not the server's failure; the message says where the change can be made.
    static func keysHere(_ error: RegistryError, role: String?) -> RegistryError {
        guard case .keys(let message) = error else { return error }
        let fix = role.map { " (a key of the role \($0): leave out keys to let the server make one, or delegate where the key is, a local registry with --key-file)" } ?? ""
        return .conflict("this server cannot sign it: \(message)\(fix)")
    }
}
