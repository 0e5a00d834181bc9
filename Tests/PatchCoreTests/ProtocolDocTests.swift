import Foundation
@testable import PatchCore
import PatchCheck
import PatchSigning
import Testing

// Keeps docs/PROTOCOL.md true: every ```vector block in it is re-computed with PatchCore,
// and the example repository of its section 4 (the ```json file=NAME blocks) is
// canonicalised and verified as a TUF client would verify it. Editing a vector or an
// example file in the doc without the code agreeing fails here.

/// One fenced block of the doc: its info string (what follows the opening backticks),
/// the line number of the opening fence and the lines between the fences.
private struct DocBlock {
    let info: String
    let line: Int
    let lines: [String]
}

/// One `key: value` line of a vector block.
struct DocVectorField: Sendable {
    let key: String
    let value: String
}

/// A ```vector block: `key: value` lines, keys may repeat.
struct DocVector: Sendable, CustomTestStringConvertible {
    let line: Int
    let fields: [DocVectorField]

    var kind: String { fields.first { $0.key == "kind" }?.value ?? "" }
    var testDescription: String { "\(kind) vector at docs/PROTOCOL.md:\(line)" }

    func values(_ key: String) -> [String] { fields.filter { $0.key == key }.map(\.value) }

    /// The value of a key that must occur exactly once.
    func value(_ key: String) throws -> String {
        let found = values(key)
        guard found.count == 1 else { throw ProtocolDoc.Problem("\(testDescription): expected one \"\(key)\", found \(found.count)") }
        return found[0]
    }

    func optionalValue(_ key: String) throws -> String? {
        let found = values(key)
        guard found.count <= 1 else { throw ProtocolDoc.Problem("\(testDescription): \"\(key)\" occurs \(found.count) times") }
        return found.first
    }

    func int(_ key: String) throws -> Int {
        let text = try value(key)
        guard let number = Int(text) else { throw ProtocolDoc.Problem("\(testDescription): \"\(key)\" is not an integer: \(text)") }
        return number
    }

    func hex(_ key: String) throws -> [UInt8] { try ProtocolDoc.decodeHex(value(key), what: "\(testDescription) \(key)") }
}

enum ProtocolDoc {
    struct Problem: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// `{package root}/docs/PROTOCOL.md`; this file is `{package root}/Tests/PatchCoreTests/ProtocolDocTests.swift`.
    static let url = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // Tests/PatchCoreTests
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()  // the package root
        .appendingPathComponent("docs")
        .appendingPathComponent("PROTOCOL.md")

    /// The keys each kind of vector may use; anything else is a typo that would skip a check.
    static let knownKeys: [String: Set<String>] = [
        "canonical-json": ["input", "canonical", "canonical-hex"],
        "json-refused": ["input"],
        "ed25519": ["seed", "public", "key-object", "keyid", "signed", "signature"],
        "tuf-key": ["key-object", "keyid", "signed", "signature", "supported"],
        "hashes": ["data", "hashes", "result"],
        "aes-gcm": ["app", "appVersion", "patch", "key", "keyid", "nonce", "aad", "plaintext-hex", "combined"],
        "rollout": ["app", "appVersion", "patch", "deviceID", "sha256-input", "first4", "bucket"],
        "audit-event": ["seq", "at", "app", "actor", "action", "details", "prev", "input", "hash"],
        "app-names": ["valid", "invalid"],
        "app-versions": ["valid", "invalid"],
        "channel-names": ["valid", "invalid"],
        "target": ["channel", "appVersion", "patch", "rollout", "published", "plaintext-hex", "message", "promoted-channel", "promoted-patch",
                   "device-salt", "device", "os-min", "os-max", "admits", "refuses", "path", "hash", "served-path", "custom"],
        "target-refused": ["path", "custom"],
        "role-file-name": ["role", "quoted", "cached"],
        "withhold": ["signed", "path", "sha256", "applies"],
        "withhold-refused": ["signed"],
        "jspatch-selector": ["js", "arity", "selector", "written"],
        "example-repository": ["app", "now", "trusted-root", "metadata-length", "content-key", "target", "served-as", "served-hex", "plaintext-hex"],
    ]

