import Foundation
import PatchCore
import PatchSigning
import Testing

@Suite("TUF expiry timestamps")
struct TUFTimeTests {
    @Test("formats as YYYY-MM-DDTHH:MM:SSZ in UTC, dropping fractions")
    func formats() {
        #expect(TUFTime.format(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00Z")
        #expect(TUFTime.format(Date(timeIntervalSince1970: 1_893_456_000)) == "2030-01-01T00:00:00Z")
        #expect(TUFTime.format(Date(timeIntervalSince1970: 1_750_000_000.999)) == "2025-06-15T15:06:40Z")
        #expect(TUFTime.format(Date(timeIntervalSince1970: 951_825_599)) == "2000-02-29T11:59:59Z")
    }

    @Test("parses what it formats", arguments: ["1970-01-01T00:00:00Z", "2024-02-29T23:59:59Z", "2030-12-31T00:00:00Z", "2099-07-04T12:30:45Z"])
    func roundTrips(_ text: String) throws {
        let date = try #require(TUFTime.parse(text))
        #expect(TUFTime.format(date) == text)
    }

    @Test("parses to the right instant")
    func parsesInstant() {
        #expect(TUFTime.parse("2030-01-01T00:00:00Z") == Date(timeIntervalSince1970: 1_893_456_000))
    }

    @Test("refuses every other spelling python-tuf refuses", arguments: [
        "2030-01-01T00:00:00.000Z", "2030-01-01T00:00:00+00:00", "2030-01-01T00:00:00", "2030-01-01 00:00:00Z",
        "2030-01-01t00:00:00Z", "2030-01-01T00:00:00z", "2030-02-31T00:00:00Z", "2023-02-29T00:00:00Z",
        "2030-04-31T00:00:00Z", "2030-13-01T00:00:00Z", "2030-00-01T00:00:00Z", "2030-01-00T00:00:00Z",
        "2030-01-01T24:00:00Z", "2030-01-01T23:60:00Z", "2030-01-01T23:59:60Z", "2030-1-01T00:00:00Z",
        "30-01-01T00:00:00Z", "2030-01-01T00:00:00ZZ", " 2030-01-01T00:00:00Z", "2030-01-01", "", "+030-01-01T00:00:00Z",
        "２０30-01-01T00:00:00Z",
    ])
    func refuses(_ text: String) {
        #expect(TUFTime.parse(text) == nil)
    }
}

@Suite("TUF metadata documents")
struct TUFMetadataTests {
    @Test("each role signs, serialises and parses back to the same body")
    func roundTripsEveryRole() throws {
        let repo = try TestRepository()
        let files = try repo.files(version: 3)

        let root = try SignedRoot(bytes: files.root)
        #expect(root.body == repo.rootBody())
        try root.verify(role: .root, delegator: root.body)

        let targets = try SignedTargets(bytes: files.targets)
        #expect(targets.body == repo.targetsBody(version: 3))
        try targets.verify(role: .targets, delegator: root.body)

        let snapshot = try SignedSnapshot(bytes: files.snapshot)
        #expect(snapshot.body.meta == ["targets.json": MetaFile(version: 3, bytes: files.targets)])
        try snapshot.verify(role: .snapshot, delegator: root.body)

        let timestamp = try SignedTimestamp(bytes: files.timestamp)
        #expect(timestamp.body.snapshot == MetaFile(version: 3, bytes: files.snapshot))
        #expect(timestamp.body.version == 3)
        #expect(timestamp.body.expires == TestRepository.inAYear)
        try timestamp.verify(role: .timestamp, delegator: root.body)
    }

    @Test("files are canonical JSON, so re-encoding gives the same bytes")
    func filesAreCanonical() throws {
        let files = try TestRepository().files()
        for file in [files.root, files.timestamp, files.snapshot, files.targets] {
            #expect(try JSONParser.parse(file).canonicalBytes == file)
        }
        #expect(try SignedRoot(bytes: files.root).bytes == files.root)
    }

    @Test("the keyid is the sha256 of the key's canonical JSON")
    func keyIDIsComputed() throws {
        let privateKey = try Ed25519PrivateKey.generate()
        let key = privateKey.tufKey
        let expected = #"{"keytype":"ed25519","keyval":{"public":"\#(privateKey.publicKey.hex)"},"scheme":"ed25519"}"#
        #expect(key.json.canonicalString == expected)
        #expect(key.keyID == Digest.sha256Hex(expected.bytes))
    }

