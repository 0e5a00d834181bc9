import Foundation
import PatchCore

/// How a patch stands with the devices of its app version now (`patchctl list`, `status`).
public enum Delivery: String, Sendable {
    /// Active and served to some devices.
    case live
    /// Active with a rollout above 0, but a newer patch at 100 % reaches every device first.
    case superseded
    /// Active at rollout 0: still listed and signed, served to no device.
    case halted
    case revoked
}

/// What the devices of one app version on one channel get now: the rollout split and each
/// patch's delivery. The one place that computes it; every command that shows it goes
/// through here. Channels never mix: a production device is never served a staging patch.
public struct VersionServing: Sendable {
    /// The part of a patch the split depends on, so a listing read from a server works too.
    public struct Entry: Sendable {
        public let number: Int
        public let rollout: Int
        public let active: Bool
        public let channel: ChannelName
        /// What its delivery conditions admit ("3 listed devices, OS ≥ 15.0"); nil without conditions.
        public let conditions: String?

        public init(number: Int, rollout: Int, active: Bool, channel: ChannelName = .production, conditions: String? = nil) {
            self.number = number
            self.rollout = rollout
            self.active = active
            self.channel = channel
            self.conditions = conditions
        }

        public init(_ patch: PatchRecord) {
            self.init(number: patch.number, rollout: patch.rollout, active: patch.state == .active, channel: patch.channel,
                      conditions: patch.conditions?.summary)
        }

        /// The same patch, revoked (what a rollback would leave).
        public var revoked: Entry { Entry(number: number, rollout: rollout, active: false, channel: channel, conditions: conditions) }

        /// From one patch of a listing (`PatchRecord.json`, as `GET /v1/apps/{app}/patches` answers).
        public init?(listing json: JSON) {
            guard let number = json["patch"]?.intValue, let rollout = json["rollout"]?.intValue, let state = json["state"]?.stringValue else { return nil }
            // A listing from a server older than channels has no channel: production.
            let channel = json["channel"]?.stringValue.map { try? ChannelName($0) } ?? .production
            guard let channel else { return nil }
            // The listing carries a device count where the signed form has the hashes.
            let conditions = json["conditions"].map(DeliveryConditions.summary(listing:))
            self.init(number: Int(number), rollout: Int(rollout), active: state == PatchState.active.rawValue, channel: channel,
                      conditions: conditions)
        }
    }

    public let app: AppName
    public let appVersion: AppVersion
    public let channel: ChannelName
    /// Newest patch first, then "none" if some devices get no patch.
    public let shares: [Rollout.Share]
    /// Every patch of the version, active or revoked, by number.
    public let delivery: [Int: Delivery]
    public let rollouts: [Int: Int]
    /// Live patches with delivery conditions, newest first: they come before the split for the
    /// devices they admit, and are not part of it (which devices those are is not a share).
    public let conditional: [Entry]

    /// From the entries of this channel among `entries` (the others are ignored).
    public init(app: AppName, appVersion: AppVersion, channel: ChannelName = .production, entries: [Entry]) {
        self.app = app
        self.appVersion = appVersion
        self.channel = channel
        let entries = entries.filter { $0.channel == channel }
        let listed = entries.filter { $0.active && $0.conditions == nil }.map { (patch: $0.number, percent: $0.rollout) }
        shares = Rollout.split(listed)
        var delivery: [Int: Delivery] = [:]
        for entry in entries where !entry.active { delivery[entry.number] = .revoked }
        for (patch, share) in Rollout.exactShares(listed) {
            delivery[patch] = share > 0 ? .live : listed.first { $0.patch == patch }?.percent == 0 ? .halted : .superseded
        }
        // A conditional patch is served where its conditions hold, unless a newer patch at 100 %
        // without conditions reaches every device first.
        let newestFull = listed.filter { $0.percent >= 100 }.map(\.patch).max() ?? 0
        for entry in entries where entry.active && entry.conditions != nil {
            delivery[entry.number] = entry.rollout == 0 ? .halted : entry.number < newestFull ? .superseded : .live
        }
        conditional = entries.filter { $0.conditions != nil && delivery[$0.number] == .live }.sorted { $0.number > $1.number }
        self.delivery = delivery
        rollouts = Dictionary(entries.map { ($0.number, $0.rollout) }) { a, _ in a }
    }

