/// What an installation sends beside its `X-Device-ID` so that its check interval is its
/// own (`X-Device-Secret`, docs/PROTOCOL.md section 11, "Throttling"). The device ID is not a
/// secret (it picks rollout buckets, an app may show it, a log may hold it); whoever knew it
/// could spend the device's checks and the one check a revoke grants it (issue 43, item 4).
/// patchd keys the device's interval on ID and secret together, so a request without this
/// value lands in another slot and spends nothing of the device's. Nothing about it is stored
/// or registered: no server state is needed to bind it, and none grows with made-up ones.
///
/// The grammar is the one place both sides read it: 32 to 128 characters of `A–Z a–z 0–9 - _`
/// (hex and unpadded base64url both fit; 32 is the fewest that can carry 128 bits of hex).
public struct DeviceSecret: Sendable, Hashable {
    public static let header = "X-Device-Secret"
    public static let lengths = 32...128

    public let rawValue: String

    public init(_ value: String) throws(ValidationError) {
        guard DeviceSecret.lengths.contains(value.utf8.count), value.utf8.allSatisfy(DeviceSecret.allowed) else {
            throw ValidationError("\(DeviceSecret.header) must be \(DeviceSecret.lengths.lowerBound) to \(DeviceSecret.lengths.upperBound) characters of A-Z, a-z, 0-9, '-' and '_' (PatchClient sends 64 hex digits)")
        }
        rawValue = value
    }

    /// A new secret: 32 bytes (256 bits) of the system's generator as 64 lowercase hex digits.
    /// `SystemRandomNumberGenerator` is the OS's cryptographic source on every platform the
    /// client builds for (getrandom on Linux, arc4random_buf on Apple's), and PatchCore may not
    /// link PatchSigning, the server's key-making module.
    public static func generate() -> DeviceSecret {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return DeviceSecret(unchecked: Hex.encode(bytes))
    }

    private init(unchecked value: String) { rawValue = value }

    private static func allowed(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
            || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
    }
}
