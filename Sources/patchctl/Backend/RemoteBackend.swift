import Foundation
import HotpatchCLI
import HTTPClientKit
import PatchCore
import PatchPush
import PatchRegistry
import PatchSigning

/// The operations over a patchd's HTTP API: each method one operation of the table, its
/// parameters as the route takes them; the answers are already the JSON the commands print.
struct RemoteBackend: Backend {
    let remote: Remote
    /// `--key-file`: keys that sign, here, a change the server stores as pending (only the
    /// signatures are sent).
    var keys: [SigningKey] = []
    var actor: Actor? { nil }
    var registry: Registry? { nil }
    var place: String { remote.base.absoluteString }

    /// The server answers 404 for an unknown app on the operation itself.
    func requireApp(_ app: AppName) throws(CLIError) {}

    func apps() throws(CLIError) -> [JSON] { try array(remote.json(.listApps), "app listing") }

    func patches(app: AppName, activeOnly: Bool) throws(CLIError) -> [JSON] {
        try array(remote.json(.listPatches, ["app": app.rawValue], query: ["active": activeOnly ? "true" : "false"]), "patch listing")
    }

    func status(app: AppName) throws(CLIError) -> JSON { try remote.json(.appStatus, ["app": app.rawValue]) }

    func stats(app: AppName) throws(CLIError) -> JSON { try remote.json(.appStats, ["app": app.rawValue], query: ["hours": "1"]) }

    /// Every page of /v1/audit from `after` on, following `next` until the server gives
    /// none; the chain verdict (asked for on the first page only) covers the whole log.
    func audit(app: AppName?, after: Int, pageSize: Int?, verify: Bool) throws(CLIError) -> [String: JSON] {
        var events: [JSON] = []
        var chain: JSON?
        var cursor = after
        while true {
            var query = ["after": String(cursor), "limit": String(pageSize ?? 1000)]
            if let app { query["app"] = app.rawValue }
            if verify && chain == nil { query["verify"] = "true" }
            let page = try remote.json(.getAudit, query: query).objectValue ?? [:]
            events += page["events"]?.arrayValue ?? []
            if chain == nil { chain = page["chain"] }
            guard let next = page["next"]?.intValue else { break }
            guard next > cursor else { throw .failed("the server's audit listing did not advance past event \(cursor)") }
            cursor = Int(next)
        }
        var result: [String: JSON] = ["events": .array(events)]
        if let chain { result["chain"] = chain }
        return result
    }

    func channels(app: AppName) throws(CLIError) -> [String] {
        try array(remote.json(.listChannels, ["app": app.rawValue]), "channel listing").compactMap(\.stringValue)
    }

    func askedVersions(app: AppName) throws(CLIError) -> JSON {
        let answer = try remote.json(.listAppVersions, ["app": app.rawValue])
        guard answer["versions"]?.arrayValue != nil else { throw .failed("the server's version listing is not {\"versions\": […]}") }
        return answer
    }

    func tokens(app: AppName?) throws(CLIError) -> [JSON] {
        try array(remote.json(.listTokens, query: app.map { ["app": $0.rawValue] } ?? [:]), "token listing")
    }

    func script(app: AppName, version: AppVersion, patch: Int) throws(CLIError) -> [UInt8] {
        try remote.bytes(.patchScript, ["app": app.rawValue, "appVersion": version.rawValue, "patch": String(patch)])
    }

    func throttle(app: AppName) throws(CLIError) -> JSON { try remote.json(.getThrottle, ["app": app.rawValue]) }

    func webhooks(app: AppName) throws(CLIError) -> [JSON] {
        try array(remote.json(.listWebhooks, ["app": app.rawValue])["webhooks"] ?? .null, "webhook listing")
    }

