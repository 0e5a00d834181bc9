import Foundation

/// The entity tags an `If-None-Match` value lists: split at commas, each trimmed of
/// whitespace, empty pieces dropped (Foundation's `split(separator: ",")` and
/// `trimmingCharacters(in: .whitespaces)`, the rule since the first simple check).
///
/// An ASCII value (every real ETag) is read where the transport parsed it: in ASCII
/// `.whitespaces` is space and tab, and a comma is a Character of its own, so the pieces are
/// found on the bytes and a tag is compared with `memcmp`, with no String or array made per
/// request (a 304 made three: issue 23). Any other value goes through Foundation as before.
public struct EntityTags: Sendable {
    /// The value's bytes when it is ASCII (`foreign` nil), else empty.
    private let ascii: ArraySlice<UInt8>
    /// The tags of a value that is not ASCII, or of a list given as Strings.
    private let foreign: [String]?

    /// The tags of a request's `If-None-Match` (none without one).
    package init(_ request: HTTPRequest) {
        self.init(value: request.fields.find(.ifNoneMatch).first.map(request.fields.valueBytes))
    }

    package init(value: ArraySlice<UInt8>?) {
        guard let value, !value.isEmpty else {
            (ascii, foreign) = ([], [])
            return
        }
        if value.allSatisfy({ $0 < 0x80 }) {
            (ascii, foreign) = (value, nil)
        } else {
            (ascii, foreign) = ([], String(decoding: value, as: UTF8.self).split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
        }
    }

    /// Tags known as Strings (the JSPatch loader's running patch, from the catalog).
    public init(_ tags: [String]) {
        (ascii, foreign) = ([], tags)
    }

    public var isEmpty: Bool { foreign?.isEmpty ?? ascii.isEmpty }

    /// Whether `tag` is one of the tags, byte for byte.
    public func contains(_ tag: String) -> Bool {
        if let foreign { return foreign.contains(tag) }
        var tag = tag
        return tag.withUTF8 { wanted in
            var found = false
            forEachTag { piece in
                found = piece.count == wanted.count && (wanted.isEmpty || memcmp(piece.baseAddress!, wanted.baseAddress!, wanted.count) == 0)
                return !found
            }
            return found
        }
    }

    /// Every tag, in order (for tests and diagnostics; the check asks `contains`).
    package var list: [String] {
        if let foreign { return foreign }
        var tags: [String] = []
        forEachTag { tags.append(String(decoding: $0, as: UTF8.self)); return true }
        return tags
    }

    /// Calls `body` with each tag of an ASCII value, trimmed, until it returns false.
    private func forEachTag(_ body: (UnsafeBufferPointer<UInt8>) -> Bool) {
        ascii.withUnsafeBufferPointer { value in
            guard let base = value.baseAddress else { return }
            var start = 0
            while start < value.count {
                let end = memchr(base + start, Int32(UInt8(ascii: ",")), value.count - start).map { base.distance(to: $0.assumingMemoryBound(to: UInt8.self)) } ?? value.count
                if end > start {  // an empty piece is dropped, as split drops it
                    var first = start, last = end
                    while first < last, value[first] == space || value[first] == tab { first += 1 }
                    while last > first, value[last - 1] == space || value[last - 1] == tab { last -= 1 }
                    if !body(UnsafeBufferPointer(rebasing: value[first..<last])) { return }
                }
                start = end + 1
            }
        }
    }
}
