import Foundation
import PatchCore
import PatchSigning
import Testing

/// keys.json from `Tests/interop/gen_vectors.py`: key objects, signatures and a root made by
/// securesystemslib/python-tuf with every key type they sign with.
struct KeyVectors: Decodable {
    struct Vector: Decodable, Sendable, CustomTestStringConvertible {
        let name: String
        let keyid: String
        /// JSON text of the key object, exactly as securesystemslib's `to_dict` gives it.
        let keyObject: String
        let message: String
        let signature: String
        var testDescription: String { name }
    }

    let vectors: [Vector]
    let root: String
    let rootSignedCanonicalHex: String
    let rootWithUnknownKey: String
    let unknownKeyID: String
    let p256PKCS8: String
    let p256SEC1: String
    let p256KeyID: String
    let p256KeyObject: String
    let rsa1024KeyObject: String

    static func load() throws -> KeyVectors { try Fixture.load("keys") }
}

extension KeyVectors.Vector {
    func key() throws -> TUFKey { try TUFKey(json: JSONParser.parse(keyObject)) }
}

@Suite("TUF keys of every securesystemslib type")
struct KeyTypeTests {
    @Test("the keyid is what securesystemslib computes over the whole key object, unknown members included",
          arguments: try KeyVectors.load().vectors)
    func keyIDMatchesSecuresystemslib(_ vector: KeyVectors.Vector) throws {
        let key = try vector.key()
        #expect(key.keyID == vector.keyid)
        #expect(key.isSupported)
        // Re-serialised, the key object is the one served: nothing dropped, nothing added.
        #expect(key.json == (try JSONParser.parse(vector.keyObject)))
    }

    @Test("verifies the signature securesystemslib made, and nothing else", arguments: try KeyVectors.load().vectors)
    func verifiesSecuresystemslibSignatures(_ vector: KeyVectors.Vector) throws {
        let key = try vector.key()
        let message = try bytes(hex: vector.message)
        let signature = try bytes(hex: vector.signature)
        #expect(key.isValidSignature(signature, for: message))
        #expect(!key.isValidSignature(signature.flippingByte(at: signature.count / 2), for: message))
        #expect(!key.isValidSignature(signature, for: message.flippingByte(at: 20)))
        #expect(!key.isValidSignature([], for: message))
        for other in try KeyVectors.load().vectors where other.keyid != vector.keyid && other.signature != vector.signature {
            #expect(!key.isValidSignature(try bytes(hex: other.signature), for: message), "\(other.name)'s signature must not verify")
        }
    }

