/// One target entry as hotpatch lays it out, in both directions: the registry builds the
/// signed path and `custom` object from it, and PatchClient, the verifier, patchd and the
/// JSPatch packages read them back through `init?(path:file:)`. The one home of the
/// target layout (docs/PROTOCOL.md section 4).
///
/// Path: `{appVersion}/{patch}/main.js` for the production channel, and
/// `{channel}/{appVersion}/{patch}/main.js` for any other; a patch with delivery conditions
/// is named `main.conditional.js` instead of `main.js`, so a client built before conditions
/// (which reads only `main.js` targets) never installs it on a device the conditions exclude. The channel is thus inside the
/// signed targets metadata, and production paths are the ones clients built before
/// channels read, so such a client never sees another channel's patch (it reads only
/// three-component paths). Patch numbers are one sequence per app version across channels,
/// so a number names one patch and one ciphertext (the AAD binds the number).
///
/// `custom`: patch, rollout, published, plaintext {length, sha256, md5}, optionally
/// encryption {alg, keyid}, message (release notes), promotedFrom {channel, patch, sha256}
/// (the patch of another channel whose plaintext this one is), rolledBackTo {channel, patch,
/// sha256} (the earlier patch of its own channel whose plaintext it republishes: `rollback --to`),
/// conditions (DeliveryConditions).
public struct PatchTargetInfo: Sendable, Equatable {
    public struct Encryption: Sendable, Equatable {
        public let algorithm: String
        public let keyID: String

        public init(algorithm: String = BundleCipher.algorithm, keyID: String) {
            self.algorithm = algorithm
            self.keyID = keyID
        }
    }

    /// Where a promoted patch came from: the other channel's patch and its plaintext sha256,
    /// which equals this patch's plaintext sha256 (what QA tested is what ships).
    public struct Origin: Sendable, Equatable {
        public let channel: ChannelName
        public let patch: Int
        public let sha256: String

        public init(channel: ChannelName, patch: Int, sha256: String) {
            self.channel = channel
            self.patch = patch
            self.sha256 = sha256
        }

        public var json: JSON { ["channel": .string(channel.rawValue), "patch": .int(Int64(patch)), "sha256": .string(sha256)] }

        public init?(_ json: JSON) {
            guard let raw = json["channel"]?.stringValue, let channel = try? ChannelName(raw), let patch = json["patch"]?.intValue, patch >= 1,
                let sha256 = json["sha256"]?.stringValue else { return nil }
            self.init(channel: channel, patch: Int(patch), sha256: sha256)
        }
    }

    public let path: String
    public let appVersion: String
    public let channel: ChannelName
    public let patch: Int
    public private(set) var rollout: Int
    public let published: String
    public let plaintext: BundleDigests
    public let encryption: Encryption?
    /// Release notes, signed with the target.
    public let message: String?
    public let promotedFrom: Origin?
    /// The earlier patch of the same channel this one republishes (`rollback --to`).
    public let rolledBackTo: Origin?
    /// Signed delivery conditions: only the devices they admit may get the patch.
    public let conditions: DeliveryConditions?

    /// What the registry signs for one patch.
    public init(appVersion: AppVersion, channel: ChannelName, patch: Int, rollout: Int, published: String, plaintext: BundleDigests,
                encryption: Encryption?, message: String?, promotedFrom: Origin?, rolledBackTo: Origin? = nil, conditions: DeliveryConditions? = nil) {
        self.path = PatchTargetInfo.path(appVersion: appVersion.rawValue, channel: channel, patch: patch, conditional: conditions != nil)
        self.conditions = conditions
        self.appVersion = appVersion.rawValue
        self.channel = channel
        self.patch = patch
        self.rollout = rollout
        self.published = published
        self.plaintext = plaintext
        self.encryption = encryption
        self.message = message
        self.promotedFrom = promotedFrom
        self.rolledBackTo = rolledBackTo
    }

