/// Decodes a `Transfer-Encoding: chunked` body (RFC 9112 §7.1) as its bytes arrive, strictly:
/// hex sizes, CRLF line ends only, and a body that may never pass `limit` bytes, whatever
/// the chunk sizes claim.
struct ChunkedDecoder {
    private enum State { case size, data(Int), dataEnd, trailer, done }

    private var state = State.size
    private var trailerBytes = 0
    let limit: Int

    /// A chunk-size line (with extensions) or a trailer line longer than this is refused.
    static let maxLineLength = 4096

    init(limit: Int) { self.limit = limit }

    var isDone: Bool { if case .done = state { return true } else { return false } }

    /// Decodes from the start of `input` into `body`; returns how many bytes of `input` were
    /// used. Bytes of an incomplete line are left for the next call (with more input).
    mutating func feed(_ input: UnsafeRawBufferPointer, into body: inout [UInt8]) throws(FramingError) -> Int {
        var i = 0
        while i < input.count {
            switch state {
            case .done:
                return i
            case .size:
                guard let end = try lineEnd(input, from: i) else { return i }
                let size = try chunkSize(UnsafeRawBufferPointer(rebasing: input[i..<end]))
                // Refused on the size line, before a byte of an oversized chunk is read.
                if size > limit - body.count { throw .chunkTooLarge(limit) }
                state = size == 0 ? .trailer : .data(size)
                i = end + 2
            case .data(let left):
                let n = min(left, input.count - i)
                if body.count + n > limit { throw .chunkTooLarge(limit) }
                body.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[i..<(i + n)]))
                i += n
                state = left == n ? .dataEnd : .data(left - n)
            case .dataEnd:
                guard input.count - i >= 2 else { return i }
                guard input[i] == cr, input[i + 1] == lf else { throw .malformed("chunk data must end with CRLF") }
                i += 2
                state = .size
            case .trailer:
                guard let end = try lineEnd(input, from: i) else { return i }
                trailerBytes += end - i + 2
                if trailerBytes > ChunkedDecoder.maxLineLength { throw .headTooLarge }
                if end == i {
                    state = .done
                } else if input[i] == space || input[i] == tab || !input[i..<end].contains(UInt8(ascii: ":")) {
                    throw .malformed("a malformed trailer line")
                }
                i = end + 2
            }
        }
        return i
    }

    private func lineEnd(_ input: UnsafeRawBufferPointer, from start: Int) throws(FramingError) -> Int? {
        var i = start
        while i < input.count {
            if input[i] == lf { throw .malformed("chunk lines must end with CRLF") }
            if input[i] == cr {
                guard i + 1 < input.count else { return nil }
                guard input[i + 1] == lf else { throw .malformed("a bare CR in chunk framing") }
                return i
            }
            if i - start >= ChunkedDecoder.maxLineLength { throw .malformed("a chunk-size line is too long") }
            i += 1
        }
        if i - start >= ChunkedDecoder.maxLineLength { throw .malformed("a chunk-size line is too long") }
        return nil
    }

    /// `1*HEXDIG [ ";" chunk-ext ]`; the size must fit what is left of the limit.
    private func chunkSize(_ line: UnsafeRawBufferPointer) throws(FramingError) -> Int {
        // Only significant digits count toward the 15 that keep `size` from overflowing:
        // leading zeros are part of a valid size (`0000000000000000005` is 5, RFC 9112
        // §7.1 puts no bound on them) and add nothing to it. The line itself stays
        // within `maxLineLength`.
        var size = 0, digits = 0, significant = 0
        for b in line {
            guard let value = hexValue(b) else { break }
            digits += 1
            if size == 0, value == 0 { continue }
            significant += 1
            if significant > 15 { throw .chunkTooLarge(limit) }
            size = size * 16 + Int(value)
        }
        guard digits > 0 else { throw .malformed("a chunk size must be hexadecimal") }
        let rest = line[digits...]
        if !rest.isEmpty {
            // Extensions are allowed (and ignored) only after ";" (BWS before it), with no control bytes.
            guard rest.drop(while: { $0 == space || $0 == tab }).first == UInt8(ascii: ";") else { throw .malformed("a chunk size must be hexadecimal") }
            guard rest.allSatisfy({ $0 == tab || ($0 >= 0x20 && $0 != 0x7F) }) else { throw .malformed("a chunk extension has a control byte") }
        }
        return size
    }
}
