/// Which listed patch a device runs (docs/PROTOCOL.md section 5): the one rule PatchClient
/// (`apply`) and the simple check (`AppCatalog.patch(for:)`) apply, so that what a halt or a
/// lowered rollout does is decided once. Rollout only decides which devices are *offered* a
/// patch; a device keeps a listed patch it runs whatever its rollout (0 included), and only
/// a revoke — the patch no longer listed — takes it away.
public enum Selection {
    /// One patch targets lists for the device's app version and channel.
    public struct Candidate: Sendable {
        public let number: Int
        public let rollout: Int
        public let conditions: DeliveryConditions?
        /// What a device that runs this bundle holds of it: PatchClient the plaintext sha256,
        /// the simple check the ETag it stored.
        public let digest: String

        public init(number: Int, rollout: Int, conditions: DeliveryConditions?, digest: String) {
            self.number = number
            self.rollout = rollout
            self.conditions = conditions
            self.digest = digest
        }
    }

    /// Who asks.
    public struct Device: Sendable {
        public let app: String
        public let appVersion: String
        /// nil: a device that does not identify itself is offered only 100 % patches.
        public let deviceID: String?
        public let osVersion: String?
        /// false: patches with delivery conditions never apply (the JSPatch Loader cannot say
        /// what OS it runs on).
        public let conditional: Bool

        public init(app: String, appVersion: String, deviceID: String?, osVersion: String?, conditional: Bool = true) {
            self.app = app
            self.appVersion = appVersion
            self.deviceID = deviceID
            self.osVersion = osVersion
            self.conditional = conditional
        }

        func admits(_ candidate: Candidate) -> Bool {
            guard let conditions = candidate.conditions else { return true }
            return conditional && conditions.admits(deviceID: deviceID, osVersion: osVersion)
        }

        func offered(_ candidate: Candidate) -> Bool {
            guard let deviceID else { return candidate.rollout >= 100 }
            return Rollout.includes(percent: candidate.rollout, app: app, appVersion: appVersion, patch: candidate.number, deviceID: deviceID)
        }
    }

    /// What the device has now.
    public struct Running: Sendable {
        public let number: Int
        public let digest: String

        public init(number: Int, digest: String) {
            self.number = number
            self.digest = digest
        }
    }

    public enum Choice: Sendable, Equatable {
        /// Keep the patch it runs (a `304` on the simple check).
        case keep(Int)
        /// Fetch and run this patch.
        case install(Int)
        /// Run no patch: drop any it has.
        case none
    }

    /// The choice for `device`, which runs `running` (nil: nothing, or the simple check's
    /// device sent no ETag of a listed patch). `rolledBackThrough` (PatchClient only) is the
    /// highest number rolled back on the device, its launches unconfirmed: it and every lower
    /// number are not offered again.
    ///
    /// Patches the device's conditions exclude count as not listed: neither offered nor kept.
    /// Offered: the highest number above `rolledBackThrough` whose rollout includes the device.
    /// Kept: the running patch while it is listed with the same digest, or (after a launch
    /// rollback restored an older confirmed patch) while the patch rolled back from is listed.
    /// The kept patch wins unless a higher number is offered: no downgrade while listed.
    public static func choose(_ listed: [Candidate], for device: Device, running: Running?, rolledBackThrough: Int = 0) -> Choice {
        // One pass, nothing allocated: the simple check applies this on every request.
        var offered: Int?
        var runningListed = false, rolledBackListed = false
        for candidate in listed where device.admits(candidate) {
            let number = candidate.number
            if number > rolledBackThrough, number > (offered ?? Int.min), device.offered(candidate) { offered = number }
            if let running, number == running.number, candidate.digest == running.digest { runningListed = true }
            if number == rolledBackThrough { rolledBackListed = true }
        }
        var kept: Int?
        if let running {
            if runningListed { kept = running.number } else if running.number < rolledBackThrough, rolledBackListed { kept = running.number }
        }
        if let kept, (offered ?? 0) <= kept { return .keep(kept) }
        if let offered { return .install(offered) }
        return .none
    }
}
