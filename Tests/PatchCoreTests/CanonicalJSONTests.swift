import PatchCore
import Testing

struct CanonicalVectors: Decodable {
    struct Vector: Decodable, Sendable, CustomTestStringConvertible {
        let input: String
        let canonical: String
        var testDescription: String { input.debugSanitized }
    }

    let vectors: [Vector]
    let refused: [String]

    static func load() throws -> CanonicalVectors { try Fixture.load("canonical") }

    /// Canonical JSON writes control characters raw, which strict JSON may not read back.
    static func readableVectors() throws -> [Vector] {
        try load().vectors.filter { !$0.canonical.unicodeScalars.contains { $0.value < 0x20 } }
    }
}

/// The parser's error for `bytes`, or nil when it parsed.
private func parseFailure(_ bytes: [UInt8], maxDepth: Int = JSONParser.defaultMaxDepth, maxLength: Int = 16 << 20) -> JSONError? {
    do {
        _ = try JSONParser.parse(bytes, maxDepth: maxDepth, maxLength: maxLength)
        return nil
    } catch {
        return error
    }
}

private func parseFailure(_ text: String) -> JSONError? { parseFailure(text.bytes) }

extension JSONError {
    var isSyntax: Bool {
        if case .syntax = self { return true }
        return false
    }
}

@Suite("Canonical JSON matches securesystemslib")
struct CanonicalEncodingTests {
    @Test("encodes each vector byte for byte as encode_canonical does", arguments: try CanonicalVectors.load().vectors)
    func matchesReference(_ vector: CanonicalVectors.Vector) throws {
        let value = try JSONParser.parse(vector.input)
        #expect(value.canonicalBytes == vector.canonical.bytes)
        #expect(value.canonicalString == vector.canonical)
    }

    @Test("canonical output without raw control characters parses back to itself", arguments: try CanonicalVectors.readableVectors())
    func canonicalIsAFixedPoint(_ vector: CanonicalVectors.Vector) throws {
        let reparsed = try JSONParser.parse(vector.canonical)
        #expect(reparsed.canonicalBytes == vector.canonical.bytes)
        #expect(reparsed == (try JSONParser.parse(vector.input)))
    }

    @Test("refuses every float the reference refuses", arguments: try CanonicalVectors.load().refused)
    func refusesFloats(_ input: String) {
        guard case .floatNotAllowed? = parseFailure(input) else {
            Issue.record("\(input) was not refused as a float: \(String(describing: parseFailure(input)))")
            return
        }
    }

    @Test("sorts keys by code point, not by Swift string order")
    func sortsByCodePoint() {
        // Swift's `<` treats "e" + U+0301 as "é"; by code point plain "e" sorts first.
        let value: JSON = ["\u{E9}a": 1, "e\u{301}x": 2, "Z": 3, "a": 4]
        #expect(value.canonicalString == "{\"Z\":3,\"a\":4,\"e\u{301}x\":2,\"\u{E9}a\":1}")
    }

    @Test("escapes only quote and backslash and writes everything else raw")
    func escapesOnlyQuoteAndBackslash() {
        let value: JSON = .string("\"\\/\n\t\u{0}\u{7F}é🚀")
        #expect(value.canonicalBytes == [0x22, 0x5C, 0x22, 0x5C, 0x5C, 0x2F, 0x0A, 0x09, 0x00, 0x7F] + "é🚀".bytes + [0x22])
    }

