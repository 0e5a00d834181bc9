import Foundation
import HTTPTransport
import PatchCore
import PatchRegistry

/// The two-person rule over HTTP: changes waiting for signatures, and the signatures key
/// holders send (made on their machines; the server never sees their keys).
extension PatchService {
    /// The most an approval's body may hold: a few signatures.
    static let approvalBodyLimit = 16 << 10

    func pendingList(_ request: HTTPRequest, _ p: PathParameters) throws(HTTPError) -> HTTPResponse {
        let app = try appCatalog(p["app"]).app
        let all = try PatchService.flag(request, "all")
        let changes = try read { registry throws(RegistryError) in
            try registry.pendingChanges(app: app, states: all ? [.pending, .approved, .rejected, .superseded] : [.pending])
        }
        return .json(.array(changes.map(\.json)), headers: [("Cache-Control", "no-store")])
    }

    func pendingOne(_ request: HTTPRequest, _ p: PathParameters) throws(HTTPError) -> HTTPResponse {
        let app = try appCatalog(p["app"]).app
        let id = try PatchService.changeID(p["id"])
        let change = try read { registry throws(RegistryError) in try registry.pendingChange(app: app, id: id) }
        return .json(change.json, headers: [("Cache-Control", "no-store")])
    }

    /// `POST …/pending/{id}/approve` with `{"signatures": [{"keyid": hex, "sig": hex}]}`.
    func approvePending(_ request: HTTPRequest, _ p: PathParameters) throws(HTTPError) -> HTTPResponse {
        let app = try appCatalog(p["app"]).app
        let token = try caller(p)
        let id = try PatchService.changeID(p["id"])
        let shape = "body must be JSON like {\"signatures\": [{\"keyid\": \"…\", \"sig\": \"…\"}]}"
        let body: JSON
        do { body = try JSONParser.parse(request.body, maxLength: PatchService.approvalBodyLimit) } catch { throw .badRequest("\(shape): \(error)") }
        guard let list = body["signatures"]?.arrayValue, (1...16).contains(list.count) else { throw .badRequest("\(shape), 1 to 16 of them") }
        var signatures: [TUFSignature] = []
        for entry in list {
            guard let keyID = entry["keyid"]?.stringValue, Hex.isLowercase(keyID, byteCount: 32),
                  let sig = entry["sig"]?.stringValue.flatMap(Hex.decode), (1...1024).contains(sig.count) else {
                throw .badRequest("\(shape): each keyid is 64 lowercase hex digits, each sig hex")
            }
            signatures.append(TUFSignature(keyID: keyID, signature: sig))
        }
        let approval = try change(app: app, by: token) { registry throws(RegistryError) in
            try registry.approve(app: app, id: id, signatures: signatures, actor: token.actor)
        }
        return .json(approval.json, status: approval.result == nil ? 202 : 200, headers: [("Cache-Control", "no-store")])
    }

    func rejectPending(_ request: HTTPRequest, _ p: PathParameters) throws(HTTPError) -> HTTPResponse {
        let app = try appCatalog(p["app"]).app
        let token = try caller(p)
        let id = try PatchService.changeID(p["id"])
        let rejected = try change(app: app, by: token) { registry throws(RegistryError) in
            try registry.reject(app: app, id: id, reason: request.query("reason"), actor: token.actor)
        }
        return .json(rejected.json, headers: [("Cache-Control", "no-store")])
    }

    static func changeID(_ raw: String?) throws(HTTPError) -> Int64 {
        guard let raw, raw.utf8.count <= 18, raw.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let id = Int64(raw), id > 0 else {
            throw .badRequest("a change id is a positive integer")
        }
        return id
    }
}
