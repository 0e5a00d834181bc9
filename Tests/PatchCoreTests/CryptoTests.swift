import PatchCore
import PatchSigning
import Testing

struct DigestVectors: Decodable {
    struct Vector: Decodable, Sendable, CustomTestStringConvertible {
        let text: String
        let `repeat`: Int
        let md5: String
        let sha256: String
        let sha384: String
        let sha512: String
        var input: [UInt8] { Array(repeating: text.bytes, count: `repeat`).flatMap { $0 } }
        var testDescription: String { "\"\(text.debugSanitized)\" x \(`repeat`)" }
    }

    let vectors: [Vector]
}

struct Ed25519Vectors: Decodable {
    struct Vector: Decodable, Sendable, CustomTestStringConvertible {
        let seed: String
        let `public`: String
        let keyid: String
        let pem: String
        let signedText: String
        let message: String
        let signature: String
        var testDescription: String { "key \(keyid.prefix(8))" }
    }

    let vectors: [Vector]
    let p256PEM: String

    static func load() throws -> Ed25519Vectors { try Fixture.load("ed25519") }
}

struct AESGCMVectors: Decodable {
    struct Vector: Decodable, Sendable, CustomTestStringConvertible {
        let app: String
        let appVersion: String
        let patch: Int
        let key: String
        let nonce: String
        let aad: String
        let plaintext: String
        let combined: String
        var testDescription: String { "\(app) \(appVersion) patch \(patch)" }
    }

    let vectors: [Vector]
}

private func cryptoFailure(_ body: () throws(CryptoError) -> [UInt8]) -> CryptoError? {
    do {
        _ = try body()
        return nil
    } catch {
        return error
    }
}

@Suite("Digests and hex")
struct DigestTests {
    @Test("md5, sha256, sha384 and sha512 match hashlib", arguments: try Fixture.load("digests", as: DigestVectors.self).vectors)
    func matchesHashlib(_ vector: DigestVectors.Vector) {
        let input = vector.input
        #expect(Digest.md5Hex(input) == vector.md5)
        #expect(Digest.sha256Hex(input) == vector.sha256)
        #expect(Hex.encode(Digest.hash(.sha384, input)) == vector.sha384)
        #expect(Hex.encode(Digest.hash(.sha512, input)) == vector.sha512)
        let digests = BundleDigests(of: input)
        #expect(digests == BundleDigests(length: input.count, sha256: vector.sha256, md5: vector.md5))
    }

    @Test("hashing in pieces gives the one-shot digest", arguments: DigestAlgorithm.allCases)
    func incrementalMatchesOneShot(_ algorithm: DigestAlgorithm) {
        let data = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        var hasher = Digest.Hasher(algorithm)
        for start in stride(from: 0, to: data.count, by: 4_099) {
            hasher.update(data[start..<min(start + 4_099, data.count)])
        }
        let digest = hasher.finalize()
        #expect(digest == Digest.hash(algorithm, data))
        #expect(digest.count == algorithm.byteCount)
    }

    @Test("hex encodes lowercase and decodes either case")
    func hexRoundTrip() {
        let all = (0...255).map { UInt8($0) }
        #expect(Hex.decode(Hex.encode(all)) == all)
        #expect(Hex.encode([0xAB, 0x01]) == "ab01")
        #expect(Hex.decode("AbCd") == [0xAB, 0xCD])
        #expect(Hex.decode("") == [])
    }

    @Test("hex refuses odd lengths and non-hex characters", arguments: ["abc", "zz", "0x12", "12 34", "é1"])
    func hexRefusesGarbage(_ text: String) {
        #expect(Hex.decode(text) == nil)
    }

    @Test("isLowercase wants exactly the byte count in lowercase hex")
    func lowercaseCheck() {
        #expect(Hex.isLowercase("00ff", byteCount: 2))
        #expect(!Hex.isLowercase("00FF", byteCount: 2))
        #expect(!Hex.isLowercase("00ff00", byteCount: 2))
        #expect(!Hex.isLowercase("00fg", byteCount: 2))
    }
}

