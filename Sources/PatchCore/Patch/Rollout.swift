/// The staged-rollout rule, the same on server and client: a device is in a rollout of R
/// percent when the first 4 bytes of sha256("{app}|{appVersion}|{patch}|{deviceID}"),
/// read big-endian, mod 100 are below R. Hashing the patch number in gives every patch an
/// independent sample of devices.
public enum Rollout {
    public static func bucket(app: String, appVersion: String, patch: Int, deviceID: String) -> Int {
        let digest = Digest.sha256(Array("\(app)|\(appVersion)|\(patch)|\(deviceID)".utf8))
        let value = UInt32(digest[0]) << 24 | UInt32(digest[1]) << 16 | UInt32(digest[2]) << 8 | UInt32(digest[3])
        return Int(value % 100)
    }

    public static func includes(percent: Int, app: String, appVersion: String, patch: Int, deviceID: String) -> Bool {
        if percent >= 100 { return true }
        if percent <= 0 { return false }
        return bucket(app: app, appVersion: appVersion, patch: patch, deviceID: deviceID) < percent
    }
}