    @Test("the served form escapes the control characters, and parses back to the same value")
    func servedFormEscapesControls() throws {
        let controls = String(decoding: (0..<0x20).map { UInt8($0) }, as: UTF8.self)
        let value: JSON = ["key\u{1}": .string("-----BEGIN PUBLIC KEY-----\nAB\n" + controls), "plain": "\"\\/\u{7F}é🚀"]
        let wire = value.wireBytes
        #expect(!wire.contains { $0 < 0x20 }, "no raw control character is served")
        let text = String(decoding: wire, as: UTF8.self)
        #expect(text.contains(#""key\u0001""#) && text.contains(#"KEY-----\nAB\n\u0000\u0001"#) && text.contains(#"\t\n\u000b"#))
        #expect(try JSONParser.parse(wire) == value)
        // Without control characters the served form is the canonical form.
        let plain: JSON = ["b": "\"\\/\u{7F}é🚀", "a": [1, -2]]
        #expect(plain.wireBytes == plain.canonicalBytes)
    }

    @Test("writes values built in Swift without whitespace")
    func encodesLiterals() {
        let value: JSON = ["b": [true, false, nil, -5, "x"], "a": [:], "c": []]
        #expect(value.canonicalString == #"{"a":{},"b":[true,false,null,-5,"x"],"c":[]}"#)
        #expect(JSON.int(.min).canonicalString == "-9223372036854775808")
        #expect(JSON.int(.max).canonicalString == "9223372036854775807")
    }
}

@Suite("JSON parser strictness")
struct JSONParserStrictnessTests {
    @Test("refuses duplicate keys, however they are spelled", arguments: [
        #"{"a":1,"a":2}"#,
        #"{"a":1,"\u0061":2}"#,
        #"{"x":{"k":true,"k":true}}"#,
        #"[{"k":1,"k":1}]"#,
    ])
    func refusesDuplicateKeys(_ input: String) {
        guard case .duplicateKey? = parseFailure(input) else {
            Issue.record("\(input) was not refused for a duplicate key")
            return
        }
    }

    @Test("refuses keys that differ only by Unicode normalisation instead of merging them")
    func refusesCanonicallyEquivalentKeys() {
        // Swift's String equality would fold the two keys into one dictionary entry; a
        // signer that kept both would then sign a document we read differently.
        guard case .duplicateKey? = parseFailure(#"{"\u00e9":1,"e\u0301":2}"#) else {
            Issue.record("canonically equivalent keys were accepted")
            return
        }
    }

    @Test("refuses data after the value", arguments: ["{} {}", "1 2", "[]x", "{}\u{0}", "nullnull", "\"a\"\"b\"", "{},"])
    func refusesTrailingData(_ input: String) {
        #expect(parseFailure(input)?.isSyntax == true)
    }

    @Test("allows whitespace around the value")
    func allowsSurroundingWhitespace() throws {
        #expect(try JSONParser.parse(" \t\r\n{ \"a\" : [ 1 , 2 ] }\n ") == ["a": [1, 2]])
    }

    @Test("refuses invalid UTF-8 inside strings", arguments: [
        [0xC3, 0x28],             // truncated two-byte sequence
        [0xC0, 0xAF],             // overlong "/"
        [0xED, 0xA0, 0x80],       // a UTF-16 surrogate encoded as UTF-8
        [0xF4, 0x90, 0x80, 0x80], // above U+10FFFF
        [0xFF],
        [0x80],
        [0xE2, 0x82],             // truncated right before the closing quote
    ] as [[UInt8]])
    func refusesInvalidUTF8(_ payload: [UInt8]) {
        #expect(parseFailure([0x22] + payload + [0x22])?.isSyntax == true)
        #expect(parseFailure("{\"".bytes + payload + "\":1}".bytes)?.isSyntax == true)
    }

    @Test("refuses lone and mismatched surrogate escapes", arguments: [
        #""\ud800""#, #""\udc00""#, #""\ud800x""#, #""\ud800\u0041""#, #""\ud800\ud800""#, #""\udfff\ud800""#, #""\ud83d\""#,
    ])
    func refusesLoneSurrogates(_ input: String) {
        #expect(parseFailure(input)?.isSyntax == true)
    }

    @Test("decodes a surrogate pair into one astral scalar")
    func decodesSurrogatePairs() throws {
        #expect(try JSONParser.parse(#""\ud83d\ude80""#) == "🚀")
        #expect(try JSONParser.parse(#""\uD834\uDD1E""#) == "𝄞")
    }

