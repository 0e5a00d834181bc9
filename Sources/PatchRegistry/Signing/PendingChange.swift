import Foundation
import PatchCore
import PatchSigning

/// A change as it was asked for: what `approve` runs again, at the time it was proposed, once
/// enough key holders have signed the metadata it makes.
///
/// Stored as the arguments, not as its effect: the registry's tables only ever hold what is
/// signed and served, so a pending change leaves them exactly as they were (nothing to
/// undo when it is rejected, nothing a listing or the server could show early).
public enum ReleaseChange: Sendable, Equatable {
    /// A release operation (`ReleaseOperations.all`): its kind and its parameters in the one
    /// wire form its routes take, so what is stored is what was sent.
    case operation(kind: String, values: OperationValues)
    /// `keys set --role targets`: the keys (and how many of them) that sign top-level targets
    /// from now on. Pending like a release: the targets the new root needs are signed by the
    /// new keys.
    case targetsKeys(keys: [TUFKey], threshold: Int)

    public init(_ operation: some ReleaseOperation) {
        self = .operation(kind: type(of: operation).definition.kind, values: operation.values)
    }

    public var kind: String {
        switch self {
        case .operation(let kind, _): kind
        case .targetsKeys: "targets-keys"
        }
    }

    /// A publish's bundle, kept in its own column.
    public var bundle: [UInt8]? {
        if case .operation(_, let values) = self { return values.bundle }
        return nil
    }

    /// One line for listings: what the change does.
    public var summary: String {
        switch self {
        case .operation(let kind, let values): (try? ReleaseOperations.decode(kind, values))?.summary ?? kind
        case .targetsKeys(let keys, let threshold): "targets signed by \(threshold) of \(keys.count) keys"
        }
    }

    /// The stored form, without a publish's bundle (kept in its own column).
    var json: JSON {
        switch self {
        case .operation(let kind, let values):
            guard let type = ReleaseOperations.type(kind) else { return ["kind": .string(kind)] }
            return values.json(type.definition)
        case .targetsKeys(let keys, let threshold):
            return ["kind": .string(kind), "keys": .object(Dictionary(uniqueKeysWithValues: keys.map { ($0.keyID, $0.json) })),
                    "threshold": .int(Int64(threshold))]
        }
    }

    /// Reads the stored form back (written by this code, so anything else is corruption).
    init(json: JSON, bundle: [UInt8]?) throws(RegistryError) {
        func bad(_ what: String) -> RegistryError { .internalError("a stored pending change does not parse: \(what)") }
        guard let object = json.objectValue, let kind = object["kind"]?.stringValue else { throw bad("no kind") }
        func int(_ key: String) -> Int? { object[key]?.intValue.map { Int($0) } }
        if ReleaseOperations.type(kind) != nil {
            let values = OperationValues(stored: object, bundle: bundle)
            do { _ = try ReleaseOperations.decode(kind, values) } catch { throw bad("\(kind): \(error)") }
            self = .operation(kind: kind, values: values)
            return
        }
        do {
            switch kind {
            case "targets-keys":
                guard let keys = object["keys"]?.objectValue, let threshold = int("threshold") else { throw bad("targets-keys") }
                self = .targetsKeys(keys: try keys.keys.sorted().map { try TUFKey(json: keys[$0]!, role: "targets") }, threshold: threshold)
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
        if let bundle = change.bundle { out["bundleSha256"] = .string(Digest.sha256Hex(bundle)) }
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