    public init(app: AppName, appVersion: AppVersion, channel: ChannelName = .production, patches: [PatchRecord]) {
        self.init(app: app, appVersion: appVersion, channel: channel, entries: patches.map(Entry.init))
    }

    /// One per (app, app version, channel) of `entries` keyed by app and version, in app,
    /// version and channel order (production first).
    public static func grouped(app: AppName, appVersion: AppVersion, _ entries: [Entry]) -> [VersionServing] {
        Set(entries.map(\.channel)).sorted(by: productionFirst).map { VersionServing(app: app, appVersion: appVersion, channel: $0, entries: entries) }
    }

    /// One per (app, app version, channel) of `patches`, in app, version and channel order.
    public static func grouped(_ patches: [PatchRecord]) -> [VersionServing] {
        Dictionary(grouping: patches) { [$0.app.rawValue, $0.appVersion.rawValue] }.values
            .flatMap { group -> [VersionServing] in
                guard let first = group.first else { return [] }
                return Set(group.map(\.channel))
                    .map { VersionServing(app: first.app, appVersion: first.appVersion, channel: $0, patches: group) }
            }
            .sorted { a, b in
                if (a.app, a.appVersion) != (b.app, b.appVersion) { return (a.app, a.appVersion) < (b.app, b.appVersion) }
                return productionFirst(a.channel, b.channel)
            }
    }

    /// Production first, then by name: the order channels are shown in everywhere.
    static func productionFirst(_ a: ChannelName, _ b: ChannelName) -> Bool {
        a == .production ? b != .production : b == .production ? false : a < b
    }

    /// The newest patch some devices are served: what a rollback revokes.
    public var newestLive: Int? { delivery.filter { $0.value == .live }.keys.max() }

    /// "patch 3 → 25 %, patch 2 → 75 %"; with live conditional patches first:
    /// "patch 4 → where 3 listed devices (rollout 100 %); otherwise patch 3 → 25 %, none → 75 %".
    public var summary: String {
        let split = shares.map(\.text).joined(separator: ", ")
        guard !conditional.isEmpty else { return split }
        let first = conditional.map { "patch \($0.number) → where \($0.conditions ?? "") (rollout \($0.rollout) %)" }.joined(separator: "; ")
        return "\(first); otherwise \(split)"
    }

    public var json: JSON {
        ["app": .string(app.rawValue), "appVersion": .string(appVersion.rawValue), "channel": .string(channel.rawValue),
         "served": .array(shares.map { ["patch": $0.patch.map { .int(Int64($0)) } ?? .null, "basisPoints": .int(Int64($0.basisPoints))] }),
         "conditional": .array(conditional.map { ["patch": .int(Int64($0.number)), "rollout": .int(Int64($0.rollout)), "conditions": .string($0.conditions ?? "")] }),
         "summary": .string(summary),
         "patches": .array(delivery.keys.sorted(by: >).map { number in
             ["patch": .int(Int64(number)), "rollout": .int(Int64(rollouts[number] ?? 0)), "delivery": .string(delivery[number]?.rawValue ?? "")]
         })]
    }
}

/// A patch at rollout 0 (a guard's halt, or `rollout 0` by hand): offered to no device, still
/// listed and signed, so a device that installed it keeps it (`Selection.choose`) until a newer
/// patch reaches it or the patch is revoked. `status` says so, with how many devices reported
/// having it, since "none → 100 %" in the split alone reads as if nobody ran it.
public struct HaltedPatch: Sendable, Equatable {
    public let appVersion: AppVersion
    public let channel: ChannelName
    public let patch: Int
    /// Distinct devices that reported installing it and rolling it back (report figures, kept
    /// since the patch was published; 0 when none reported).
    public let installedDevices: Int
    public let rolledBackDevices: Int

    public var json: JSON {
        ["appVersion": .string(appVersion.rawValue), "channel": .string(channel.rawValue), "patch": .int(Int64(patch)), "rollout": 0,
         "installedDevices": .int(Int64(installedDevices)), "rolledBackDevices": .int(Int64(rolledBackDevices))]
    }
}

/// Patches one publish made for several app versions (`publish --app-version '2.3.*'`), still
/// active: what `status` shows together.
public struct PatchSet: Sendable, Equatable {
    /// The seq of the `patch.publish` event that lists them.
    public let publishSeq: Int64
    public let channel: ChannelName
    /// Each active patch of the set, in version order.
    public let patches: [(appVersion: AppVersion, patch: Int)]