    func export(app: AppName, to out: URL, layout: ExportLayout, lifetime: TimeInterval?, trustedRoot: [UInt8]?) throws(CLIError) -> ExportSummary {
        guard lifetime == nil else {
            throw .usage("--expires re-signs with the registry's keys: over --server an export holds what the server serves (re-export before its timestamp expires), or run it where the registry is")
        }
        // The device's fetcher and caps; every file it serves in full is kept for the mirror.
        let recorder = RecordingFetcher(HTTPRepository(server: remote.base, app: app, requestTimeout: 30, transferTimeout: 120))
        let base = remote.base
        let outcome = blockingWait { () async -> Result<VerificationReport, CLIError> in
            do throws(CLIError) { return .success(try await RemoteBackend.mirror(recorder, app: app, from: base, trustedRoot: trustedRoot)) } catch {
                return .failure(error)
            }
        }
        let report = try outcome.get()
        guard report.ok else {
            let bad = report.targets.filter { !$0.ok }.map { "\($0.path): \($0.problem ?? "")" }.joined(separator: "; ")
            throw .verificationFailed("the server's repository does not verify (\(bad)); nothing was written")
        }
        do { return try ExportWriter.write(recorder.files, appRoot: layout.appRoot(out, app: app)) } catch { throw error.cliError }
    }

    /// Reads the root chain from 1 up to the trusted root (a device embedding any of them walks
    /// it from the mirror), then walks the repository from the trusted root as a device does.
    private static func mirror(_ recorder: RecordingFetcher, app: AppName, from base: URL, trustedRoot: [UInt8]?) async throws(CLIError) -> VerificationReport {
        func root(_ version: Int64) async throws(CLIError) -> [UInt8] {
            let body = DownloadBody(limit: TrustedMetadata.maxRootLength)
            let head: FetchHead
            do { head = try await recorder.fetch(.metadata("\(version).root.json"), headers: [:], into: body) } catch {
                throw .failed("cannot read \(version).root.json of \(app) from \(base.absoluteString): \(error)")
            }
            guard head.status == 200, !body.isOverLimit else {
                throw .failed("\(base.absoluteString) serves no \(version).root.json for \(app) (HTTP \(head.status)): unknown app?")
            }
            return body.received
        }
        let first = try await root(1)
        let trusted = trustedRoot ?? first
        let version: Int64
        do { version = try SignedRoot(bytes: trusted, maxLength: TrustedMetadata.maxRootLength).body.version } catch {
            throw .usage("--root is not a TUF root: \(error)")
        }
        var served = first
        if version > 1 {
            for v in 2...version { served = try await root(v) }
        }
        // The same root, whitespace aside (`apps root` ends its output with a newline).
        guard served == trusted || (try? JSONParser.parse(served)).map({ $0 == (try? JSONParser.parse(trusted)) }) == true else {
            throw .verificationFailed("the server's \(version).root.json is not the --root given; nothing was written")
        }
        do { return try await RepositoryVerifier.verify(fetcher: recorder, trustedRoot: trusted, app: app.rawValue) } catch {
            switch error {
            case .rejected(let message): throw .verificationFailed("the server's repository does not verify: \(message); nothing was written")
            case .couldNotRun(let message): throw .failed(message)
            }
        }
    }

    /// Every release operation: its request as the operation encodes it (the same codec
    /// patchd decodes with), the server's answer, a 202 signed here when the keys are.
    func perform<Operation: ReleaseOperation>(_ operation: Operation, app: AppName?, _ options: CallOptions) throws(CLIError) -> Performed {
        let request = operation.request(app: app, options)
        let response = try remote.send(request.route, request.path, query: request.query, headers: request.headers, body: request.body)
        if response.status == 409, let error = (try? JSONParser.parse(response.body))?["error"],
           error["code"]?.stringValue == "confirmation_required", let message = error["message"]?.stringValue {
            return .needsConfirmation(message)
        }
        return .done(try change(response))
    }

    func pushAudience(app: AppName, version: AppVersion?, channel: ChannelName?) throws(CLIError) -> Int {
        var query = ["dryRun": "true"]
        if let version { query["appVersion"] = version.rawValue }
        if let channel { query["channel"] = channel.rawValue }
        guard let devices = try remote.json(.notifyDevices, ["app": app.rawValue], query: query)["devices"]?.intValue else {
            throw .failed("the server's push dry run names no device count")
        }
        return Int(devices)
    }