    @Test("a python-tuf root with ed25519 (legacy members), ecdsa and rsa keys verifies and re-serialises unchanged")
    func acceptsPythonTUFRoot() throws {
        let fixture = try KeyVectors.load()
        let root = try SignedRoot(bytes: fixture.root.bytes)
        try root.verify(role: .root, delegator: root.body)
        #expect(root.validSignatureCount(keys: try root.body.verifier(for: .root).keys) == 3)
        #expect(Hex.encode(root.signedJSON.canonicalBytes) == fixture.rootSignedCanonicalHex)
        // The model, re-serialised, covers the same bytes python-tuf signed (key members kept).
        #expect(Hex.encode(root.body.signedJSON.canonicalBytes) == fixture.rootSignedCanonicalHex)
        let reparsed = try SignedRoot(bytes: root.bytes)
        #expect(reparsed.body == root.body)
        try reparsed.verify(role: .root, delegator: reparsed.body)

        // Two of the three root signatures are not enough.
        var envelope = try #require(JSONParser.parse(fixture.root.bytes).objectValue)
        var signatures = try #require(envelope["signatures"]?.arrayValue)
        var first = try #require(signatures[0].objectValue)
        let sig = try #require(first["sig"]?.stringValue)
        first["sig"] = .string((sig.hasPrefix("0") ? "1" : "0") + sig.dropFirst())
        signatures[0] = .object(first)
        envelope["signatures"] = .array(signatures)
        let tampered = try SignedRoot(bytes: JSON.object(envelope).wireBytes)
        #expect(throws: TUFError.unsignedThreshold(role: "root", valid: 2, threshold: 3)) {
            try tampered.verify(role: .root, delegator: tampered.body)
        }
    }

    @Test("a key of an unknown type is kept and counts for nothing, instead of refusing the root")
    func unknownKeyTypeCountsForNothing() throws {
        let fixture = try KeyVectors.load()
        let root = try SignedRoot(bytes: fixture.rootWithUnknownKey.bytes)
        let unknown = try #require(root.body.keys[fixture.unknownKeyID])
        #expect(!unknown.isSupported && unknown.keyMaterial == nil)
        try root.verify(role: .root, delegator: root.body)
        #expect(root.body.signedJSON.canonicalBytes == root.signedJSON.canonicalBytes)

        // With the unknown key needed to reach the threshold, the root is refused, even
        // when a "signature" by it is present.
        let repo = try TestRepository()
        var body = repo.rootBody()
        body.keys[unknown.keyID] = unknown
        body.roles[.root] = RoleKeys(keyIDs: (body.roles[.root]?.keyIDs ?? []) + [unknown.keyID], threshold: 2)
        let signed = try SignedRoot(signing: body, with: repo.keys(.root))
        let withForged = SignedRoot.envelope(signed, adding: TUFSignature(keyID: unknown.keyID, signature: [UInt8](repeating: 7, count: 64)))
        let parsed = try SignedRoot(bytes: withForged)
        #expect(throws: TUFError.unsignedThreshold(role: "root", valid: 1, threshold: 2)) {
            try parsed.verify(role: .root, delegator: parsed.body)
        }
    }

    @Test("one key listed under two keyids (key objects differing in a member) counts once toward a threshold")
    func sameKeyTwiceCountsOnce() throws {
        let privateKey = try Ed25519PrivateKey.generate()
        let plain = privateKey.tufKey
        var members = try #require(plain.json.objectValue)
        members["x-owner"] = "a second copy"
        let copy = try TUFKey(json: .object(members))
        #expect(copy.keyID != plain.keyID && copy.keyMaterial == plain.keyMaterial)

        let repo = try TestRepository()
        var body = repo.rootBody()
        body.keys = body.keys.filter { !(repo.keys(.root).map(\.tufKey.keyID)).contains($0.key) }
        body.keys[plain.keyID] = plain
        body.keys[copy.keyID] = copy
        body.roles[.root] = RoleKeys(keyIDs: [plain.keyID, copy.keyID], threshold: 2)
        let signed = try SignedRoot(signing: body, with: [privateKey])
        let signature = try #require(signed.signatures.first)
        let both = try SignedRoot(bytes: SignedRoot.envelope(signed, adding: TUFSignature(keyID: copy.keyID, signature: signature.signature)))
        #expect(both.signatures.count == 2)
        #expect(throws: TUFError.unsignedThreshold(role: "root", valid: 1, threshold: 2)) {
            try both.verify(role: .root, delegator: both.body)
        }
    }

    @Test("refuses key objects of a known type whose key is not of that type")
    func refusesMalformedKnownKeys() throws {
        let fixture = try KeyVectors.load()
        let byName = Dictionary(uniqueKeysWithValues: try fixture.vectors.map { ($0.name, try JSONParser.parse($0.keyObject)) })
        func replacing(_ name: String, scheme: String? = nil, keytype: String? = nil) throws -> JSON {
            var members = try #require(byName[name]?.objectValue)
            if let scheme { members["scheme"] = .string(scheme) }
            if let keytype { members["keytype"] = .string(keytype) }
            return .object(members)
        }
        let refused: [JSON] = [
            try replacing("rsa-pss-sha256", scheme: "ecdsa-sha2-nistp256", keytype: "ecdsa"),  // an RSA key as ecdsa
            try replacing("ecdsa-p384", scheme: "ecdsa-sha2-nistp256"),                         // P-384 key, P-256 scheme
            try replacing("ecdsa-p256", scheme: "rsassa-pss-sha256", keytype: "rsa"),           // an EC key as rsa
            try replacing("ecdsa-p256", scheme: "ed25519", keytype: "ed25519"),                 // PEM where hex belongs
            try JSONParser.parse(fixture.rsa1024KeyObject),                                     // under 2048 bits
            ["keytype": "ecdsa", "scheme": "ecdsa-sha2-nistp256", "keyval": ["public": "not a PEM"]],
            ["keytype": "ecdsa", "scheme": "ecdsa-sha2-nistp256", "keyval": [:]],
            ["keytype": "x-future", "scheme": "x", "keyval": "not an object"],
            ["keytype": 1, "scheme": "ed25519", "keyval": ["public": "00"]],
        ]
        for json in refused {
            #expect(throws: TUFError.self, "\(json.canonicalString.prefix(120))") { try TUFKey(json: json) }
        }
    }

    @Test("imports an ECDSA P-256 private key from PKCS#8 or SEC1 PEM with securesystemslib's keyid, and signs verifiable metadata")
    func importsP256SigningKey() throws {
        let fixture = try KeyVectors.load()
        for pem in [fixture.p256PKCS8, fixture.p256SEC1] {
            let key = try SigningKey(pem: pem.bytes)
            guard case .ecdsa = key else { Issue.record("expected an ECDSA key"); continue }
            #expect(key.tufKey.keyID == fixture.p256KeyID)
            #expect(key.tufKey.json == (try JSONParser.parse(fixture.p256KeyObject)))
            // Stored as PKCS#8 and read back as the same key.
            #expect(try SigningKey(pem: key.pemRepresentation()).tufKey == key.tufKey)

            let repo = try TestRepository()
            var body = repo.rootBody()
            body.keys[key.tufKey.keyID] = key.tufKey
            body.roles[.root] = RoleKeys(keyIDs: [key.tufKey.keyID])
            let signed = try SignedRoot(bytes: SignedRoot(signing: body, with: [key]).bytes)
            try signed.verify(role: .root, delegator: signed.body)
        }
        let ed25519 = try Ed25519PrivateKey.generate()
        guard case .ed25519 = try SigningKey(pem: ed25519.pemRepresentation()) else {
            Issue.record("an Ed25519 PEM must give an Ed25519 signing key")
            return
        }
        #expect(throws: CryptoError.self) { try SigningKey(pem: RSAPrivateKey.generate(bits: 2048).pemRepresentation()) }
        let publicPEM = try #require(JSONParser.parse(fixture.p256KeyObject)["keyval"]?["public"]?.stringValue)
        #expect(throws: CryptoError.self) { try SigningKey(pem: publicPEM.bytes) }
    }

    @Test("a file holding PEM keys is served as valid JSON; without control characters it is its canonical form")
    func servesValidJSON() throws {
        let fixture = try KeyVectors.load()
        let root = try SignedRoot(bytes: fixture.root.bytes)
        let envelope = JSON.object(["signed": root.signedJSON, "signatures": .array(root.signatures.map(\.json))])
        #expect(envelope.canonicalBytes.contains(0x0A), "canonical JSON keeps the PEM newlines raw")
        #expect(!root.bytes.contains(0x0A), "served bytes escape them")
        #expect(throws: JSONError.self) { try JSONParser.parse(envelope.canonicalBytes) }
        #expect(try JSONParser.parse(root.bytes) == envelope)
        let ed25519Only = try TestRepository().files().root
        #expect(try SignedRoot(bytes: ed25519Only).bytes == JSONParser.parse(ed25519Only).canonicalBytes)
    }
}

extension SignedMetadata {
    /// This file with one more entry in `signatures`, as an attacker or another tool could add it.
    static func envelope(_ signed: SignedMetadata, adding signature: TUFSignature) -> [UInt8] {
        JSON.object(["signed": signed.signedJSON, "signatures": .array((signed.signatures + [signature]).map(\.json))]).wireBytes
    }
}