    @Test("signatures are ordered by keyid")
    func signaturesAreSorted() throws {
        let keys = try (0..<5).map { _ in try Ed25519PrivateKey.generate() }
        let signed = try SignedMetadata(signing: TestRepository().targetsBody(), with: keys)
        #expect(signed.signatures.map(\.keyID) == keys.map(\.tufKey.keyID).sorted())
    }

    @Test("unknown fields survive parsing and are covered by the signature")
    func keepsUnknownFields() throws {
        let repo = try TestRepository()
        var body = repo.targetsBody()
        body.common.extra = ["x-hotpatch-note": "kept", "delegations": ["keys": [:], "roles": []]]
        let bytes = try TestRepository.sign(body, with: repo.keys(.targets))
        let parsed = try SignedTargets(bytes: bytes)
        // `delegations` is modelled now (spec 4.5), the rest is kept as received.
        #expect(parsed.body.common.extra == ["x-hotpatch-note": "kept"])
        #expect(parsed.body.delegations == Delegations(keys: [:], roles: []))
        #expect(parsed.signedJSON["x-hotpatch-note"] == "kept")
        let root = try SignedRoot(bytes: repo.root())
        try parsed.verify(role: .targets, delegator: root.body)

        let edited = String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: "\"kept\"", with: "\"lost\"")
        let forged = try SignedTargets(bytes: edited.bytes)
        #expect(throws: TUFError.unsignedThreshold(role: "targets", valid: 0, threshold: 1)) {
            try forged.verify(role: .targets, delegator: root.body)
        }
    }

    @Test("verifies what was received even when it is not canonical on the wire")
    func verifiesNonCanonicalInput() throws {
        let repo = try TestRepository()
        let signed = try SignedMetadata(signing: repo.targetsBody(), with: repo.keys(.targets))
        let signatures = JSON.array(signed.signatures.map(\.json)).canonicalString
        let spaced = "{\n  \"signatures\" : \(signatures),\n  \"signed\" :   \(signed.signedJSON.canonicalString)\n}\n"
        let parsed = try SignedTargets(bytes: spaced.bytes)
        try parsed.verify(role: .targets, delegator: repo.rootBody())
        #expect(parsed.bytes == signed.bytes)
    }

    @Test("refuses a document of another role")
    func refusesWrongType() throws {
        let files = try TestRepository().files()
        #expect(throws: TUFError.wrongType(expected: "root", got: "timestamp")) { try SignedRoot(bytes: files.timestamp) }
        #expect(throws: TUFError.wrongType(expected: "targets", got: "snapshot")) { try SignedTargets(bytes: files.snapshot) }
    }

    /// The timestamp file with its `signed` member edited; signatures are left as they were,
    /// since these documents must fail before any signature is checked.
    private func timestamp(editing edit: (inout [String: JSON]) -> Void) throws -> [UInt8] {
        let repo = try TestRepository()
        let signed = try SignedTimestamp(bytes: repo.files().timestamp)
        var members = try #require(signed.signedJSON.objectValue)
        edit(&members)
        return JSON.object(["signed": .object(members), "signatures": .array(signed.signatures.map(\.json))]).canonicalBytes
    }

    @Test("refuses malformed common fields", arguments: [
        ("version 0", "version", JSON.int(0)), ("negative version", "version", -1), ("string version", "version", "1"),
        ("fractional expiry", "expires", "2030-01-01T00:00:00.000Z"), ("offset expiry", "expires", "2030-01-01T00:00:00+00:00"),
        ("spec 2.0", "spec_version", "2.0"), ("spec 1", "spec_version", "1"), ("spec 1.0.0.1", "spec_version", "1.0.0.1"),
        ("spec 1.0.x", "spec_version", "1.0.x"), ("spec 1..", "spec_version", "1.."), ("spec 1.a", "spec_version", "1.a"),
        ("spec 01.0", "spec_version", "01.0"), ("spec as number", "spec_version", 1),
        ("missing _type", "_type", nil), ("missing meta", "meta", nil),
        ("two meta entries", "meta", ["snapshot.json": ["version": 1], "targets.json": ["version": 1]]),
        ("meta version 0", "meta", ["snapshot.json": ["version": 0]]),
        ("negative length", "meta", ["snapshot.json": ["version": 1, "length": -1]]),
        ("empty hashes", "meta", ["snapshot.json": ["version": 1, "hashes": [:]]]),
    ] as [(String, String, JSON)])
    func refusesMalformedFields(_ label: String, _ field: String, _ value: JSON) throws {
        let bytes = try timestamp { members in
            if value == .null { members[field] = nil } else { members[field] = value }
        }
        #expect(throws: TUFError.self, "\(label)") { try SignedTimestamp(bytes: bytes) }
    }

    @Test("accepts the spec versions python-tuf accepts", arguments: ["1.0", "1.0.31", "1.2.0", "1.0.0"])
    func acceptsSpecVersions(_ spec: String) throws {
        let bytes = try timestamp { $0["spec_version"] = .string(spec) }
        #expect(try SignedTimestamp(bytes: bytes).body.common.specVersion == spec)
    }

    @Test("refuses duplicate keyids in signatures")
    func refusesDuplicateSignatures() throws {
        let signed = try SignedTimestamp(bytes: TestRepository().files().timestamp)
        let signatures = JSON.array((signed.signatures + signed.signatures).map(\.json))
        let bytes = JSON.object(["signed": signed.signedJSON, "signatures": signatures]).canonicalBytes
        #expect(throws: TUFError.malformed(role: "timestamp", reason: "duplicate keyid in signatures")) {
            try SignedTimestamp(bytes: bytes)
        }
    }

    @Test("refuses a root whose keyid does not match its key, or whose roles are incomplete")
    func refusesInconsistentRoot() throws {
        let repo = try TestRepository()
        let root = try SignedRoot(bytes: repo.root())
        var members = try #require(root.signedJSON.objectValue)
        let keys = try #require(members["keys"]?.objectValue)
        let (keyID, key) = try #require(keys.first)
        var badKeys = keys
        badKeys[keyID] = nil
        badKeys[String(repeating: "0", count: 64)] = key
        members["keys"] = .object(badKeys)
        #expect(throws: TUFError.self) { try RootBody(signed: .object(members)) }

        var roles = try #require(root.signedJSON["roles"]?.objectValue)
        roles["snapshot"] = nil
        members = try #require(root.signedJSON.objectValue)
        members["roles"] = .object(roles)
        #expect(throws: TUFError.self) { try RootBody(signed: .object(members)) }

        roles = try #require(root.signedJSON["roles"]?.objectValue)
        roles["mirror"] = ["keyids": [], "threshold": 1]
        members["roles"] = .object(roles)
        #expect(throws: TUFError.self) { try RootBody(signed: .object(members)) }

        roles = try #require(root.signedJSON["roles"]?.objectValue)
        roles["timestamp"] = ["keyids": [], "threshold": 0]
        members["roles"] = .object(roles)
        #expect(throws: TUFError.self) { try RootBody(signed: .object(members)) }
    }

    @Test("refuses ed25519 keys that are not 64 lowercase hex characters, and rsa keys that are not PEM")
    func refusesForeignKeys() throws {
        let hex = try Ed25519PrivateKey.generate().publicKey.hex
        for key: JSON in [
            ["keytype": "rsa", "scheme": "rsassa-pss-sha256", "keyval": ["public": .string(hex)]],
            ["keytype": "ed25519", "scheme": "ed25519", "keyval": ["public": .string(hex.uppercased())]],
            ["keytype": "ed25519", "scheme": "ed25519", "keyval": ["public": .string(String(hex.dropLast(2)))]],
        ] {
            let keyID = Digest.sha256Hex(key.canonicalBytes)
            let repo = try TestRepository()
            var members = try #require(SignedRoot(bytes: repo.root()).signedJSON.objectValue)
            members["keys"] = .object([keyID: key])
            #expect(throws: TUFError.self) { try RootBody(signed: .object(members)) }
        }
    }

    @Test("checks a target's length and every listed hash")
    func verifiesTargets() throws {
        let bundle = TestRepository.bundle
        let digests = BundleDigests(of: bundle)
        let file = TargetFile(length: bundle.count, hashes: ["sha256": digests.sha256, "md5": digests.md5])
        try file.verify(bundle, path: "p")

        #expect(throws: TUFError.lengthMismatch(what: "target p", expected: bundle.count, got: bundle.count + 1)) {
            try file.verify(bundle + [0], path: "p")
        }
        #expect(throws: TUFError.lengthMismatch(what: "target p", expected: bundle.count, got: bundle.count - 1)) {
            try file.verify(Array(bundle.dropLast()), path: "p")
        }
        #expect(throws: TUFError.self) { try file.verify(bundle.flippingByte(at: 3), path: "p") }
        let badMD5 = TargetFile(length: bundle.count, hashes: ["sha256": digests.sha256, "md5": String(repeating: "0", count: 32)])
        #expect(throws: TUFError.hashMismatch(what: "target p", algorithm: "md5")) { try badMD5.verify(bundle, path: "p") }
        let unknown = TargetFile(length: bundle.count, hashes: ["sha256": digests.sha256, "sha3-256": "00"])
        #expect(throws: TUFError.self) { try unknown.verify(bundle, path: "p") }
    }
}
