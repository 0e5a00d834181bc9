import PatchCore
import PatchSigning
import Testing

/// The one rule of delivery conditions (DeliveryConditions), which PatchClient and the
/// simple check both call, and its strict signed form.
@Suite("Delivery conditions")
struct DeliveryConditionsTests {
    static let salt: [UInt8] = Array(0..<16)

    @Test("OS versions compare numerically; a maximum includes what it is a prefix of")
    func osVersions() throws {
        let v = { (s: String) throws -> OSVersion in try OSVersion(s) }
        #expect(try v("17.4") < v("17.10"), "numeric, not text")
        #expect(try v("17") == v("17.0.0"))
        #expect(try !(v("17.4.1") < v("17.4.1")))
        for bad in ["", "17.", ".4", "17..4", "v17", "17.4-beta", "1.2.3.4.5", "1234567", "-1", "17,4", " 17"] {
            #expect(throws: ValidationError.self, "\(bad)") { try OSVersion(bad) }
        }
        let range = try DeliveryConditions.OSRange(min: v("15.0"), max: v("17.4"))
        for inside in ["15", "15.0", "16.7.2", "17.4", "17.4.1", "17.4.99"] { #expect(try range.contains(v(inside)), "\(inside)") }
        for outside in ["14.8", "14.99.99", "17.5", "18", "17.10"] { #expect(try !range.contains(v(outside)), "\(outside)") }
        #expect(throws: ValidationError.self) { try DeliveryConditions.OSRange(min: v("18"), max: v("17.4")) }
        #expect(throws: ValidationError.self) { try DeliveryConditions.OSRange(min: nil, max: nil) }
        #expect(try DeliveryConditions.OSRange(min: v("17.4.1"), max: v("17.4")).contains(v("17.4.3")), "min 17.4.1 is within max 17.4")
    }

    @Test("the allow-list holds salted hashes (the vector of docs/PROTOCOL.md), never the IDs")
    func allowList() throws {
        let devices = try DeliveryConditions.Devices.hashing(["qa-phone-1", "qa-phone-2", "qa-phone-1"], salt: Self.salt)
        #expect(devices.salt == "000102030405060708090a0b0c0d0e0f")
        #expect(devices.hashes.count == 2, "duplicates count once")
        #expect(devices.hashes == devices.hashes.sorted())
        #expect(devices.hashes.contains(Digest.sha256Hex(Self.salt + Array("qa-phone-1".utf8))))
        #expect(devices.contains("qa-phone-2") && !devices.contains("qa-phone-3") && !devices.contains("QA-PHONE-1"))
        let conditions = try DeliveryConditions(devices: devices, os: nil)
        #expect(!conditions.json.canonicalString.contains("qa-phone"))
        #expect(conditions.admits(deviceID: "qa-phone-1", osVersion: nil))
        #expect(!conditions.admits(deviceID: nil, osVersion: "17.0"), "a device that does not say who it is is not on the list")
        let other = try DeliveryConditions.Devices.hashing(["qa-phone-1"])
        #expect(other.salt != devices.salt && !devices.hashes.contains(other.hashes[0]), "a fresh salt per patch")
        #expect(throws: ValidationError.self) { try DeliveryConditions.Devices.hashing([]) }
        #expect(throws: ValidationError.self) { try DeliveryConditions.Devices.hashing((0...DeliveryConditions.maxDevices).map { "d\($0)" }) }
        #expect(throws: ValidationError.self) { try DeliveryConditions.Devices.hashing(["bad\nid"]) }
    }

    @Test("both conditions must hold; a device that reports no OS is outside every OS range")
    func both() throws {
        let conditions = try DeliveryConditions(devices: try .hashing(["a"], salt: Self.salt),
                                                os: try .init(min: try OSVersion("16"), max: nil))
        #expect(conditions.admits(deviceID: "a", osVersion: "16.1"))
        #expect(!conditions.admits(deviceID: "a", osVersion: "15.9"))
        #expect(!conditions.admits(deviceID: "a", osVersion: nil))
        #expect(!conditions.admits(deviceID: "a", osVersion: "sixteen"))
        #expect(!conditions.admits(deviceID: "b", osVersion: "16.1"))
        #expect(conditions.summary == "1 listed device, OS ≥ 16")
    }

    @Test("the signed form reads back, and anything else reads as no conditions at all (fail closed)")
    func strictForm() throws {
        let conditions = try DeliveryConditions(devices: try .hashing(["a", "b"], salt: Self.salt),
                                                os: try .init(min: try OSVersion("15.0"), max: try OSVersion("17.4")))
        #expect(DeliveryConditions(conditions.json) == conditions)
        let hash = Digest.sha256Hex(Self.salt + Array("a".utf8))
        let salt = "000102030405060708090a0b0c0d0e0f"
        let refused: [String] = [
            #"{}"#, #"{"os":{}}"#, #"{"region":"eu"}"#, #"{"os":{"min":"15"},"region":"eu"}"#,
            #"{"os":{"min":"15","below":"18"}}"#, #"{"os":{"min":15}}"#, #"{"os":{"min":"18","max":"17"}}"#,
            #"{"devices":{"salt":"\#(salt)","sha256":[]}}"#, #"{"devices":{"salt":"00","sha256":["\#(hash)"]}}"#,
            #"{"devices":{"salt":"\#(salt)","sha256":["\#(hash.uppercased())"]}}"#,
            #"{"devices":{"salt":"\#(salt)","sha256":["\#(hash)","\#(hash)"]}}"#,
            #"{"devices":{"salt":"\#(salt)","sha256":["\#(hash)"],"ids":["a"]}}"#, #"{"devices":["a"]}"#,
        ]
        for text in refused {
            #expect(DeliveryConditions(try JSONParser.parse(Array(text.utf8))) == nil, "\(text)")
        }
    }

    @Test("a conditional patch is named main.conditional.js; name and conditions cannot be separated")
    func targetName() throws {
        let conditions = try DeliveryConditions(devices: nil, os: try .init(min: try OSVersion("15"), max: nil))
        let info = PatchTargetInfo(appVersion: try AppVersion("2.3"), channel: .production, patch: 4, rollout: 100, published: "2026-12-01T09:00:00Z",
                                   plaintext: BundleDigests(of: Array("x".utf8)), encryption: nil, message: nil, promotedFrom: nil,
                                   conditions: conditions)
        #expect(info.path == "2.3/4/main.conditional.js")
        #expect(info.servedPath(hash: "ab") == "2.3/4/ab.main.conditional.js")
        let file = TargetFile(length: 1, hashes: ["sha256": "ab"], custom: info.custom)
        #expect(PatchTargetInfo(path: info.path, file: file) == info)
        #expect(PatchTargetInfo(path: "2.3/4/main.js", file: file) == nil, "conditions under the plain name: a client before conditions would ignore them")
        var custom = info.custom.objectValue!
        custom["conditions"] = nil
        #expect(PatchTargetInfo(path: info.path, file: TargetFile(length: 1, hashes: ["sha256": "ab"], custom: .object(custom))) == nil,
                "the conditional name without conditions")
        custom["conditions"] = ["os": ["min": "15", "arch": "arm64"]]
        #expect(PatchTargetInfo(path: info.path, file: TargetFile(length: 1, hashes: ["sha256": "ab"], custom: .object(custom))) == nil,
                "an unknown condition")
        #expect(info.admits(deviceID: "d", osVersion: "15.1") && !info.admits(deviceID: "d", osVersion: "14"))
    }
}
