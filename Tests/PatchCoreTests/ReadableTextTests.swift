import PatchCore
import Testing

@Suite("Readable text (release notes, revoke messages, token names, actors)")
struct ReadableTextTests {
    @Test("accepts every script, emoji, combining marks, spaces and the joiners a script or an emoji needs", arguments: [
        "修复崩溃", "Ошибка входа", "🚑 fix", "e\u{301}te\u{301}", "ﬁx: ünïcode — ok", "تصحيح الخطأ", "תיקון באג", "ログインの不具合を修正",
        "नमस्ते", "fix\u{00A0}: espace insécable", "全角\u{3000}スペース", "❤\u{FE0F} thanks", "👍\u{1F3FD}",
        "family 👨\u{200D}👩\u{200D}👧", "👩🏽\u{200D}💻 on call", "क्\u{200D}ष", "क्\u{200C}ष", "می\u{200C}خواهم", "U+FFFD � as written",
        String(repeating: "é", count: 500),
    ])
    func accepts(_ text: String) throws {
        try ReadableText.check(text, field: "message", maxLength: 500)
    }

    @Test("refuses what changes how the text reads, naming the code point", arguments: [
        ("revoke \u{202E}3 hctap", "U+202E RIGHT-TO-LEFT OVERRIDE"), ("\u{202A}x", "U+202A LEFT-TO-RIGHT EMBEDDING"),
        ("\u{202B}x", "U+202B RIGHT-TO-LEFT EMBEDDING"), ("\u{202C}x", "U+202C POP DIRECTIONAL FORMATTING"),
        ("\u{202D}x", "U+202D LEFT-TO-RIGHT OVERRIDE"), ("a\u{2066}b", "U+2066 LEFT-TO-RIGHT ISOLATE"),
        ("a\u{2067}b", "U+2067 RIGHT-TO-LEFT ISOLATE"), ("a\u{2068}b", "U+2068 FIRST STRONG ISOLATE"), ("a\u{2069}b", "U+2069 POP DIRECTIONAL ISOLATE"),
        ("a\u{200E}", "U+200E LEFT-TO-RIGHT MARK"), ("a\u{200F}", "U+200F RIGHT-TO-LEFT MARK"), ("a\u{061C}", "U+061C ARABIC LETTER MARK"),
        ("ci\u{200B}bot", "U+200B ZERO WIDTH SPACE"), ("ci\u{200C}bot", "U+200C ZERO WIDTH NON-JOINER"), ("ci\u{200D}bot", "U+200D ZERO WIDTH JOINER"),
        ("\u{200D}👍", "U+200D ZERO WIDTH JOINER"), ("👍\u{200D}", "U+200D ZERO WIDTH JOINER"),
        ("a\u{2060}b", "U+2060 WORD JOINER"), ("a\u{2061}b", "U+2061 FUNCTION APPLICATION"), ("a\u{2064}b", "U+2064 INVISIBLE PLUS"),
        ("\u{FEFF}bom", "U+FEFF ZERO WIDTH NO-BREAK SPACE"), ("soft\u{00AD}hyphen", "U+00AD SOFT HYPHEN"), ("a\u{180E}b", "U+180E MONGOLIAN VOWEL SEPARATOR"),
        ("hidden\u{E0041}\u{E0042}", "U+E0041 TAG LATIN CAPITAL LETTER A"), ("\u{E0001}x", "U+E0001 LANGUAGE TAG"), ("a\u{FFF9}b", "U+FFF9 INTERLINEAR ANNOTATION ANCHOR"),
        ("a\u{3164}", "U+3164 HANGUL FILLER"), ("a\u{115F}", "U+115F HANGUL CHOSEONG FILLER"), ("a\u{034F}b", "U+034F COMBINING GRAPHEME JOINER"),
        ("two\nlines", "U+000A"), ("a\tb", "U+0009"), ("a\u{1B}[31mred", "U+001B"), ("a\u{7F}", "U+007F"), ("a\u{85}", "U+0085"),
        ("a\u{2028}b", "U+2028 LINE SEPARATOR"), ("a\u{2029}b", "U+2029 PARAGRAPH SEPARATOR"),
        ("a\u{E000}", "U+E000"), ("\u{F8FF}", "U+F8FF"), ("a\u{FFFE}", "U+FFFE"), ("a" + String(Unicode.Scalar(0xFDD0)!), "U+FDD0"), ("a\u{10FFFF}", "U+10FFFF"),
    ] as [(String, String)])
    func refuses(_ text: String, _ named: String) {
        #expect {
            try ReadableText.check(text, field: "message", maxLength: 500)
        } throws: { error in
            let message = (error as? ValidationError)?.message ?? ""
            return message.hasPrefix("the message cannot hold \(named)") && !message.unicodeScalars.contains { $0.properties.generalCategory == .format }
        }
    }

    @Test("the error says which character, counting from 1, and the length limit counts Unicode scalars")
    func errorsNameTheCharacter() {
        #expect(throws: ValidationError("the token name cannot hold U+202E RIGHT-TO-LEFT OVERRIDE (character 4): a format character (it changes how the text around it is shown)")) {
            try ReadableText.check("ci \u{202E}tob", field: "token name", maxLength: 200)
        }
        #expect(throws: ValidationError("the message is 501 characters; the limit is 500")) {
            try ReadableText.check(String(repeating: "é", count: 501), field: "message", maxLength: 500)
        }
    }

    @Test("bytes are decoded as UTF-8 or refused with the offending byte, never replaced by U+FFFD", arguments: [
        ([0xC3, 0x28], "byte 0xC3 at offset 0"), ([0x61, 0xFF], "byte 0xFF at offset 1"), ([0x61, 0xE2, 0x80], "byte 0xE2 at offset 1"),
        ([0xED, 0xA0, 0x80], "byte 0xED at offset 0"), ([0xC0, 0xAF], "byte 0xC0 at offset 0"), ([0x80], "byte 0x80 at offset 0"),
    ] as [([UInt8], String)])
    func refusesInvalidUTF8(_ bytes: [UInt8], _ at: String) {
        #expect(throws: ValidationError("the value of --message is not valid UTF-8 (\(at))")) {
            try ReadableText.decode(bytes, field: "value of --message")
        }
    }

    @Test("valid UTF-8 decodes to the text it encodes, U+FFFD included when it was sent")
    func decodesUTF8() throws {
        for text in ["", "fix", "修复崩溃", "🚑 fix", "\u{FFFD}"] {
            #expect(try ReadableText.decode(Array(text.utf8), field: "message") == text)
        }
    }

    @Test("a value echoed in an error shows what the rule refuses as ?, so the error reads as written")
    func echoedValues() {
        #expect("demo\u{202E}sj.x\n\u{200B}修复".debugSanitized == "demo?sj.x??修复")
        #expect(throws: ValidationError.self) { try AppName("demo\u{202E}") }
        do { _ = try AppName("x\u{202E}y") } catch { #expect(error.message.contains("\"x?y\"")) }
    }
}