    public static func == (a: PatchSet, b: PatchSet) -> Bool {
        a.publishSeq == b.publishSeq && a.channel == b.channel && a.patches.elementsEqual(b.patches) { $0.appVersion == $1.appVersion && $0.patch == $1.patch }
    }

    public var json: JSON {
        ["publishSeq": .int(publishSeq), "channel": .string(channel.rawValue),
         "patches": .array(patches.map { ["appVersion": .string($0.appVersion.rawValue), "patch": .int(Int64($0.patch))] })]
    }
}

/// `patchctl status` of one app: its signed metadata and what each app version serves.
public struct AppStatus: Sendable {
    public struct RoleMetadata: Sendable {
        public let role: Role
        public let version: Int64
        /// As signed: YYYY-MM-DDTHH:MM:SSZ.
        public let expires: String
    }

    public let app: AppName
    public let metadata: [RoleMetadata]
    public let versions: [VersionServing]
    /// Changes waiting for signatures (the two-person rule): what is not served yet.
    public var pending: [PendingChange] = []
    /// Halted patches of every version and channel, in the order of `versions`, newest first.
    public var halted: [HaltedPatch] = []
    /// Publishes to several versions with a patch still active, oldest first.
    public var together: [PatchSet] = []

    public var json: JSON {
        ["app": .string(app.rawValue),
         "metadata": .object(Dictionary(uniqueKeysWithValues: metadata.map { ($0.role.rawValue, ["version": .int($0.version), "expires": .string($0.expires)] as JSON) })),
         "versions": .array(versions.map(\.json)),
         "halted": .array(halted.map(\.json)),
         "together": .array(together.map(\.json)),
         "pending": .array(pending.map { change in
             ["id": .int(change.id), "kind": .string(change.change.kind), "summary": .string(change.change.summary), "role": .string(change.request.role),
              "signatures": .int(Int64(change.signatures.count)), "threshold": .int(Int64(change.request.threshold)),
              "proposedBy": .string(change.proposedBy), "proposedAt": .string(TUFTime.format(change.proposedAt))] as JSON
         })]
    }
}

extension Registry {
    /// What the devices of one app version on `channel` get now.
    public func serving(app: AppName, appVersion: AppVersion, channel: ChannelName = .production) throws(RegistryError) -> VersionServing {
        // An undeclared channel serves nobody; saying "none" would hide the typo.
        try requireChannel(channel, app: app)
        return VersionServing(app: app, appVersion: appVersion, channel: channel, patches: try patches(app: app, appVersion: appVersion, activeOnly: false))
    }

    /// What the devices of one app version get now, one per channel that has patches.
    public func servings(app: AppName, appVersion: AppVersion) throws(RegistryError) -> [VersionServing] {
        VersionServing.grouped(try patches(app: app, appVersion: appVersion, activeOnly: false))
    }

    /// Every app (or one), with the newest version and expiry of each role's metadata and
    /// the split of each app version that has patches.
    public func status(app name: AppName?) throws(RegistryError) -> [AppStatus] {
        let records = if let name { [try app(name)] } else { try apps() }
        var result: [AppStatus] = []
        for record in records {
            let rows = try newestMetadata(app: record.name)
            let metadata = Role.allCases.compactMap { role in
                rows.first { $0.role == role.rawValue }.map { AppStatus.RoleMetadata(role: role, version: $0.version, expires: $0.expires) }
            }
            let versions = VersionServing.grouped(try patches(app: record.name, appVersion: nil, activeOnly: false))
            var status = AppStatus(app: record.name, metadata: metadata, versions: versions)
            status.pending = try pendingRows(app: record.name, where: "state = 'pending'", [])
            status.halted = try haltedPatches(app: record.name, versions: versions)
            status.together = try patchSets(app: record.name)
            result.append(status)
        }
        return result
    }