    fileprivate static func blocks() throws -> [DocBlock] {
        let data: Data
        do { data = try Data(contentsOf: url) } catch { throw Problem("cannot read \(url.path): \(error)") }
        guard let text = String(data: data, encoding: .utf8) else { throw Problem("\(url.path) is not UTF-8") }
        var blocks: [DocBlock] = []
        var open: (info: String, line: Int, lines: [String])?
        for (index, rawLine) in text.components(separatedBy: "\n").enumerated() {
            let line = rawLine.hasSuffix("\r") ? String(rawLine.dropLast()) : rawLine
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if var current = open {
                if trimmed == "```" {
                    blocks.append(DocBlock(info: current.info, line: current.line, lines: current.lines))
                    open = nil
                } else {
                    current.lines.append(line)
                    open = current
                }
            } else if trimmed.hasPrefix("```") {
                open = (String(trimmed.dropFirst(3)).trimmingCharacters(in: .whitespaces), index + 1, [])
            }
        }
        if let open { throw Problem("the fenced block opened at docs/PROTOCOL.md:\(open.line) is never closed") }
        return blocks
    }

    /// Every ```vector block, parsed. A line is `key: value` (the value runs to the end of
    /// the line, trailing spaces dropped) or `key:` for the empty string.
    static func vectors() throws -> [DocVector] {
        try blocks().filter { $0.info == "vector" }.map { block in
            var fields: [DocVectorField] = []
            for (offset, line) in block.lines.enumerated() where !line.trimmingCharacters(in: .whitespaces).isEmpty {
                guard let colon = line.firstIndex(of: ":") else {
                    throw Problem("docs/PROTOCOL.md:\(block.line + 1 + offset): expected \"key: value\", got \(line)")
                }
                let key = String(line[..<colon]).trimmingCharacters(in: .whitespaces)
                var value = line[line.index(after: colon)...]
                if value.first == " " { value = value.dropFirst() }
                while let last = value.last, last == " " || last == "\t" { value = value.dropLast() }
                fields.append(DocVectorField(key: key, value: String(value)))
            }
            return DocVector(line: block.line, fields: fields)
        }
    }

    static func vectors(kind: String) throws -> [DocVector] { try vectors().filter { $0.kind == kind } }

    /// The example repository's metadata files: each ```json file=NAME block, as served
    /// (the canonical JSON of the pretty-printed block).
    static func exampleFiles() throws -> [String: [UInt8]] {
        var files: [String: [UInt8]] = [:]
        for block in try blocks() {
            let words = block.info.split(separator: " ")
            guard words.first == "json", let attribute = words.dropFirst().first(where: { $0.hasPrefix("file=") }) else { continue }
            let name = String(attribute.dropFirst("file=".count))
            let json: JSON
            do { json = try JSONParser.parse(block.lines.joined(separator: "\n")) } catch {
                throw Problem("the example \(name) at docs/PROTOCOL.md:\(block.line) is not valid JSON: \(error)")
            }
            guard files[name] == nil else { throw Problem("the example \(name) appears twice") }
            files[name] = json.canonicalBytes
        }
        return files
    }

    static func decodeHex(_ text: String, what: String) throws -> [UInt8] {
        guard let bytes = Hex.decode(text) else { throw Problem("\(what) is not hex: \(text)") }
        return bytes
    }
}

/// Compares bytes exactly (Swift's String `==` would equate canonically equivalent text)
/// and shows both sides readably when they differ.
private func expectBytes(_ actual: [UInt8], _ expected: [UInt8], _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
    guard actual != expected else { return }
    Issue.record("""
        \(what) differs
          computed: \(String(decoding: actual, as: UTF8.self).debugDescription)
                    \(Hex.encode(actual))
          the doc:  \(String(decoding: expected, as: UTF8.self).debugDescription)
                    \(Hex.encode(expected))
        """, sourceLocation: sourceLocation)
}

