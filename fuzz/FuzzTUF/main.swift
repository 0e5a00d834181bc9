import Foundation
import FuzzSupport
import PatchCore
import PatchSigning

/// TUF metadata: the four role parsers and the client workflow (TrustedMetadata).
///
/// The input is 0xFF-separated records, each an operation byte and its argument:
///   R T S G  raw bytes offered as the next root / timestamp / snapshot / targets file
///   r t s g  a key mask byte, then the `signed` body as JSON: the harness signs it with the
///            masked harness keys, so the fuzzer gets past signatures to versions, pins,
///            expiry and rollback (`$K1`…`$K5` and `$P1`…`$P5` in it stand for the harness
///            key ids and public keys)
///   P / p    raw / harness-signed root pinned as the trusted root (starts over)
///   W        a TUF time: the reference time (2030-01-01 until set) of a fresh start from
///            the current root
///   C        resume from the accepted files, as the client does from its cache
/// Every file offered is also parsed on its own by the parser of its role.
///
/// Invariants: nothing crashes; a parsed body re-parses from its own JSON to an equal body;
/// a refused file leaves the trusted state unchanged; an accepted one moves it only as the
/// spec allows (root N+1, no timestamp or snapshot rollback, snapshot and targets exactly
/// the pinned version); resuming from the accepted files never trusts more than was trusted.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var session = Session()
    for record in FuzzInput(data, size).records {
        guard let op = record.first else { continue }
        session.run(op, Array(record.dropFirst()))
    }
    return 0
}

/// Five fixed keys (seeds 0x01… to 0x05…), so the corpus can hold bodies the harness signs.
/// The pinned root gives key 1 to root, 2 to timestamp, 3 to snapshot, 4 to targets;
/// key 5 is a spare for rotations.
/// Everything here is built from constants, so its `try!`s cannot fail.
enum Harness {
    static let keys: [Ed25519PrivateKey] = (1...5).map { seed in
        try! Ed25519PrivateKey(rawRepresentation: [UInt8](repeating: UInt8(seed), count: 32))
    }
    static let defaultTime = TUFTime.parse("2030-01-01T00:00:00Z")!
    /// Root version 1, expiring in 2031, signed by key 1.
    static let pinnedRoot: [UInt8] = {
        let ids = keys.map(\.tufKey.keyID)
        let body = RootBody(common: CommonFields(version: 1, expires: TUFTime.parse("2031-01-01T00:00:00Z")!),
                            keys: Dictionary(uniqueKeysWithValues: keys.map { ($0.tufKey.keyID, $0.tufKey) }),
                            roles: [.root: RoleKeys(keyIDs: [ids[0]]), .timestamp: RoleKeys(keyIDs: [ids[1]]),
                                    .snapshot: RoleKeys(keyIDs: [ids[2]]), .targets: RoleKeys(keyIDs: [ids[3]])])
        return try! SignedRoot(signing: body, with: [keys[0]]).bytes
    }()

    /// The state every input starts from.
    static let initial = try! TrustedMetadata(trustedRoot: pinnedRoot, referenceTime: defaultTime)

    /// `$K1`…`$K5` and `$P1`…`$P5` in a body the harness signs stand for the key ids and
    /// public keys, so corpus files stay readable and survive a change of the harness keys.
    static let placeholders: [(String, String)] = keys.enumerated().flatMap { index, key in
        [("$K\(index + 1)", key.tufKey.keyID), ("$P\(index + 1)", key.publicKey.hex)]
    }