    /// Reads a signed target entry; nil when it is not one of hotpatch's patches.
    public init?(path: String, file: TargetFile) {
        var parts = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        var channel = ChannelName.production
        if parts.count == 4 {
            // An explicit "production/" prefix would give one patch two names: refused.
            guard let named = try? ChannelName(parts[0]), named != .production else { return nil }
            channel = named
            parts.removeFirst()
        }
        guard parts.count == 3, parts[2] == "main.js" || parts[2] == PatchTargetInfo.conditionalFileName, let version = try? AppVersion(parts[0]),
            let custom = file.custom, let patch = custom["patch"]?.intValue, String(patch) == parts[1], patch >= 1,
            let rollout = custom["rollout"]?.intValue, (0...100).contains(rollout),
            let published = custom["published"]?.stringValue,
            let plain = custom["plaintext"], let length = plain["length"]?.intValue, length >= 0,
            let sha256 = plain["sha256"]?.stringValue, let md5 = plain["md5"]?.stringValue else { return nil }
        if let encryption = custom["encryption"] {
            guard let alg = encryption["alg"]?.stringValue, alg == BundleCipher.algorithm,
                let keyID = encryption["keyid"]?.stringValue else { return nil }
            self.encryption = Encryption(algorithm: alg, keyID: keyID)
        } else {
            self.encryption = nil
        }
        if let message = custom["message"] {
            guard let text = message.stringValue else { return nil }
            self.message = text
        } else {
            self.message = nil
        }
        if let origin = custom["promotedFrom"] {
            guard let parsed = Origin(origin) else { return nil }
            self.promotedFrom = parsed
        } else {
            self.promotedFrom = nil
        }
        if let origin = custom["rolledBackTo"] {
            // Its own channel's earlier patch, with the plaintext this one carries.
            guard let parsed = Origin(origin), parsed.channel == channel, parsed.patch < patch, parsed.sha256 == sha256 else { return nil }
            self.rolledBackTo = parsed
        } else {
            self.rolledBackTo = nil
        }
        // The file name says whether there are conditions, and the conditions must parse:
        // neither can be dropped or added without the other (fail closed, see above).
        if let conditions = custom["conditions"] {
            guard parts[2] == PatchTargetInfo.conditionalFileName, let parsed = DeliveryConditions(conditions) else { return nil }
            self.conditions = parsed
        } else {
            guard parts[2] == "main.js" else { return nil }
            self.conditions = nil
        }
        self.path = path
        self.appVersion = version.rawValue
        self.channel = channel
        self.patch = Int(patch)
        self.rollout = Int(rollout)
        self.published = published
        self.plaintext = BundleDigests(length: Int(length), sha256: sha256, md5: md5)
    }

    /// This entry at another rollout: how a withhold's halt shows a listed patch to the
    /// selection rule (rollout 0, whatever was signed; docs/PROTOCOL.md, "Withhold").
    public func withRollout(_ percent: Int) -> PatchTargetInfo {
        var copy = self
        copy.rollout = percent
        return copy
    }

    /// The file name of a patch with delivery conditions.
    public static let conditionalFileName = "main.conditional.js"

    /// The signed target path of a patch.
    public static func path(appVersion: String, channel: ChannelName, patch: Int, conditional: Bool = false) -> String {
        (channel == .production ? "" : "\(channel)/") + "\(appVersion)/\(patch)/" + (conditional ? conditionalFileName : "main.js")
    }

    /// Whether its conditions (if any) admit a device (`DeliveryConditions.admits`, which `Selection.choose` applies).
    public func admits(deviceID: String?, osVersion: String?) -> Bool {
        conditions?.admits(deviceID: deviceID, osVersion: osVersion) ?? true
    }

    /// The signed `custom` object.
    public var custom: JSON {
        var custom: [String: JSON] = [
            "patch": .int(Int64(patch)),
            "rollout": .int(Int64(rollout)),
            "published": .string(published),
            "plaintext": ["length": .int(Int64(plaintext.length)), "sha256": .string(plaintext.sha256), "md5": .string(plaintext.md5)],
        ]
        if let encryption { custom["encryption"] = ["alg": .string(encryption.algorithm), "keyid": .string(encryption.keyID)] }
        if let message { custom["message"] = .string(message) }
        if let promotedFrom { custom["promotedFrom"] = promotedFrom.json }
        if let rolledBackTo { custom["rolledBackTo"] = rolledBackTo.json }
        if let conditions { custom["conditions"] = conditions.json }
        return .object(custom)
    }

    /// `[{channel}/]{appVersion}/{patch}/{hash}.{file}`: where the bytes are served under one
    /// hash (TUF consistent snapshots: the hash prefixes the file name).
    public func servedPath(hash: String) -> String {
        (channel == .production ? "" : "\(channel)/") + "\(appVersion)/\(patch)/\(hash)." + (conditions == nil ? "main.js" : PatchTargetInfo.conditionalFileName)
    }
}
