/// OLPC canonical JSON as securesystemslib's `encode_canonical` writes it: object keys sorted
/// by code point, no whitespace, only `\` and `"` escaped, everything else raw UTF-8.
/// This is the byte string TUF signatures cover.
extension JSON {
    public var canonicalBytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        appendCanonical(to: &out)
        return out
    }

    public var canonicalString: String { String(decoding: canonicalBytes, as: UTF8.self) }

    private func appendCanonical(to out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .int(let i): out.append(contentsOf: String(i).utf8)
        case .string(let s): JSON.appendCanonicalString(s, to: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                item.appendCanonical(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            // Code-point order equals UTF-8 byte order; Swift's String `<` is neither.
            let sorted = members.map { (Array($0.key.utf8), $0.value) }
                .sorted { $0.0.lexicographicallyPrecedes($1.0) }
            for (index, (key, value)) in sorted.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                JSON.appendCanonicalBytes(key, to: &out)
                out.append(UInt8(ascii: ":"))
                value.appendCanonical(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    private static func appendCanonicalString(_ s: String, to out: inout [UInt8]) {
        appendCanonicalBytes(Array(s.utf8), to: &out)
    }

    private static func appendCanonicalBytes(_ bytes: [UInt8], to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in bytes {
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { out.append(UInt8(ascii: "\\")) }
            out.append(byte)
        }
        out.append(UInt8(ascii: "\""))
    }
}
