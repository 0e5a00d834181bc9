/// The header field lines of one request, in order, held as bytes: every name and every
/// value, as received, in one buffer, with where each line's name and value are in it. A value
/// becomes a String only when a rule or route reads it; parsing a head builds none. (One
/// String per name and value was most of the cost of parsing a head: a check path request
/// reads three of its fields, and its head may carry a dozen.)
///
/// Names are tokens, ASCII (RFC 9110 §5.1), so looking one up folds ASCII case: a name
/// asked for in any case finds the line. They are folded when compared, not lowercased
/// when stored: a lookup compares only names of its length, and most lines are not.
package struct HeaderFields: Sendable, RandomAccessCollection {
    private var bytes: [UInt8] = []
    private var lines: [Line] = []
    /// Per `KnownField`: how many lines it has (at most 255) and the first one's index.
    /// Indexed as lines are added, so finding one of them is a read, not a scan of every line
    /// (a check path request looked up about ten, each a scan).
    private var knownCount = SIMD16<UInt8>()
    private var knownFirst = SIMD16<UInt8>()
    /// Past 255 lines a known field's first line may not fit `knownFirst`: scanned instead.
    private var indexed = true

    /// Where one line's name and value are in `bytes`.
    private struct Line: Sendable {
        var start: Int32
        var nameLength: Int32
        var valueStart: Int32
        var end: Int32
    }

    package init() {}

    /// A head's field lines, copied in one piece (`section`, from the first field line to the
    /// empty line); `record` then says where each line's name and value are in it. One copy
    /// per head, not two appends per line (each append cost more than its bytes, issue 23).
    package init(section: UnsafeRawBufferPointer, lines: Int) {
        bytes = [UInt8](unsafeUninitializedCapacity: section.count) { buffer, count in
            if let base = section.baseAddress, section.count > 0 { buffer.baseAddress!.initialize(from: base.assumingMemoryBound(to: UInt8.self), count: section.count) }
            count = section.count
        }
        self.lines.reserveCapacity(lines)
    }

    /// Fields as in-process callers and tests give them.
    package init(_ pairs: some Sequence<(String, String)>) {
        for (name, value) in pairs {
            var name = name, value = value
            name.withUTF8 { n in value.withUTF8 { v in append(name: UnsafeRawBufferPointer(n), value: UnsafeRawBufferPointer(v)) } }
        }
    }

    /// A line of the section this was made from (`init(section:lines:)`), by offsets into it.
    package mutating func record(name: Range<Int>, value: Range<Int>) {
        lines.append(Line(start: Int32(name.lowerBound), nameLength: Int32(name.count), valueStart: Int32(value.lowerBound), end: Int32(value.upperBound)))
        index(lines.count - 1)
    }

    /// Appends a line, copied in bulk.
    package mutating func append(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        let start = bytes.count
        bytes.append(contentsOf: name)
        bytes.append(contentsOf: value)
        lines.append(Line(start: Int32(start), nameLength: Int32(name.count), valueStart: Int32(start + name.count), end: Int32(bytes.count)))
        index(lines.count - 1)
    }

    /// Counts line `i` under the known field it is, if any.
    private mutating func index(_ i: Int) {
        let line = lines[i]
        let known = bytes.withUnsafeBufferPointer { KnownField(UnsafeBufferPointer(rebasing: $0[Int(line.start)..<Int(line.start + line.nameLength)])) }
        guard let known else { return }
        let k = known.rawValue
        if knownCount[k] == 0 {
            guard i <= Int(UInt8.max) else {
                indexed = false
                return
            }
            knownFirst[k] = UInt8(i)
        }
        if knownCount[k] < UInt8.max { knownCount[k] += 1 } else { indexed = false }
    }

    package var startIndex: Int { 0 }
    package var endIndex: Int { lines.count }

    /// Line `i` as text, the name lowercased (for tests and diagnostics; rules look lines up
    /// by name).
    package subscript(i: Int) -> (name: String, value: String) {
        let line = lines[i]
        return (String(decoding: bytes[Int(line.start)..<Int(line.start + line.nameLength)].map(HTTPRequest.asciiLowercase), as: UTF8.self), value(i))
    }

    /// The value of line `i`, as text.
    package func value(_ i: Int) -> String { String(decoding: valueBytes(i), as: UTF8.self) }

    /// The value of line `i`, as received.
    package func valueBytes(_ i: Int) -> ArraySlice<UInt8> {
        let line = lines[i]
        return bytes[Int(line.valueStart)..<Int(line.end)]
    }

    /// How many lines field `name` has and the index of the first: what a field that may be
    /// sent once needs, in one scan.
    package func find(_ name: String) -> (count: Int, first: Int?) {
        var name = name
        return name.withUTF8 { wanted in
            bytes.withUnsafeBufferPointer { stored in
                // On the lines' buffer: iterating the array itself retained it per lookup.
                lines.withUnsafeBufferPointer { lines in
                    var count = 0
                    var first: Int?
                    for i in lines.indices where HeaderFields.matches(stored, lines[i], wanted) {
                        if count == 0 { first = i }
                        count += 1
                    }
                    return (count, first)
                }
            }
        }
    }

    /// `find(field.name)`, read from the index.
    package func find(_ field: KnownField) -> (count: Int, first: Int?) {
        guard indexed else { return find(field.name) }
        let count = Int(knownCount[field.rawValue])
        return (count, count == 0 ? nil : Int(knownFirst[field.rawValue]))
    }

    /// The first line of field `name`.
    package func first(_ name: String) -> String? { find(name).first.map(value) }

    /// The first line of a known field.
    package func first(_ field: KnownField) -> String? { find(field).first.map(value) }

    /// Every line of a known field, in order (no scan when it has none).
    package func values(_ field: KnownField) -> [String] { find(field).count == 0 ? [] : values(field.name) }

    /// Every line of field `name`, in order.
    package func values(_ name: String) -> [String] {
        var name = name
        return name.withUTF8 { wanted in
            bytes.withUnsafeBufferPointer { stored in
                lines.indices.compactMap { HeaderFields.matches(stored, lines[$0], wanted) ? value($0) : nil }
            }
        }
    }

    /// Whether a line's name is `wanted`, both in any case. The length, known without
    /// reading a byte, sets apart most of a head's other names.
    private static func matches(_ stored: UnsafeBufferPointer<UInt8>, _ line: Line, _ wanted: UnsafeBufferPointer<UInt8>) -> Bool {
        guard Int(line.nameLength) == wanted.count else { return false }
        let start = Int(line.start)
        for i in 0..<wanted.count where HTTPRequest.asciiLowercase(stored[start + i]) != HTTPRequest.asciiLowercase(wanted[i]) { return false }
        return true
    }
}