@Suite("Ed25519 agrees with python cryptography")
struct Ed25519Tests {
    @Test("derives the public key and TUF keyid python derives", arguments: try Ed25519Vectors.load().vectors)
    func derivesPublicKeyAndKeyID(_ vector: Ed25519Vectors.Vector) throws {
        let key = try Ed25519PrivateKey(rawRepresentation: bytes(hex: vector.seed))
        #expect(key.publicKey.hex == vector.public)
        #expect(key.tufKey.keyID == vector.keyid)
        #expect(key.rawRepresentation == (try bytes(hex: vector.seed)))
    }

    @Test("the signed object canonicalises to the message python signed", arguments: try Ed25519Vectors.load().vectors)
    func canonicalMessageMatches(_ vector: Ed25519Vectors.Vector) throws {
        #expect(try JSONParser.parse(vector.signedText).canonicalBytes == (try bytes(hex: vector.message)))
    }

    @Test("verifies python's signature", arguments: try Ed25519Vectors.load().vectors)
    func verifiesPythonSignature(_ vector: Ed25519Vectors.Vector) throws {
        let publicKey = try Ed25519PublicKey(rawRepresentation: bytes(hex: vector.public))
        #expect(publicKey.isValidSignature(try bytes(hex: vector.signature), for: try bytes(hex: vector.message)))
    }

    @Test("signs byte-identically to python from the same seed", arguments: try Ed25519Vectors.load().vectors)
    func signsLikePython(_ vector: Ed25519Vectors.Vector) throws {
        let key = try Ed25519PrivateKey(rawRepresentation: bytes(hex: vector.seed))
        #expect(try key.signature(for: bytes(hex: vector.message)) == (try bytes(hex: vector.signature)))
    }

    @Test("loads python's PKCS#8 PEM and writes the same PEM back", arguments: try Ed25519Vectors.load().vectors)
    func pemInterop(_ vector: Ed25519Vectors.Vector) throws {
        let key = try Ed25519PrivateKey(pem: vector.pem.bytes)
        #expect(key.rawRepresentation == (try bytes(hex: vector.seed)))
        #expect(try key.pemRepresentation() == vector.pem.bytes)
    }

    @Test("a generated key survives a PEM round trip")
    func pemRoundTrip() throws {
        let key = try Ed25519PrivateKey.generate()
        let reloaded = try Ed25519PrivateKey(pem: key.pemRepresentation())
        #expect(reloaded.rawRepresentation == key.rawRepresentation)
        #expect(reloaded.publicKey == key.publicKey)
        let message = "round trip".bytes
        #expect(key.publicKey.isValidSignature(try reloaded.signature(for: message), for: message))
    }

    @Test("refuses a PEM that is not an Ed25519 private key")
    func refusesOtherPEM() throws {
        let p256 = try Ed25519Vectors.load().p256PEM
        for pem in [p256, "not a pem", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", ""] {
            #expect(throws: CryptoError.self) { try Ed25519PrivateKey(pem: pem.bytes) }
        }
    }

    @Test("refuses a tampered message, a tampered signature and another key's signature")
    func refusesForgeries() throws {
        let key = try Ed25519PrivateKey.generate()
        let other = try Ed25519PrivateKey.generate()
        let message = #"{"_type":"timestamp","version":1}"#.bytes
        let signature = try key.signature(for: message)
        #expect(key.publicKey.isValidSignature(signature, for: message))
        #expect(!key.publicKey.isValidSignature(signature, for: message.flippingByte(at: 20)))
        #expect(!key.publicKey.isValidSignature(signature, for: message + [0x20]))
        for index in [0, 31, 32, 63] {
            #expect(!key.publicKey.isValidSignature(signature.flippingByte(at: index), for: message))
        }
        #expect(!key.publicKey.isValidSignature(Array(signature.dropLast()), for: message))
        #expect(!key.publicKey.isValidSignature(signature + [0], for: message))
        #expect(!key.publicKey.isValidSignature([], for: message))
        #expect(!other.publicKey.isValidSignature(signature, for: message))
    }