    /// `{"signed": body, "signatures": [...]}` signed by the keys whose bit is set in `mask`.
    static func envelope(_ argument: [UInt8]) -> [UInt8]? {
        guard let mask = argument.first else { return nil }
        var text = Array(argument.dropFirst())
        if text.contains(UInt8(ascii: "$")), var string = String(validating: text, as: UTF8.self) {
            for (placeholder, value) in placeholders { string = string.replacingOccurrences(of: placeholder, with: value) }
            text = Array(string.utf8)
        }
        guard let body = try? JSONParser.parse(text) else { return nil }
        let message = body.canonicalBytes
        var signatures: [JSON] = []
        for (bit, key) in keys.enumerated() where mask & (1 << bit) != 0 {
            guard let signature = try? key.signature(for: message) else { return nil }
            signatures.append(["keyid": .string(key.tufKey.keyID), "sig": .string(Hex.encode(signature))])
        }
        return JSON.object(["signed": body, "signatures": .array(signatures)]).canonicalBytes
    }
}

struct Session {
    var time = Harness.defaultTime
    var trusted: TrustedMetadata
    /// The files as accepted, what a client cache would hold.
    var root = Harness.pinnedRoot
    var timestamp: [UInt8]?
    var snapshot: [UInt8]?
    var targets: [UInt8]?

    init() { trusted = Harness.initial }

