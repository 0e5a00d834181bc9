import Foundation

/// The withhold role (docs/PROTOCOL.md, "Withhold"): a delegated targets role whose keys can
/// only take patches away. Top-level targets delegates it with no paths, so no targets search
/// (ours, python-tuf's) ever consults it for a target; its file, `withhold.json`, lists no
/// targets and carries the withheld ones in a `withheld` member of `signed`, which clients
/// that do not know the role keep as an unrecognised field and ignore.
///
/// An entry names a target path and the sha256 its signed entry has. It applies only to a
/// target the trusted targets metadata lists under that path with that hash: a withhold can
/// stop a device installing (`halt`) or make it drop (`rollBack`) a patch the production keys
/// signed, never make it run anything they did not, so a stolen withhold key denies and does
/// nothing more.
public struct Withholds: Sendable, Equatable {
    /// The role's name, reserved: no channel delegation may take it.
    public static let roleName = "withhold"
    /// The member of `signed` that holds the entries.
    static let member = "withheld"
    /// More entries than any registry keeps (it prunes those of unlisted targets): a file with
    /// more is refused, so a huge one costs a client nothing past its length cap.
    public static let maxEntries = 4_096
    static let maxReason = 512

    public struct Entry: Sendable, Equatable {
        /// The sha256 of the target as signed (hex, lowercase).
        public let sha256: String
        /// true: devices that run it drop it (back to the newest patch not withheld); false: no
        /// device installs it, the devices that run it keep it (a halt).
        public let rollBack: Bool
        /// Why, as the person or guard gave it: what a device reports with its rollback.
        public let reason: String

        public init(sha256: String, rollBack: Bool, reason: String) {
            self.sha256 = sha256
            self.rollBack = rollBack
            self.reason = reason
        }

        var json: JSON { ["sha256": .string(sha256), "rollBack": .bool(rollBack), "reason": .string(reason)] }
    }

    /// By target path.
    public var entries: [String: Entry]

    public init(entries: [String: Entry] = [:]) { self.entries = entries }

    /// The entries of a verified `withhold.json`. Refused when it lists targets or delegates
    /// (the role can add nothing), or when an entry is malformed.
    public init(body: TargetsBody) throws(TUFError) {
        let role = Withholds.roleName
        guard body.targets.isEmpty else { throw .malformed(role: role, reason: "the withhold role may list no targets") }
        guard body.delegations == nil else { throw .malformed(role: role, reason: "the withhold role may delegate nothing") }
        guard let raw = body.common.extra[Withholds.member] else {
            entries = [:]
            return
        }
        guard let object = raw.objectValue else { throw .malformed(role: role, reason: "withheld must be an object of target paths") }
        guard object.count <= Withholds.maxEntries else { throw .malformed(role: role, reason: "withheld lists more than \(Withholds.maxEntries) targets") }
        var entries: [String: Entry] = [:]
        for (path, value) in object {
            guard let entry = value.objectValue, let sha256 = entry["sha256"]?.stringValue, Withholds.isSHA256(sha256),
                  let rollBack = entry["rollBack"]?.boolValue, let reason = entry["reason"]?.stringValue,
                  reason.utf8.count <= Withholds.maxReason, entry.count == 3 else {
                throw .malformed(role: role, reason: "withheld \(path.debugSanitized): needs exactly sha256 (64 lowercase hex), rollBack (boolean) and reason (at most \(Withholds.maxReason) bytes)")
            }
            entries[path] = Entry(sha256: sha256, rollBack: rollBack, reason: reason)
        }
        self.entries = entries
    }

    /// The role's next metadata: no targets, these entries.
    public func body(version: Int64, expires: Date) -> TargetsBody {
        var common = CommonFields(version: version, expires: expires)
        common.extra[Withholds.member] = .object(entries.mapValues(\.json))
        return TargetsBody(common: common, targets: [:])
    }

    /// What applies to the target `path`, signed as `file`: nil unless an entry names that path
    /// with the target's own sha256.
    public func entry(path: String, file: TargetFile) -> Entry? {
        guard let entry = entries[path], file.hashes["sha256"] == entry.sha256 else { return nil }
        return entry
    }

    /// The targets as devices act on them, the one reading PatchClient and patchd's simple
    /// check share: a target withheld to roll back is left out (a device that runs it drops it,
    /// as after a revoke), one withheld as a halt stays listed and is named in `halted` (offered
    /// to no device, kept by those that run it, as at rollout 0).
    public func apply(to targets: [String: TargetFile]) -> (listed: [String: TargetFile], halted: Set<String>) {
        guard !entries.isEmpty else { return (targets, []) }
        var listed = targets, halted: Set<String> = []
        for (path, file) in targets {
            guard let entry = entry(path: path, file: file) else { continue }
            if entry.rollBack { listed[path] = nil } else { halted.insert(path) }
        }
        return (listed, halted)
    }

    /// How top-level targets delegates the role: its keys, no paths (never searched), not
    /// terminating (it ends no search it is never part of).
    public static func delegatedRole(keyIDs: [String], threshold: Int) -> DelegatedRole {
        DelegatedRole(name: roleName, keyIDs: keyIDs.sorted(), threshold: threshold, scope: .paths([]), terminating: false)
    }

    /// Whether `role` is the withhold role as a delegator must list it: the name, and no paths.
    public static func isWithholdRole(_ role: DelegatedRole) -> Bool {
        role.name == roleName && role.scope == .paths([])
    }

    static func isSHA256(_ text: String) -> Bool {
        text.utf8.count == 64 && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }
}