@Suite("docs/PROTOCOL.md vectors")
struct ProtocolDocTests {
    @Test("every vector has a known kind, only known keys, and every kind is present")
    func structure() throws {
        let vectors = try ProtocolDoc.vectors()
        for vector in vectors {
            guard let keys = ProtocolDoc.knownKeys[vector.kind] else {
                Issue.record("\(vector.testDescription): unknown kind \"\(vector.kind)\"")
                continue
            }
            #expect(vector.values("kind").count == 1, "\(vector.testDescription): one kind per block")
            for field in vector.fields where field.key != "kind" && !keys.contains(field.key) {
                Issue.record("\(vector.testDescription): unknown key \"\(field.key)\"")
            }
        }
        // Deleting vectors must not make the suite pass vacuously.
        let minimum = ["canonical-json": 5, "json-refused": 1, "ed25519": 1, "tuf-key": 3, "hashes": 4, "aes-gcm": 1, "rollout": 5, "audit-event": 1,
                       "app-names": 1, "app-versions": 1, "example-repository": 1, "channel-names": 1, "target": 3, "target-refused": 1,
                       "role-file-name": 1, "withhold": 3, "withhold-refused": 2, "jspatch-selector": 1]
        for (kind, count) in minimum {
            let found = vectors.filter { $0.kind == kind }.count
            #expect(found >= count, "docs/PROTOCOL.md has \(found) \(kind) vector(s), expected at least \(count)")
        }
        // The doc promises the RFC 8032 test 1 key and a genesis audit event.
        #expect(try vectors.filter { $0.kind == "ed25519" }.contains { try $0.value("public") == "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a" })
        #expect(try vectors.filter { $0.kind == "audit-event" }.contains { try $0.int("seq") == 1 })
    }

    @Test("canonical JSON", arguments: try ProtocolDoc.vectors(kind: "canonical-json"))
    func canonicalJSON(_ vector: DocVector) throws {
        let computed = try JSONParser.parse(vector.value("input")).canonicalBytes
        let texts = vector.values("canonical")
        let hexes = vector.values("canonical-hex")
        #expect(!(texts.isEmpty && hexes.isEmpty), "\(vector.testDescription) needs canonical or canonical-hex")
        for text in texts { expectBytes(computed, Array(text.utf8), "canonical JSON of \(vector.testDescription)") }
        for hex in hexes {
            expectBytes(computed, try ProtocolDoc.decodeHex(hex, what: "canonical-hex"), "canonical JSON bytes of \(vector.testDescription)")
        }
    }

    @Test("refused JSON", arguments: try ProtocolDoc.vectors(kind: "json-refused"))
    func refusedJSON(_ vector: DocVector) {
        #expect(!vector.values("input").isEmpty)
        for input in vector.values("input") {
            #expect(throws: JSONError.self, "\(vector.testDescription): \(input) must be refused") { try JSONParser.parse(input) }
        }
    }

    @Test("Ed25519 key id and signature", arguments: try ProtocolDoc.vectors(kind: "ed25519"))
    func ed25519(_ vector: DocVector) throws {
        let key = try Ed25519PrivateKey(rawRepresentation: vector.hex("seed"))
        #expect(key.publicKey.hex == (try vector.value("public")))
        let keyObject = try vector.value("key-object")
        expectBytes(key.tufKey.json.canonicalBytes, Array(keyObject.utf8), "canonical key object")
        #expect(key.tufKey.keyID == (try vector.value("keyid")))
        #expect(Digest.sha256Hex(Array(keyObject.utf8)) == (try vector.value("keyid")))

        // `signed` is given in canonical form: re-canonicalising must not change a byte.
        let message = Array(try vector.value("signed").utf8)
        expectBytes(try JSONParser.parse(message).canonicalBytes, message, "the signed message is canonical")
        let signature = try vector.hex("signature")
        #expect(Hex.encode(try key.signature(for: message)) == Hex.encode(signature))
        #expect(key.publicKey.isValidSignature(signature, for: message))
    }