    mutating func run(_ op: UInt8, _ argument: [UInt8]) {
        let signed = (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(op)
        let file: [UInt8]
        if signed {
            guard let envelope = Harness.envelope(argument) else { return }
            file = envelope
        } else {
            file = argument
        }
        checkParser(for: op, file)

        switch op {
        case UInt8(ascii: "P"), UInt8(ascii: "p"): pin(file)
        case UInt8(ascii: "W"):
            guard let when = TUFTime.parse(String(decoding: argument, as: UTF8.self)) else { return }
            time = when
            pin(root)
        case UInt8(ascii: "C"): checkResume()
        case UInt8(ascii: "R"), UInt8(ascii: "r"): offerRoot(file)
        case UInt8(ascii: "T"), UInt8(ascii: "t"): offerTimestamp(file)
        case UInt8(ascii: "S"), UInt8(ascii: "s"): offerSnapshot(file)
        case UInt8(ascii: "G"), UInt8(ascii: "g"): offerTargets(file)
        default: break
        }
    }

    mutating func pin(_ file: [UInt8]) {
        let fresh: TrustedMetadata
        do { fresh = try TrustedMetadata(trustedRoot: file, referenceTime: time) } catch {
            trace("pin refused: \(error)")
            return
        }
        trace("pinned root \(fresh.root.body.version) at \(TUFTime.format(time))")
        invariant(fresh.timestamp == nil && fresh.snapshot == nil && fresh.targets == nil, "a fresh start trusts more than a root")
        trusted = fresh
        (root, timestamp, snapshot, targets) = (file, nil, nil, nil)
    }

    mutating func offerRoot(_ file: [UInt8]) {
        let before = trusted
        do {
            try trusted.updateRoot(file)
            invariant(before.timestamp == nil, "root updated after the timestamp")
            invariant(trusted.root.body.version == before.root.body.version + 1,
                      "root \(before.root.body.version) replaced by \(trusted.root.body.version)")
            root = file
            trace("root \(trusted.root.body.version) accepted")
        } catch {
            trace("root refused: \(error)")
            checkUnchanged(before, "refused root")
        }
    }

    mutating func offerTimestamp(_ file: [UInt8]) {
        let before = trusted
        do {
            let changed = try trusted.updateTimestamp(file)
            let new = trusted.timestamp?.body
            invariant(new != nil, "accepted timestamp not kept")
            if let old = before.timestamp?.body, let new {
                invariant(new.version >= old.version, "timestamp rolled back from \(old.version) to \(new.version)")
                invariant(new.snapshot.version >= old.snapshot.version, "snapshot pin rolled back")
                invariant(changed == (new.version > old.version), "timestamp \(old.version) → \(new.version) reported changed: \(changed)")
            }
            trace("timestamp \(new?.version ?? 0) accepted, changed: \(changed)")
            if changed { timestamp = file } else { checkUnchanged(before, "same-version timestamp") }
        } catch {
            trace("timestamp refused: \(error)")
            checkUnchanged(before, "refused timestamp")
        }
    }

    mutating func offerSnapshot(_ file: [UInt8]) {
        let before = trusted
        do {
            try trusted.updateSnapshot(file)
            invariant(trusted.snapshot?.body.version == trusted.timestamp?.body.snapshot.version, "snapshot is not the pinned version")
            invariant(trusted.targets == nil, "targets kept across a new snapshot")
            if let old = before.snapshot?.body, let new = trusted.snapshot?.body {
                for (name, meta) in old.meta {
                    invariant((new.meta[name]?.version ?? .min) >= meta.version, "\(name) rolled back in snapshot")
                }
            }
            snapshot = file
            targets = nil
            trace("snapshot \(trusted.snapshot?.body.version ?? 0) accepted")
        } catch {
            trace("snapshot refused: \(error)")
            checkUnchanged(before, "refused snapshot")
        }
    }

    mutating func offerTargets(_ file: [UInt8]) {
        let before = trusted
        do {
            try trusted.updateTargets(file)
            invariant(trusted.targets?.body.version == trusted.snapshot?.body.meta["targets.json"]?.version, "targets is not the pinned version")
            targets = file
            trace("targets \(trusted.targets?.body.version ?? 0) accepted")
        } catch {
            trace("targets refused: \(error)")
            checkUnchanged(before, "refused targets")
        }
    }

    func checkUnchanged(_ before: TrustedMetadata, _ what: String) {
        invariant(trusted.root == before.root && trusted.timestamp == before.timestamp && trusted.snapshot == before.snapshot
                  && trusted.targets == before.targets, "\(what) changed the trusted state")
    }

    /// The client's cache: the same files resume to the same timestamp, and a snapshot or
    /// targets file comes back only as it was trusted (it may be dropped when a later
    /// timestamp pins another version).
    func checkResume() {
        guard let resumed = try? TrustedMetadata(trustedRoot: root, timestamp: timestamp, snapshot: snapshot, targets: targets, referenceTime: time) else {
            invariant(false, "the trusted root does not resume")
            return
        }
        invariant(resumed.root == trusted.root, "resumed another root")
        invariant(resumed.timestamp == trusted.timestamp, "resumed timestamp \(resumed.timestamp?.body.version ?? 0), trusted \(trusted.timestamp?.body.version ?? 0)")
        invariant(resumed.snapshot == nil || resumed.snapshot == trusted.snapshot, "resumed a snapshot that was not trusted")
        invariant(resumed.targets == nil || (resumed.snapshot != nil && resumed.targets == trusted.targets), "resumed targets that were not trusted")
        trace("resumed: timestamp \(resumed.timestamp != nil), snapshot \(resumed.snapshot != nil), targets \(resumed.targets != nil)")
    }

    /// The parser of the role the record is offered as (the same bytes offered as another
    /// role are a mutation away).
    func checkParser(for op: UInt8, _ file: [UInt8]) {
        switch op | 0x20 {
        case UInt8(ascii: "r"), UInt8(ascii: "p"): checkRoundTrip(SignedRoot.self, file)
        case UInt8(ascii: "t"): checkRoundTrip(SignedTimestamp.self, file)
        case UInt8(ascii: "s"): checkRoundTrip(SignedSnapshot.self, file)
        case UInt8(ascii: "g"): checkRoundTrip(SignedTargets.self, file)
        default: break
        }
    }

    /// A parsed body written back as JSON parses to an equal body.
    func checkRoundTrip<Body: RoleBody>(_ type: SignedMetadata<Body>.Type, _ file: [UInt8]) {
        guard let parsed = try? SignedMetadata<Body>(bytes: file) else { return }
        do {
            let again = try Body(signed: parsed.body.signedJSON)
            invariant(again == parsed.body, "\(Body.role) body changes when written back: \(file.debugDescriptionForFuzzing)")
        } catch {
            invariant(false, "\(Body.role) body does not re-parse from its own JSON (\(error)): \(file.debugDescriptionForFuzzing)")
        }
    }
}

runLibFuzzer(fuzz)