    /// The publishes to several versions of `app` with a patch still active: one query.
    func patchSets(app: AppName) throws(RegistryError) -> [PatchSet] {
        let rows = try read { () throws(StorageError) in
            try db.query("""
                SELECT s.publish_seq, s.app_version, s.number, COALESCE(r.channel, 'production') FROM patch_sets s
                JOIN patches p ON p.app = s.app AND p.app_version = s.app_version AND p.number = s.number
                LEFT JOIN patch_releases r ON r.app = s.app AND r.app_version = s.app_version AND r.number = s.number
                WHERE s.app = ? AND p.state = 'active'
                """, [.text(app.rawValue)]) { row -> (Int64, AppVersion, Int, ChannelName)? in
                guard let version = try? AppVersion(row.text(1)), let channel = try? ChannelName(row.text(3)) else { return nil }
                return (row.int(0), version, Int(row.int(2)), channel)
            }
        }
        return Dictionary(grouping: try Registry.intact(rows, what: "patch_sets")) { $0.0 }.map { seq, members in
            PatchSet(publishSeq: seq, channel: members[0].3, patches: members.map { ($0.1, $0.2) }.sorted { $0.0 < $1.0 })
        }.sorted { $0.publishSeq < $1.publishSeq }
    }

    /// The halted patches of `versions` with their device figures. Report figures are read only
    /// when some patch is halted: a status without one costs no more than before.
    func haltedPatches(app: AppName, versions: [VersionServing]) throws(RegistryError) -> [HaltedPatch] {
        let halted = versions.flatMap { serving in
            serving.delivery.filter { $0.value == .halted }.keys.sorted(by: >).map { (serving, $0) }
        }
        guard !halted.isEmpty else { return [] }
        let figures = Dictionary(try reportFigures(app: app).map { ($0.key, $0) }) { a, _ in a }
        return halted.map { serving, number in
            let key = PatchFigures.Key(app: app, appVersion: serving.appVersion, channel: serving.channel, patch: number)
            return HaltedPatch(appVersion: serving.appVersion, channel: serving.channel, patch: number,
                               installedDevices: figures[key]?.count(.installed) ?? 0, rolledBackDevices: figures[key]?.count(.rolledBack) ?? 0)
        }
    }

    /// The patches of `app` some device is offered now (delivery `live`): active, not halted,
    /// not superseded by a newer 100 % patch of their version and channel. What `list --active`
    /// and `GET /v1/apps/{app}/patches?active=true` mean, from the one rule (`VersionServing`).
    public func servedPatches(app: AppName) throws(RegistryError) -> [PatchRecord] {
        let active = try patches(app: app, appVersion: nil, activeOnly: true)
        let live = Set(VersionServing.grouped(active).flatMap { serving in
            serving.delivery.filter { $0.value == .live }.keys.map { [serving.appVersion.rawValue, serving.channel.rawValue, String($0)] }
        })
        return active.filter { live.contains([$0.appVersion.rawValue, $0.channel.rawValue, String($0.number)]) }
    }

    /// The newest version of each role's metadata, of one app or of every app (nil), with its
    /// expiry as signed: one query (portable: no bare column beside MAX).
    func newestMetadata(app: AppName?) throws(RegistryError) -> [(app: String, role: String, version: Int64, expires: String)] {
        try read { () throws(StorageError) in
            try db.query("""
                SELECT m.app, m.role, m.version, m.expires FROM metadata m
                WHERE \(app == nil ? "" : "m.app = ? AND ")m.version = (SELECT MAX(version) FROM metadata WHERE app = m.app AND role = m.role)
                """, app.map { [.text($0.rawValue)] } ?? []) {
                (app: $0.text(0), role: $0.text(1), version: $0.int(2), expires: $0.text(3))
            }
        }
    }
}

extension Registry {
    /// `--expect-patch N` (`expectPatch=N`): inside a change's own transaction, refuses it when
    /// the newest live patch of the version and channel is not N (0: none is live), so a
    /// retried CI job or a second engineer acting on a state that has moved on changes nothing.
    func requireLive(_ expected: Int?, app: AppName, appVersion: AppVersion, channel: ChannelName) throws(RegistryError) {
        guard let expected else { return }
        let serving = VersionServing(app: app, appVersion: appVersion, channel: channel,
                                     patches: try patches(app: app, appVersion: appVersion, channel: channel, activeOnly: false))
        let live = serving.newestLive ?? 0
        guard live == expected else {
            throw .conflict("\(app) \(appVersion) \(channel) serves \(live == 0 ? "no patch" : "patch \(live)") now, not \(expected == 0 ? "none" : "patch \(expected)") (--expect-patch): nothing was changed")
        }
    }
}