    @Test("refuses keys of the wrong length")
    func refusesWrongKeyLengths() {
        for count in [0, 31, 33, 64] {
            let raw = [UInt8](repeating: 7, count: count)
            #expect(throws: CryptoError.self) { try Ed25519PublicKey(rawRepresentation: raw) }
            #expect(throws: CryptoError.self) { try Ed25519PrivateKey(rawRepresentation: raw) }
        }
    }
}

@Suite("AES-256-GCM")
struct AESGCMTests {
    static let key = [UInt8](repeating: 0x42, count: 32)
    static let aad = BundleCipher.associatedData(app: "demo", appVersion: "2.3", patch: 1)
    static let plaintext = "console.log('patched');\n".bytes

    @Test("seals to exactly what python's AESGCM produced", arguments: try Fixture.load("aesgcm", as: AESGCMVectors.self).vectors)
    func matchesPython(_ vector: AESGCMVectors.Vector) throws {
        let key = try bytes(hex: vector.key)
        let plaintext = try bytes(hex: vector.plaintext)
        let combined = try bytes(hex: vector.combined)
        let aad = BundleCipher.associatedData(app: vector.app, appVersion: vector.appVersion, patch: vector.patch)
        #expect(aad == vector.aad.bytes)
        #expect(try AESGCM.seal(plaintext, key: key, aad: aad, nonce: bytes(hex: vector.nonce)) == combined)
        #expect(try BundleCipher.seal(plaintext, key: key, app: vector.app, appVersion: vector.appVersion, patch: vector.patch,
                                      nonce: bytes(hex: vector.nonce)) == combined)
        #expect(try AESGCM.open(combined, key: key, aad: aad) == plaintext)
        #expect(try BundleCipher.open(combined, key: key, app: vector.app, appVersion: vector.appVersion, patch: vector.patch) == plaintext)
    }

    @Test("round trips with a fresh random nonce each time")
    func roundTrip() throws {
        let first = try AESGCM.seal(Self.plaintext, key: Self.key, aad: Self.aad)
        let second = try AESGCM.seal(Self.plaintext, key: Self.key, aad: Self.aad)
        #expect(first.count == Self.plaintext.count + AESGCM.overhead)
        #expect(first.prefix(AESGCM.nonceByteCount) != second.prefix(AESGCM.nonceByteCount))
        #expect(try AESGCM.open(first, key: Self.key, aad: Self.aad) == Self.plaintext)
        #expect(try AESGCM.open(second, key: Self.key, aad: Self.aad) == Self.plaintext)
        let empty = try AESGCM.seal([], key: Self.key, aad: [])
        #expect(try AESGCM.open(empty, key: Self.key, aad: []) == [])
    }

    @Test("refuses a wrong key, wrong AAD or any tampered byte")
    func refusesTampering() throws {
        let sealed = try AESGCM.seal(Self.plaintext, key: Self.key, aad: Self.aad)
        let wrongKey = Self.key.flippingByte(at: 0)
        #expect(cryptoFailure { () throws(CryptoError) in try AESGCM.open(sealed, key: wrongKey, aad: Self.aad) } == .authenticationFailed)
        let otherPatch = BundleCipher.associatedData(app: "demo", appVersion: "2.3", patch: 2)
        #expect(cryptoFailure { () throws(CryptoError) in try AESGCM.open(sealed, key: Self.key, aad: otherPatch) } == .authenticationFailed)
        #expect(cryptoFailure { () throws(CryptoError) in try AESGCM.open(sealed, key: Self.key, aad: []) } == .authenticationFailed)
        // Nonce, ciphertext body and tag: every region is covered by authentication.
        for index in [0, 11, 12, sealed.count - 17, sealed.count - 16, sealed.count - 1] {
            let tampered = sealed.flippingByte(at: index)
            #expect(cryptoFailure { () throws(CryptoError) in try AESGCM.open(tampered, key: Self.key, aad: Self.aad) } == .authenticationFailed)
        }
    }

    @Test("a bundle sealed for one patch does not open as another")
    func bindsToPatchIdentity() throws {
        let sealed = try BundleCipher.seal(Self.plaintext, key: Self.key, app: "demo", appVersion: "2.3", patch: 1)
        for (app, version, patch) in [("demo", "2.3", 2), ("demo", "2.4", 1), ("other", "2.3", 1)] {
            #expect(cryptoFailure { () throws(CryptoError) in
                try BundleCipher.open(sealed, key: Self.key, app: app, appVersion: version, patch: patch)
            } == .authenticationFailed)
        }
    }

    @Test("refuses truncated input: too short is invalid, a missing byte fails authentication")
    func refusesTruncation() throws {
        let sealed = try AESGCM.seal(Self.plaintext, key: Self.key, aad: Self.aad)
        let oneShort = Array(sealed.dropLast())
        #expect(cryptoFailure { () throws(CryptoError) in try AESGCM.open(oneShort, key: Self.key, aad: Self.aad) } == .authenticationFailed)
        for count in [0, 12, AESGCM.overhead - 1] {
            let stub = Array(sealed.prefix(count))
            guard case .invalidInput? = cryptoFailure({ () throws(CryptoError) in try AESGCM.open(stub, key: Self.key, aad: Self.aad) }) else {
                Issue.record("\(count) bytes were not refused as invalid input")
                continue
            }
        }
    }

    @Test("refuses keys that are not 32 bytes and nonces that are not 12")
    func refusesBadParameters() {
        for count in [0, 16, 24, 33] {
            let key = [UInt8](repeating: 1, count: count)
            guard case .invalidKey? = cryptoFailure({ () throws(CryptoError) in try AESGCM.seal(Self.plaintext, key: key, aad: []) }) else {
                Issue.record("a \(count)-byte key was accepted for sealing")
                continue
            }
            let sealed = [UInt8](repeating: 0, count: 64)
            guard case .invalidKey? = cryptoFailure({ () throws(CryptoError) in try AESGCM.open(sealed, key: key, aad: []) }) else {
                Issue.record("a \(count)-byte key was accepted for opening")
                continue
            }
        }
        for count in [0, 8, 16] {
            let nonce = [UInt8](repeating: 1, count: count)
            guard case .invalidInput? = cryptoFailure({ () throws(CryptoError) in try AESGCM.seal([], key: Self.key, aad: [], nonce: nonce) }) else {
                Issue.record("a \(count)-byte nonce was accepted")
                continue
            }
        }
    }

    @Test("reads a content key file of 64 hex characters and nothing else")
    func parsesKeyFiles() throws {
        let hex = Hex.encode(Self.key)
        #expect(try BundleCipher.parseKeyFile((hex + "\n").bytes) == Self.key)
        #expect(try BundleCipher.parseKeyFile(hex.uppercased().bytes) == Self.key)
        for bad in [String(hex.dropLast()), hex + "00", "zz" + hex.dropFirst(2), ""] {
            #expect(throws: CryptoError.self) { try BundleCipher.parseKeyFile(bad.bytes) }
        }
        #expect(BundleCipher.keyID(Self.key) == Digest.sha256Hex(Self.key))
    }

    @Test("random bytes have the requested length and differ between calls")
    func secureRandom() throws {
        #expect(try SecureRandom.bytes(0) == [])
        let first = try SecureRandom.bytes(32)
        #expect(first.count == 32)
        #expect(first != (try SecureRandom.bytes(32)))
    }
}
