import Foundation

/// The one rule for free text a person reads back: release notes, revoke messages, token
/// names and actors. The console, `patchctl list`/`audit` and the audit chain show these
/// as written, so the text may hold nothing that changes how the rest of it reads:
///
/// - no control characters (Cc: one line, no terminal escapes), no line or paragraph
///   separators (Zl, Zp);
/// - no format characters (Cf: bidi embeddings, overrides and isolates, which make
///   "revoke 3" display as something else; zero-width spaces and joiners, which make two
///   token names look alike; soft hyphens, BOMs, tag characters), and no other
///   default-ignorable code point (the Hangul fillers render as nothing) except the
///   variation selectors, which only pick a glyph (the emoji form of ❤︎);
/// - no private-use characters (Co: what they show depends on the font) and no unassigned
///   code points or noncharacters (Cn: they may become format characters later);
///   surrogates (Cs) cannot occur in a Swift `String`, and invalid UTF-8 is refused where
///   the bytes arrive (`decode`), never turned into U+FFFD.
///
/// Two joiners are kept where a script needs them (RFC 5892's CONTEXTJ, and emoji):
/// U+200D ZERO WIDTH JOINER between two emoji (👨‍👩‍👧) or after a virama, and U+200C ZERO
/// WIDTH NON-JOINER after a virama or between two Arabic-script letters (Persian
/// "می‌خواهم"). Everything else (every script, emoji, combining marks, spaces) is accepted.
public enum ReadableText {
    /// Checks `value` against the rule and the length limit, counted in Unicode scalars as
    /// JSON Schema's maxLength counts. The error names the field and the first code point
    /// refused, so the person who typed it can find it.
    public static func check(_ value: String, field: String, maxLength: Int) throws(ValidationError) {
        let scalars = Array(value.unicodeScalars)
        guard scalars.count <= maxLength else {
            throw ValidationError("the \(field) is \(scalars.count) characters; the limit is \(maxLength)")
        }
        for (i, scalar) in scalars.enumerated() {
            if let why = refusal(scalars, at: i) {
                throw ValidationError("the \(field) cannot hold \(describe(scalar)) (character \(i + 1)): \(why)")
            }
        }
    }

    /// UTF-8 bytes as they arrived (a percent-decoded query value, a command-line argument,
    /// an environment variable) as a `String`, or an error naming the field and the first
    /// byte that is not UTF-8 — never a U+FFFD standing in for bytes nobody wrote.
    /// Overlong forms and encoded surrogates (`ED A0 80`) are invalid UTF-8 too.
    public static func decode(_ all: [UInt8], field: String) throws(ValidationError) -> String {
        // As cheap as `String(decoding:)` when valid: it runs on every query argument.
        if let text = String(validating: all, as: UTF8.self) { return text }
        // The offset of the first invalid sequence: the widths of the scalars before it.
        var iterator = all.makeIterator()
        var decoder = UTF8()
        var offset = 0
        while case .scalarValue(let scalar) = decoder.decode(&iterator) { offset += UTF8.width(scalar) }
        let byte = offset < all.count ? "byte 0x" + String(all[offset], radix: 16, uppercase: true) + " at " : ""
        throw ValidationError("the \(field) is not valid UTF-8 (\(byte)offset \(offset))")
    }

    /// `U+202E RIGHT-TO-LEFT OVERRIDE`: the code point and its Unicode name, as the error
    /// shows it (the character itself would do what it is refused for).
    public static func describe(_ scalar: Unicode.Scalar) -> String {
        let hex = String(scalar.value, radix: 16, uppercase: true)
        let code = "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
        let name = scalar.properties.name ?? scalar.properties.nameAlias
        return name.map { "\(code) \($0)" } ?? code
    }

    /// Why `scalars[i]` is refused, or nil when it is accepted.
    static func refusal(_ scalars: [Unicode.Scalar], at i: Int) -> String? {
        let scalar = scalars[i]
        let properties = scalar.properties
        switch properties.generalCategory {
        case .control: return "a control character (the text must be one line)"
        case .lineSeparator, .paragraphSeparator: return "a line break (the text must be one line)"
        case .privateUse: return "a private-use character (what it shows depends on the font)"
        case .unassigned: return "not an assigned character"
        case .surrogate: return "a surrogate"
        case .format:
            return joinerAllowed(scalars, at: i) ? nil : "a format character (it changes how the text around it is shown)"
        default:
            guard properties.isDefaultIgnorableCodePoint, !properties.isVariationSelector else { return nil }
            return "an invisible character"
        }
    }

    /// RFC 5892 Appendix A.1/A.2 and emoji ZWJ sequences: the joiners a script or an emoji needs.
    private static func joinerAllowed(_ scalars: [Unicode.Scalar], at i: Int) -> Bool {
        let zwnj: Unicode.Scalar = "\u{200C}", zwj: Unicode.Scalar = "\u{200D}"
        guard scalars[i] == zwnj || scalars[i] == zwj, i > 0 else { return false }
        let before = scalars[i - 1]
        if before.properties.canonicalCombiningClass == .virama { return true }
        guard i + 1 < scalars.count else { return false }
        let after = scalars[i + 1]
        if scalars[i] == zwj {
            // The emoji before may carry a presentation selector or a skin tone.
            let base = scalars[..<i].last { !$0.properties.isVariationSelector && !$0.properties.isEmojiModifier }
            return base.map(isPictographic) == true && isPictographic(after)
        }
        return isArabicLetter(before) && isArabicLetter(after)
    }

    /// An emoji that is a picture (not a digit, `#` or `*`, which are emoji only as keycaps).
    private static func isPictographic(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.isEmoji && !scalar.isASCII
    }

    /// A letter of the Arabic script's blocks (Arabic, Supplement, Extended-A/B, the
    /// presentation forms): where U+200C keeps two letters from joining.
    private static func isArabicLetter(_ scalar: Unicode.Scalar) -> Bool {
        guard scalar.properties.isAlphabetic else { return false }
        switch scalar.value {
        case 0x0600...0x06FF, 0x0750...0x077F, 0x0870...0x08FF, 0xFB50...0xFDFF, 0xFE70...0xFEFF: return true
        default: return false
        }
    }
}
