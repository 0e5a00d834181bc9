/// The names a delegated role's file goes by, decided in one place: a role name is whatever a
/// delegator signed (any non-empty string but the four top-level names), so it is never used
/// as a file name as it is.
enum RoleFileName {
    /// The name as the repository serves it, `{V}.{quoted}.json`: every byte but ASCII letters,
    /// digits and `_.-~` percent-encoded (Python's `urllib.parse.quote(name, "")`, as
    /// python-tuf requests it), so `a/b` is `a%2Fb`.
    static func quoted(_ role: String) -> String {
        encoded(role) { isLetter($0) || isDigit($0) || isUnreservedMark($0) }
    }

    /// The file the client's cache keeps a verified role in (python-tuf's `_persist_metadata`
    /// keeps `{quoted}.json`). The URL's encoding, with three more rules so that no role's
    /// file can be another file of the cache directory, on any file system a client runs on:
    ///
    /// 1. capital ASCII letters are percent-encoded too: on a case-insensitive file system
    ///    (macOS's default), `QA.json` is `qa.json` and `Targets.json` is `targets.json`;
    /// 2. a name spelt like a top-level file's stem (`root`, `timestamp`, `snapshot`,
    ///    `targets`, or digits then `.root`, the root chain's `N.root.json`) has its first
    ///    byte percent-encoded: `2.root` is `%32.root.json`. The parser refuses the four names
    ///    as delegated roles, but `2.root` is a legal one;
    /// 3. an encoding longer than `maxEncodedLength` is replaced by `%sha256.{hex}`, the
    ///    SHA-256 of the name's UTF-8: a file name (and the temporary name beside it that
    ///    the atomic write uses) has a system limit (255 bytes), a role name none.
    ///
    /// Then `.json` is appended, so the result contains no `/` and is never `.` or `..`.
    /// No two names share a file: percent-encoding is one-to-one (a `%` in a name is `%25`);
    /// rule 2 writes escapes (`%32`, `%72`…) that rule 1 never does, and rule 3 a `%s` that
    /// neither does. Every letter outside an escape is lowercase and every hex digit in one
    /// uppercase, so names that differ differ in more than case. Every hotpatch role name
    /// (`[a-z0-9-]{1,32}`) is spelt exactly as in its URL.
    static func cached(_ role: String) -> String {
        var stem = encoded(role) { isLowercase($0) || isDigit($0) || isUnreservedMark($0) }
        if isTopLevelStem(stem), let first = stem.utf8.first {
            stem = escape(first) + String(decoding: stem.utf8.dropFirst(), as: UTF8.self)
        }
        if stem.utf8.count > maxEncodedLength { stem = "%sha256." + Digest.sha256Hex(Array(role.utf8)) }
        return stem + ".json"
    }

    /// Longer encodings are hashed (rule 3 of `cached`): 150 bytes, `.json` and
    /// `DurableFile`'s temporary name around it stay under 255.
    static let maxEncodedLength = 150

    private static func isTopLevelStem(_ stem: String) -> Bool {
        if Role(rawValue: stem) != nil { return true }
        let bytes = Array(stem.utf8), suffix = Array(".root".utf8)
        guard bytes.count > suffix.count, bytes.suffix(suffix.count).elementsEqual(suffix) else { return false }
        return bytes.dropLast(suffix.count).allSatisfy(isDigit)
    }

    private static func encoded(_ role: String, keeping kept: (UInt8) -> Bool) -> String {
        var out = ""
        out.reserveCapacity(role.utf8.count)
        for byte in role.utf8 {
            if kept(byte) { out.unicodeScalars.append(Unicode.Scalar(byte)) } else { out += escape(byte) }
        }
        return out
    }

    private static func escape(_ byte: UInt8) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        return String(decoding: [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]], as: UTF8.self)
    }

    private static func isLowercase(_ byte: UInt8) -> Bool { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) }
    private static func isLetter(_ byte: UInt8) -> Bool { isLowercase(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) }
    private static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }
    private static func isUnreservedMark(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "~")
    }
}