    @Test("TUF key objects of every type: keyid over the object as served, signature", arguments: try ProtocolDoc.vectors(kind: "tuf-key"))
    func tufKey(_ vector: DocVector) throws {
        let object = try JSONParser.parse(vector.value("key-object"))
        let key = try TUFKey(json: object)
        #expect(key.keyID == (try vector.value("keyid")))
        #expect(Digest.sha256Hex(object.canonicalBytes) == (try vector.value("keyid")))
        #expect(key.json == object, "every member kept")
        let supported = try vector.optionalValue("supported") != "false"
        #expect(key.isSupported == supported)
        guard supported else { return }
        let message = Array(try vector.value("signed").utf8)
        expectBytes(try JSONParser.parse(message).canonicalBytes, message, "the signed message is canonical")
        let signature = try vector.hex("signature")
        #expect(key.isValidSignature(signature, for: message))
        #expect(!key.isValidSignature(signature, for: message + [0x20]))
    }

    @Test("which listed hashes must match", arguments: try ProtocolDoc.vectors(kind: "hashes"))
    func hashes(_ vector: DocVector) throws {
        let data = Array(try vector.value("data").replacingOccurrences(of: "\\n", with: "\n").utf8)
        let listed = try #require(JSONParser.parse(vector.value("hashes")).objectValue).compactMapValues(\.stringValue)
        let file = TargetFile(length: data.count, hashes: listed)
        switch try vector.value("result") {
        case "accept": try file.verify(data, path: "doc")
        case "refuse": #expect(throws: TUFError.self) { try file.verify(data, path: "doc") }
        case let other: Issue.record("\(vector.testDescription): result must be accept or refuse, got \(other)")
        }
    }

    @Test("AES-256-GCM bundle", arguments: try ProtocolDoc.vectors(kind: "aes-gcm"))
    func aesGCM(_ vector: DocVector) throws {
        let app = try vector.value("app"), appVersion = try vector.value("appVersion"), patch = try vector.int("patch")
        let key = try vector.hex("key"), nonce = try vector.hex("nonce"), plaintext = try vector.hex("plaintext-hex")
        let combined = try vector.hex("combined")
        expectBytes(BundleCipher.associatedData(app: app, appVersion: appVersion, patch: patch), Array(try vector.value("aad").utf8), "AAD")
        #expect(BundleCipher.keyID(key) == (try vector.value("keyid")))
        let sealed = try BundleCipher.seal(plaintext, key: key, app: app, appVersion: appVersion, patch: patch, nonce: nonce)
        #expect(Hex.encode(sealed) == Hex.encode(combined))
        #expect(combined.count == AESGCM.nonceByteCount + plaintext.count + AESGCM.tagByteCount)
        #expect(Array(combined.prefix(AESGCM.nonceByteCount)) == nonce)
        #expect(try BundleCipher.open(combined, key: key, app: app, appVersion: appVersion, patch: patch) == plaintext)
    }

    @Test("rollout bucket", arguments: try ProtocolDoc.vectors(kind: "rollout"))
    func rollout(_ vector: DocVector) throws {
        let app = try vector.value("app"), appVersion = try vector.value("appVersion")
        let patch = try vector.int("patch"), deviceID = try vector.value("deviceID"), bucket = try vector.int("bucket")
        let input = Array("\(app)|\(appVersion)|\(patch)|\(deviceID)".utf8)
        expectBytes(input, Array(try vector.value("sha256-input").utf8), "rollout hash input")
        let first4 = Array(Digest.sha256(input).prefix(4))
        #expect(Hex.encode(first4) == (try vector.value("first4")))
        let bigEndian = first4.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        #expect(Int(bigEndian % 100) == bucket)
        #expect(Rollout.bucket(app: app, appVersion: appVersion, patch: patch, deviceID: deviceID) == bucket)
        #expect(!Rollout.includes(percent: bucket, app: app, appVersion: appVersion, patch: patch, deviceID: deviceID))
        #expect(Rollout.includes(percent: bucket + 1, app: app, appVersion: appVersion, patch: patch, deviceID: deviceID))
    }

