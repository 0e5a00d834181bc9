import PatchCore

extension DeliveryConditions.Devices {
    /// Hashes `deviceIDs` under a fresh random salt (the publisher's side: a device only
    /// checks its own ID against the list).
    public static func hashing(_ deviceIDs: [String]) throws(ValidationError) -> Self {
        let salt: [UInt8]
        do { salt = try SecureRandom.bytes(16) } catch { throw ValidationError("no random salt for the device list: \(error)") }
        return try hashing(deviceIDs, salt: salt)
    }
}
