import Foundation

/// OLPC canonical JSON as securesystemslib's `encode_canonical` writes it: object keys sorted
/// by code point, no whitespace, only `\` and `"` escaped, everything else raw UTF-8.
/// This is the byte string TUF signatures cover.
extension JSON {
    public var canonicalBytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        appendCanonical(to: &out, escapingControls: false)
        return out
    }

    public var canonicalString: String { String(decoding: canonicalBytes, as: UTF8.self) }

    /// How metadata files are served: the canonical form, except that control characters
    /// in strings are escaped as JSON requires (`\n`, `\u0001`…). Canonical JSON writes
    /// them raw, which no JSON parser (ours, python's) accepts, and PEM public keys (ECDSA,
    /// RSA) hold newlines. A document without control characters, such as every document of
    /// an Ed25519-only repository, gives exactly its canonical bytes.
    public var wireBytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        appendCanonical(to: &out, escapingControls: true)
        return out
    }

    private func appendCanonical(to out: inout [UInt8], escapingControls: Bool) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .int(let i): out.append(contentsOf: String(i).utf8)
        case .string(let s): JSON.appendCanonicalBytes(Array(s.utf8), to: &out, escapingControls: escapingControls)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                item.appendCanonical(to: &out, escapingControls: escapingControls)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            // Code-point order equals UTF-8 byte order; Swift's String `<` is neither.
            let sorted = members.map { (Array($0.key.utf8), $0.value) }
                .sorted { $0.0.lexicographicallyPrecedes($1.0) }
            for (index, (key, value)) in sorted.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                JSON.appendCanonicalBytes(key, to: &out, escapingControls: escapingControls)
                out.append(UInt8(ascii: ":"))
                value.appendCanonical(to: &out, escapingControls: escapingControls)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    private static func appendCanonicalBytes(_ bytes: [UInt8], to out: inout [UInt8], escapingControls: Bool) {
        out.append(UInt8(ascii: "\""))
        for byte in bytes {
            if escapingControls, byte < 0x20 {
                switch byte {
                case 0x0A: out.append(contentsOf: #"\n"#.utf8)
                case 0x0D: out.append(contentsOf: #"\r"#.utf8)
                case 0x09: out.append(contentsOf: #"\t"#.utf8)
                default: out.append(contentsOf: #"\u00"#.utf8 + [hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0x0F)]])
                }
                continue
            }
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { out.append(UInt8(ascii: "\\")) }
            out.append(byte)
        }
        out.append(UInt8(ascii: "\""))
    }
}