    @Test("refuses numbers with fractions or exponents", arguments: ["0.5", "-1.5e10", "1E+2", "[0, 1.0]", #"{"length": 3e2}"#])
    func refusesFloats(_ input: String) {
        guard case .floatNotAllowed? = parseFailure(input) else {
            Issue.record("\(input) was not refused as a float")
            return
        }
    }

    @Test("refuses leading zeros", arguments: ["01", "-01", "00", "[007]", #"{"version": 02}"#])
    func refusesLeadingZeros(_ input: String) {
        #expect(parseFailure(input)?.isSyntax == true)
    }

    @Test("reads zero and negative zero as the integer 0")
    func acceptsZero() throws {
        #expect(try JSONParser.parse("0") == 0)
        #expect(try JSONParser.parse("-0") == 0)
        #expect(try JSONParser.parse("10") == 10)
    }

    @Test("refuses integers outside int64", arguments: ["9223372036854775808", "-9223372036854775809", "123456789012345678901234567890"])
    func refusesOutOfRangeIntegers(_ input: String) {
        #expect(parseFailure(input)?.isSyntax == true)
    }

    @Test("refuses raw control characters in strings", arguments: [0x00, 0x01, 0x09, 0x0A, 0x0D, 0x1F] as [UInt8])
    func refusesControlCharacters(_ byte: UInt8) {
        #expect(parseFailure([0x22, 0x61, byte, 0x62, 0x22])?.isSyntax == true)
    }

    @Test("accepts DEL, which JSON does not count as a control character")
    func acceptsDelete() throws {
        #expect(try JSONParser.parse([0x22, 0x7F, 0x22]) == "\u{7F}")
    }

    @Test("refuses malformed documents", arguments: [
        "", " ", "tru", "nul", "True", "[1,]", #"{"a":1,}"#, "{a:1}", "'a'", "+1", "-", "0x10", "NaN", "Infinity",
        #""\x""#, #""\u12G4""#, #""\u12""#, #""unterminated"#, "[1 2]", #"{"a" 1}"#, "[", "{", #"{"a":}"#, "[,1]",
    ])
    func refusesMalformed(_ input: String) {
        #expect(parseFailure(input)?.isSyntax == true)
    }

    @Test("accepts nesting up to the depth limit and refuses one level more")
    func enforcesDepthLimit() throws {
        let limit = JSONParser.defaultMaxDepth
        let deepest = String(repeating: "[", count: limit) + String(repeating: "]", count: limit)
        #expect(parseFailure(deepest) == nil)
        let tooDeep = "[" + deepest + "]"
        #expect(parseFailure(tooDeep) == .tooDeep)
        let objects = String(repeating: #"{"a":"#, count: limit) + "1" + String(repeating: "}", count: limit)
        #expect(parseFailure(objects) == .tooDeep)
        #expect(parseFailure("[[[1]]]".bytes, maxDepth: 3) == .tooDeep)
        #expect(parseFailure("[[1]]".bytes, maxDepth: 3) == nil)
    }

    @Test("survives pathological nesting without exhausting the stack")
    func refusesHugeNesting() {
        #expect(parseFailure(String(repeating: "[", count: 1_000_000)) == .tooDeep)
    }

    @Test("refuses input above the size limit before parsing it")
    func enforcesSizeLimit() {
        #expect(parseFailure("[1,2,3]".bytes, maxLength: 6) == .tooLarge(limit: 6))
        #expect(parseFailure("[1,2,3]".bytes, maxLength: 7) == nil)
    }

    @Test("decodes every simple escape")
    func decodesEscapes() throws {
        #expect(try JSONParser.parse(#""\"\\\/\b\f\n\r\t\u0000\u00e9""#) == .string("\"\\/\u{8}\u{C}\n\r\t\u{0}é"))
    }
}