    static let auditDetails: [String: Set<String>] = [
        "app.create": ["encrypted", "rootVersion", "rootKeyID", "targetsKeyID", "snapshotKeyID", "timestampKeyID"],
        "patch.publish": ["appVersion", "patch", "rollout", "length", "sha256", "md5", "servedSha256"],
        "patch.revoke": ["appVersion", "patches"],
        "patch.rollout": ["appVersion", "patch", "from", "to"],
        "key.rotate": ["role", "oldKeyIDs", "newKeyID", "rootVersion"],
    ]

    @Test("audit event hash", arguments: try ProtocolDoc.vectors(kind: "audit-event"))
    func auditEvent(_ vector: DocVector) throws {
        let seq = try vector.int("seq"), action = try vector.value("action"), prev = try vector.value("prev")
        let details = try JSONParser.parse(vector.value("details"))
        let object: JSON = .object([
            "seq": .int(Int64(seq)), "at": .string(try vector.value("at")), "app": .string(try vector.value("app")),
            "actor": .string(try vector.value("actor")), "action": .string(action), "details": details, "prev": .string(prev),
        ])
        let input = object.canonicalBytes
        if let given = try vector.optionalValue("input") { expectBytes(input, Array(given.utf8), "audit hash input") }
        #expect(Digest.sha256Hex(input) == (try vector.value("hash")))
        #expect(TUFTime.parse(try vector.value("at")) != nil, "at is a TUF time")
        let expectedDetails = try #require(Self.auditDetails[action], "unknown action \(action)")
        #expect(Set(details.objectValue?.keys.map { $0 } ?? []) == expectedDetails)
        if seq == 1 { #expect(prev == String(repeating: "0", count: 64), "the genesis event links to 64 zeros") }
    }

    @Test("audit events given in sequence link to each other")
    func auditChain() throws {
        let events = try ProtocolDoc.vectors(kind: "audit-event").map { (seq: try $0.int("seq"), prev: try $0.value("prev"), hash: try $0.value("hash")) }
            .sorted { $0.seq < $1.seq }
        for (earlier, later) in zip(events, events.dropFirst()) where later.seq == earlier.seq + 1 {
            #expect(later.prev == earlier.hash, "event \(later.seq) must link to event \(earlier.seq)")
        }
    }

    @Test("app names", arguments: try ProtocolDoc.vectors(kind: "app-names"))
    func appNames(_ vector: DocVector) {
        for name in vector.values("valid") { #expect((try? AppName(name)) != nil, "\(name) is a valid app name") }
        for name in vector.values("invalid") {
            #expect(throws: ValidationError.self, "\(name) is not a valid app name") { try AppName(name) }
        }
    }

    @Test("app versions", arguments: try ProtocolDoc.vectors(kind: "app-versions"))
    func appVersions(_ vector: DocVector) {
        for version in vector.values("valid") { #expect((try? AppVersion(version)) != nil, "\(version) is a valid app version") }
        for version in vector.values("invalid") {
            #expect(throws: ValidationError.self, "\(version) is not a valid app version") { try AppVersion(version) }
        }
    }

    @Test("channel names", arguments: try ProtocolDoc.vectors(kind: "channel-names"))
    func channelNames(_ vector: DocVector) {
        for name in vector.values("valid") { #expect((try? ChannelName(name)) != nil, "\(name) is a valid channel name") }
        for name in vector.values("invalid") {
            #expect(throws: ValidationError.self, "\(name) is not a valid channel name") { try ChannelName(name) }
        }
    }

    @Test("delegated role names: the URL's file name and the client cache's", arguments: try ProtocolDoc.vectors(kind: "role-file-name"))
    func roleFileNames(_ vector: DocVector) {
        let (roles, quoted, cached) = (vector.values("role"), vector.values("quoted"), vector.values("cached"))
        #expect(!roles.isEmpty && quoted.count == roles.count && cached.count == roles.count, "\(vector.testDescription): role, quoted, cached in threes")
        for (role, (url, file)) in zip(roles, zip(quoted, cached)) {
            #expect(RoleFileName.quoted(role) == url, "the URL name of \(role)")
            #expect(RoleFileName.cached(role) == file, "the cache's name of \(role)")
        }
    }

    @Test("JSPatch method names as selectors, and selectors as a script writes them", arguments: try ProtocolDoc.vectors(kind: "jspatch-selector"))
    func jspatchSelectors(_ vector: DocVector) throws {
        let (names, arities, selectors, written) = (vector.values("js"), vector.values("arity"), vector.values("selector"), vector.values("written"))
        #expect(!names.isEmpty && arities.count == names.count && selectors.count == names.count && written.count == names.count,
                "\(vector.testDescription): js, arity, selector, written in fours")
        for index in names.indices {
            let arity = try #require(Int(arities[index]), "\(vector.testDescription): arity \(arities[index])")
            #expect(JSPatchSelector.selector(jsName: names[index], arity: arity) == selectors[index], "the selector of \(names[index]) with \(arity) arguments")
            #expect(JSPatchSelector.jsName(selector: selectors[index]) == written[index], "how a script writes \(selectors[index])")
        }
    }

    @Test("withhold files: what an entry does to a signed target (halt, rollBack, nothing)", arguments: try ProtocolDoc.vectors(kind: "withhold"))
    func withhold(_ vector: DocVector) throws {
        let withholds = try Withholds(body: try TargetsBody(signed: try JSONParser.parse(vector.value("signed"))))
        let file = TargetFile(length: 1, hashes: ["sha256": try vector.value("sha256")])
        let path = try vector.value("path")
        let (listed, halted) = withholds.apply(to: [path: file])
        let applies = listed[path] == nil ? "rollBack" : halted.contains(path) ? "halt" : "nothing"
        #expect(applies == (try vector.value("applies")), "\(vector.testDescription)")
    }

    @Test("withhold files a client refuses whole", arguments: try ProtocolDoc.vectors(kind: "withhold-refused"))
    func withholdRefused(_ vector: DocVector) throws {
        let body = try TargetsBody(signed: try JSONParser.parse(vector.value("signed")))
        #expect(throws: TUFError.self, "\(vector.testDescription)") { try Withholds(body: body) }
    }

    @Test("target path and signed custom fields, written and read back", arguments: try ProtocolDoc.vectors(kind: "target"))
    func target(_ vector: DocVector) throws {
        let plaintext = try vector.hex("plaintext-hex")
        let digests = BundleDigests(of: plaintext)
        let origin = try vector.optionalValue("promoted-channel").map { channel in
            PatchTargetInfo.Origin(channel: try ChannelName(channel), patch: try vector.int("promoted-patch"), sha256: digests.sha256)
        }
        let devices = try vector.optionalValue("device-salt").map { salt in
            try DeliveryConditions.Devices.hashing(vector.values("device"), salt: Hex.decode(salt) ?? [])
        }
        let minOS = try vector.optionalValue("os-min").map { try OSVersion($0) }
        let maxOS = try vector.optionalValue("os-max").map { try OSVersion($0) }
        let os = minOS == nil && maxOS == nil ? nil : try DeliveryConditions.OSRange(min: minOS, max: maxOS)
        let conditions = devices == nil && os == nil ? nil : try DeliveryConditions(devices: devices, os: os)
        let written = PatchTargetInfo(appVersion: try AppVersion(try vector.value("appVersion")), channel: try ChannelName(try vector.value("channel")),
                                      patch: try vector.int("patch"), rollout: try vector.int("rollout"), published: try vector.value("published"),
                                      plaintext: digests, encryption: nil, message: try vector.optionalValue("message"), promotedFrom: origin,
                                      conditions: conditions)
        // "admits: DEVICE OS" / "refuses: DEVICE OS", "-" for a device that sends no OS version.
        for (key, expected) in [("admits", true), ("refuses", false)] {
            for line in vector.values(key) {
                let parts = line.split(separator: " ").map(String.init)
                #expect(parts.count == 2 && written.admits(deviceID: parts[0], osVersion: parts[1] == "-" ? nil : parts[1]) == expected, "\(key): \(line)")
            }
        }
        #expect(written.path == (try vector.value("path")))
        #expect(written.servedPath(hash: try vector.value("hash")) == (try vector.value("served-path")))
        #expect(written.custom.canonicalString == (try vector.value("custom")))
        let file = TargetFile(length: plaintext.count, hashes: ["sha256": digests.sha256], custom: try JSONParser.parse(Array(try vector.value("custom").utf8)))
        #expect(PatchTargetInfo(path: try vector.value("path"), file: file) == written, "the reader gets back what was written")
    }

    @Test("target paths a reader refuses", arguments: try ProtocolDoc.vectors(kind: "target-refused"))
    func targetRefused(_ vector: DocVector) throws {
        let file = TargetFile(length: 1, hashes: ["sha256": String(repeating: "0", count: 64)], custom: try JSONParser.parse(Array(try vector.value("custom").utf8)))
        for path in vector.values("path") { #expect(PatchTargetInfo(path: path, file: file) == nil, "\(path) is refused") }
    }

    @Test("the example repository verifies and its patch decrypts", arguments: try ProtocolDoc.vectors(kind: "example-repository"))
    func exampleRepository(_ vector: DocVector) async throws {
        let files = try ProtocolDoc.exampleFiles()
        let rootName = try vector.value("trusted-root")
        let trustedRoot = try #require(files[rootName], "no ```json file=\(rootName) block")
        // The served sizes the doc states: "NAME BYTES" per file, and every example file is stated.
        let lengths = vector.values("metadata-length")
        #expect(Set(lengths.compactMap { $0.split(separator: " ").first.map(String.init) }) == Set(files.keys))
        for entry in lengths {
            let parts = entry.split(separator: " ")
            let name = parts.first.map(String.init) ?? ""
            #expect(parts.count == 2 && files[name]?.count == Int(parts[1]), "\(name) is \(files[name]?.count ?? -1) bytes as served; the doc says \(entry)")
        }
        let served = try vector.hex("served-hex")
        let servedAs = vector.values("served-as")
        #expect(servedAs.count == 2, "a target is served under its md5 and its sha256")
        let app = try vector.value("app")
        let contentKey = try vector.hex("content-key")
        // content.key holds the 64 hex characters and a newline.
        #expect(try BundleCipher.parseKeyFile(Array((try vector.value("content-key") + "\n").utf8)) == contentKey)
        let now = try #require(TUFTime.parse(try vector.value("now")))

        let source = MemoryRepository(metadataFiles: files, targetFiles: Dictionary(uniqueKeysWithValues: servedAs.map { ($0, served) }))
        let report = try await RepositoryVerifier.verify(fetcher: source, trustedRoot: trustedRoot, app: app, contentKey: contentKey, now: now)
        #expect(report.ok, "\(report.targets.compactMap(\.problem))")
        #expect(report.targets.map(\.path) == [try vector.value("target")])
        for target in report.targets {
            #expect(target.encrypted && target.plaintextChecked, "\(target.path) was decrypted and checked against its signed digests")
        }

        // And the plaintext is the one the doc shows.
        let parts = try vector.value("target").split(separator: "/")
        let patch = try #require(Int(parts[1]))
        let plaintext = try BundleCipher.open(served, key: contentKey, app: app, appVersion: String(parts[0]), patch: patch)
        #expect(Hex.encode(plaintext) == (try vector.value("plaintext-hex")))
    }
}
