import Foundation
import FuzzSupport
@testable import HTTPTransport

/// patchd's request head and chunked-body parsers, on the raw bytes of a connection. What
/// must hold: a head that parses whole is never refused while it is still arriving (a
/// prefix is "incomplete", not an error, or the stream would have been cut early); what is
/// accepted is what a strict RFC 9112 reader accepts (no control bytes, token names, one
/// framing); an accepted head re-serialised parses to the same head; a chunked body decodes
/// the same whatever the read boundaries; a decoded path or query never holds a NUL.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = FuzzInput(data, size).bytes
    // 16 field lines, so the field cap is reached inside 2 KiB.
    let limits = RequestHead.Limits(requestLine: 512, head: 2048, fields: 16)
    let whole = parse(bytes, limits)
    guard case .success(let parsed?) = whole else { return 0 }
    let head = parsed

    for cut in stride(from: 0, to: head.size, by: max(1, head.size / 64)) {
        if case .failure(let error) = parse(Array(bytes[..<cut]), limits) {
            invariant(false, "a prefix of \(cut) bytes of an accepted head was refused: \(error)")
        }
    }
    invariant(head.target.allSatisfy { $0 > 0x20 && $0 < 0x7F }, "target with a forbidden byte")
    invariant(head.authority == nil ? head.pathStart == 0 && head.target.first == UInt8(ascii: "/")
              : head.target.prefix(4).map { $0 | 0x20 } == Array("http".utf8) && head.pathStart > 7, "target neither origin nor absolute form")
    invariant(head.fields.count <= limits.fields, "\(head.fields.count) field lines")
    // The path as received never percent-encodes an unreserved byte, / or \\ (written out
    // here, not by calling the parser's own check).
    let rawPath = head.target[head.pathStart...].prefix { $0 != UInt8(ascii: "?") }
    for i in rawPath.indices where rawPath[i] == UInt8(ascii: "%") && i + 2 < rawPath.endIndex {
        let pair = String(decoding: rawPath[(i + 1)...(i + 2)], as: UTF8.self)
        if pair.allSatisfy(\.isHexDigit), let byte = UInt8(pair, radix: 16) {
            let c = Character(Unicode.Scalar(byte))
            invariant(!(c.isASCII && (c.isLetter || c.isNumber)) && !"-._~/\\".contains(c), "path with %\(pair) accepted")
        }
    }
    // Host checks never trap, whatever the Host field and authority hold.
    _ = try? head.checkHost()
    invariant(!head.method.isEmpty && head.method.utf8.allSatisfy(isTokenByte), "method not a token")
    // The index of known fields finds what a scan of every line finds.
    for known in KnownField.allCases {
        invariant(head.fields.find(known) == head.fields.find(known.name), "index of \(known.name) differs from the scan")
    }
    for field in head.fields {
        invariant(!field.name.isEmpty && field.name.utf8.allSatisfy(isTokenByte) && field.name == field.name.lowercased(), "field name \(field.name.debugDescription)")
        invariant(!field.value.utf8.contains { $0 == 0 || $0 == 0x0A || $0 == 0x0D }, "field value with NUL, CR or LF")
        invariant(field.value.first != " " && field.value.last != " ", "field value not trimmed")
    }

    // Re-serialised, it parses to the same head.
    var text = "\(head.method) \(String(decoding: head.target, as: UTF8.self)) \(head.version == .http11 ? "HTTP/1.1" : "HTTP/1.0")\r\n"
    for field in head.fields { text += "\(field.name): \(field.value)\r\n" }
    text += "\r\n"
    if case .success(let again?) = parse(Array(text.utf8), RequestHead.Limits(requestLine: 1 << 20, head: 1 << 20)) {
        invariant(again.method == head.method && again.target == head.target && again.fields.map(\.name) == head.fields.map(\.name), "re-serialised head differs")
    } else if !head.fields.contains(where: { $0.value.unicodeScalars.contains("\u{FFFD}") }) {
        invariant(false, "a re-serialised accepted head is refused")
    }

    let request: HTTPRequest
    do throws(FramingError) {
        request = try head.request(peer: .loopback, declaredBody: .none)
    } catch {
        // The one refusal left for a parsed head: a query argument that is not UTF-8 once decoded.
        invariant(error.httpError.status == 400 && error.httpError.message.contains("is not valid UTF-8"), "head refused when decoded: \(error)")
        return 0
    }
    invariant(request.path.first == "/", "a decoded path \(request.path.debugDescription) not starting with /")
    invariant(!request.path.utf8.contains(0), "a decoded path holds a NUL")
    invariant(!request.arguments.contains { $0.name.utf8.contains(0) || $0.value.utf8.contains(0) }, "a decoded query holds a NUL")

    guard let framing = try? head.framing() else { return 0 }
    let lengths = head.fields.values("content-length"), encodings = head.fields.values("transfer-encoding")
    switch framing {
    case .none: invariant(encodings.isEmpty && lengths.count <= 1, "no body, yet framing fields")
    case .length(let n): invariant(lengths.count == 1 && encodings.isEmpty && n > 0, "length framing with \(lengths.count) lengths, \(encodings.count) codings")
    case .chunked:
        invariant(lengths.isEmpty && !encodings.isEmpty, "chunked with a Content-Length")
        let rest = Array(bytes[head.size...])
        let once = decode(rest, step: rest.count)
        let bytewise = decode(rest, step: 1)
        invariant(once == bytewise, "chunked decoding depends on read boundaries: \(once) vs \(bytewise)")
    }
    return 0
}

private func parse(_ bytes: [UInt8], _ limits: RequestHead.Limits) -> Result<RequestHead?, FramingError> {
    bytes.withUnsafeBytes { raw in Result { () throws(FramingError) in try RequestHead.parse(raw, limits: limits) } }
}

/// The body and whether it ended, or the error, feeding `step` bytes at a time.
private func decode(_ bytes: [UInt8], step: Int) -> String {
    var decoder = ChunkedDecoder(limit: 4096)
    var body: [UInt8] = [], pending: [UInt8] = []
    var offset = 0
    while offset < bytes.count, !decoder.isDone {
        pending += bytes[offset..<min(bytes.count, offset + max(1, step))]
        offset += max(1, step)
        do throws(FramingError) {
            let used = try pending.withUnsafeBytes { raw in Result { () throws(FramingError) in try decoder.feed(raw, into: &body) } }.get()
            pending.removeFirst(used)
        } catch {
            return "error \(error)"
        }
    }
    return "\(body) \(decoder.isDone)"
}

runLibFuzzer(fuzz)