/// The fields read on every request (the transport's framing and Host rules, the simple
/// check's and timestamp.json's headers), indexed when a head is parsed (`HeaderFields`).
/// At most 16 (the index is a `SIMD16`).
package enum KnownField: Int, CaseIterable, Sendable {
    case host, contentLength, transferEncoding, expect, connection, forwardedFor
    case ifNoneMatch, deviceID, deviceSecret, osVersion, wantReceipt, pushTimestamp, appVersion, channel

    /// The name, lowercased.
    package var name: String { String(describing: staticName) }

    private var staticName: StaticString {
        switch self {
        case .host: return "host"
        case .contentLength: return "content-length"
        case .transferEncoding: return "transfer-encoding"
        case .expect: return "expect"
        case .connection: return "connection"
        case .forwardedFor: return "x-forwarded-for"
        case .ifNoneMatch: return "if-none-match"
        case .deviceID: return "x-device-id"
        case .deviceSecret: return "x-device-secret"
        case .osVersion: return "x-os-version"
        case .wantReceipt: return "x-want-receipt"
        case .pushTimestamp: return "x-push-timestamp"
        case .appVersion: return "x-app-version"
        case .channel: return "x-channel"
        }
    }

    /// The known field a name is, in any case; nil for any other name. By length first:
    /// most lengths have one candidate or none.
    package init?(_ name: UnsafeBufferPointer<UInt8>) {
        let candidates: (KnownField, KnownField?)
        switch name.count {
        case 4: candidates = (.host, nil)
        case 6: candidates = (.expect, nil)
        case 9: candidates = (.channel, nil)
        case 10: candidates = (.connection, nil)
        case 11: candidates = (.deviceID, nil)
        case 12: candidates = (.osVersion, nil)
        case 13: candidates = (.ifNoneMatch, .appVersion)
        case 14: candidates = (.contentLength, .wantReceipt)
        case 15: candidates = (.forwardedFor, .deviceSecret)
        case 16: candidates = (.pushTimestamp, nil)
        case 17: candidates = (.transferEncoding, nil)
        default: return nil
        }
        if candidates.0.named(name) {
            self = candidates.0
        } else if let other = candidates.1, other.named(name) {
            self = other
        } else {
            return nil
        }
    }

    /// Whether `name` (of this field's length) is this field's name in any case.
    private func named(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
        let wanted = staticName.utf8Start
        for i in 0..<name.count where HTTPRequest.asciiLowercase(name[i]) != wanted[i] { return false }
        return true
    }
}
