import FuzzSupport
import PatchCore

/// The strict JSON parser and canonical JSON, the bytes every TUF signature covers.
/// Invariants: any input either parses or throws a JSONError; a parsed value re-encodes
/// canonically to bytes that parse back to an equal value and re-encode to the same bytes.
/// The one documented exception (CanonicalJSONTests): canonical JSON writes control
/// characters raw, which the strict parser refuses, so such a value must be refused for
/// exactly that reason. The served form (`wireBytes`: canonical with control characters
/// escaped) always parses back to an equal value, and equals the canonical bytes when the
/// value holds no control character.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = FuzzInput(data, size)
    // A shallow depth limit exercises the depth check on small inputs too.
    _ = try? JSONParser.parse(input.bytes, maxDepth: 4)
    guard let value = try? JSONParser.parse(input.bytes) else { return 0 }

    let wire = value.wireBytes
    do {
        let fromWire = try JSONParser.parse(wire)
        invariant(fromWire == value, "served bytes parse to another value: \(wire.debugDescriptionForFuzzing)")
    } catch {
        invariant(false, "served bytes of \(input.bytes.debugDescriptionForFuzzing) do not parse: \(error)")
    }
    invariant(value.hasControlCharacter || wire == value.canonicalBytes, "served bytes differ from canonical bytes without a control character")

    let canonical = value.canonicalBytes
    do {
        let again = try JSONParser.parse(canonical)
        invariant(again == value, "canonical bytes parse to another value: \(canonical.debugDescriptionForFuzzing)")
        invariant(again.canonicalBytes == canonical, "canonical encoding is not idempotent: \(canonical.debugDescriptionForFuzzing)")
    } catch {
        invariant(value.hasControlCharacter, "canonical bytes of \(input.bytes.debugDescriptionForFuzzing) do not parse: \(error)")
        guard case .syntax(_, let reason) = error else {
            invariant(false, "canonical bytes refused for \(error), not for a control character")
            return 0
        }
        invariant(reason == "control character in string", "canonical bytes refused for \(reason), not for a control character")
    }
    return 0
}

extension JSON {
    /// True if a string or object key holds a character below U+0020.
    var hasControlCharacter: Bool {
        switch self {
        case .null, .bool, .int: return false
        case .string(let s): return s.utf8.contains { $0 < 0x20 }
        case .array(let items): return items.contains { $0.hasControlCharacter }
        case .object(let members): return members.contains { $0.key.utf8.contains { $0 < 0x20 } || $0.value.hasControlCharacter }
        }
    }
}

runLibFuzzer(fuzz)