    func notify(app: AppName, version: AppVersion?, channel: ChannelName?, reason: String) throws(CLIError) -> PushSummary {
        var query = ["reason": reason]
        if let version { query["appVersion"] = version.rawValue }
        if let channel { query["channel"] = channel.rawValue }
        let json = try remote.json(.notifyDevices, ["app": app.rawValue], query: query)
        guard let summary = PushSummary(json: json) else { throw .failed("the server's push answer is not a push summary") }
        return summary
    }

    func pending(app: AppName, all: Bool) throws(CLIError) -> [JSON] {
        try array(remote.json(.listPending, ["app": app.rawValue], query: all ? ["all": "true"] : [:]), "pending listing")
    }

    func approve(app: AppName, id: Int64) throws(CLIError) -> JSON {
        guard !keys.isEmpty else { throw .usage("approving needs --key-file with one of the keys the change waits for") }
        let pending = try remote.json(.getPending, ["app": app.rawValue, "id": String(id)])
        return try sign(pending, required: true)
    }

    func reject(app: AppName, id: Int64, reason: String?) throws(CLIError) -> JSON {
        try remote.json(.rejectPending, ["app": app.rawValue, "id": String(id)], query: reason.map { ["reason": $0] } ?? [:])
    }

    /// One change: its answer, or for a 202 (stored as pending: the server lacks keys it
    /// needs) the pending change signed here with `keys` and approved.
    private func change(_ response: Remote.Response) throws(CLIError) -> JSON {
        let bytes = try remote.answer(response)
        guard let parsed = try? JSONParser.parse(bytes) else { throw .failed("server sent a body that is not JSON") }
        guard response.status == 202, let pending = parsed["pending"] else { return parsed }
        let approval = try sign(pending, required: false)
        if let result = approval["result"] { return result }
        throw .pending(PendingText.line(approval), json: approval)
    }

    /// Signs a pending change's metadata (its `signed`, as canonical JSON: what a device
    /// verifies) with those of `keys` the change waits for, and sends the signatures: the
    /// server's answer (the change, and its operation's `result` when it landed). With no
    /// usable key, `CLIError.pending`; `required` (an explicit approve): an error instead.
    private func sign(_ pending: JSON, required: Bool) throws(CLIError) -> JSON {
        guard let app = pending["app"]?.stringValue, let id = pending["id"]?.intValue, let signed = pending["signed"],
              let listed = pending["keyids"]?.arrayValue?.compactMap(\.stringValue) else {
            throw .failed("the server's pending change is not the shape patchctl signs")
        }
        guard signed["_type"]?.stringValue == "targets" else { throw .failed("the server asked to sign \(signed["_type"]?.stringValue ?? "something") metadata, not targets: refused") }
        let done = Set(pending["signedBy"]?.arrayValue?.compactMap(\.stringValue) ?? [])
        let usable = keys.filter { listed.contains($0.tufKey.keyID) && !done.contains($0.tufKey.keyID) }
        guard !usable.isEmpty else {
            if required { throw .failed("none of the --key-file keys is a key change \(id) still needs (keyids \(listed.map { String($0.prefix(12)) + "…" }.joined(separator: ", ")))") }
            throw .pending(PendingText.line(pending), json: pending)
        }
        let message = signed.canonicalBytes
        var signatures: [JSON] = []
        do {
            for key in usable { signatures.append(TUFSignature(keyID: key.tufKey.keyID, signature: try key.signature(for: message)).json) }
        } catch { throw .failed("cannot sign change \(id): \(error)") }
        return try remote.json(.approvePending, ["app": app, "id": String(id)], body: JSON.object(["signatures": .array(signatures)]).canonicalBytes)
    }

    private func array(_ json: JSON, _ what: String) throws(CLIError) -> [JSON] {
        guard let array = json.arrayValue else { throw .failed("the server's \(what) is not a JSON array") }
        return array
    }
}
