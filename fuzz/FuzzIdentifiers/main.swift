import Foundation
import FuzzSupport
import PatchCore

/// App names and app versions: path components on disk and in URLs, so an accepted value
/// must be safe to put in a path, and `<` must be a total order (exports and listings sort
/// versions with it). The input is up to three 0xFF-separated strings, each tried as both.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = FuzzInput(data, size)
    let texts = (0..<3).map { input.text($0) }

    let names = texts.compactMap { try? AppName($0) }
    for (text, name) in zip(texts, texts.map { try? AppName($0) }) {
        guard let name else { continue }
        checkPathSafe(name.rawValue, accepted: text, what: "app name")
        invariant(!name.rawValue.hasPrefix("."), "app name \(String(reflecting: text)) starts with a dot")
        invariant((try? AppName(name.rawValue)) == name, "app name \(String(reflecting: text)) does not re-parse")
    }
    checkTotalOrder(names, what: "app name")

    let versions = texts.compactMap { try? AppVersion($0) }
    for (text, version) in zip(texts, texts.map { try? AppVersion($0) }) {
        guard let version else { continue }
        checkPathSafe(version.rawValue, accepted: text, what: "app version")
        invariant((1...4).contains(version.numbers.count), "app version \(String(reflecting: text)) has \(version.numbers.count) numbers")
        invariant((try? AppVersion(version.rawValue)) == version, "app version \(String(reflecting: text)) does not re-parse")
        // Semantic precedence: appending ".0" names the same release, so neither sorts first
        // by number; only the text tie-break may order them.
        if version.numbers.count < 4, let padded = try? AppVersion(paddedWithZero(version.rawValue)) {
            invariant(version.numbers + [0] == padded.numbers, "padding \(String(reflecting: text)) changed its numbers")
        }
    }
    checkTotalOrder(versions, what: "app version")
    return 0
}

/// What an accepted name or version promises the code that builds paths from it: it is
/// exactly one path component, neither `.` nor `..`, so it stays inside the directory or URL
/// path it is appended to. (`..` inside a name, as in `a..b`, is allowed by PROTOCOL.md §8:
/// it is an ordinary file name and URL segment.)
func checkPathSafe(_ raw: String, accepted text: String, what: String) {
    invariant(raw == text && Array(raw.utf8) == Array(text.utf8), "\(what) \(String(reflecting: text)) changed to \(String(reflecting: raw))")
    invariant(!raw.isEmpty && raw.utf8.count <= 64, "\(what) \(String(reflecting: text)) has \(raw.utf8.count) bytes")
    invariant(!raw.utf8.contains(UInt8(ascii: "/")) && !raw.utf8.contains(UInt8(ascii: "\\")), "\(what) \(String(reflecting: text)) holds a slash")
    invariant(raw != "." && raw != "..", "\(what) is the dot segment \(String(reflecting: raw))")
    let base = URL(fileURLWithPath: "/registry/keys", isDirectory: true)
    let joined = base.appendingPathComponent(raw).standardizedFileURL
    invariant(joined.deletingLastPathComponent() == base && joined.lastPathComponent == raw,
              "\(what) \(String(reflecting: text)) does not stay one component inside a directory: \(joined.path)")
    invariant(raw.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }, "\(what) \(String(reflecting: text)) holds a byte outside printable ASCII")
    invariant(!raw.utf8.contains(UInt8(ascii: "%")), "\(what) \(String(reflecting: text)) holds a percent sign")
}

/// Irreflexive, asymmetric, trichotomous (exactly one of a < b, a == b, b < a) and transitive
/// over every pair and triple of the accepted values.
func checkTotalOrder<T: Comparable>(_ values: [T], what: String) {
    for a in values {
        invariant(!(a < a), "\(what) \(a) sorts before itself")
        for b in values {
            let outcomes = [a < b, a == b, b < a].filter { $0 }.count
            invariant(outcomes == 1, "\(what)s \(a) and \(b): \(outcomes) of <, ==, > hold")
            for c in values where a < b && b < c {
                invariant(a < c, "\(what)s \(a) < \(b) < \(c) but not \(a) < \(c)")
            }
        }
    }
}

func paddedWithZero(_ raw: String) -> String {
    guard let dash = raw.firstIndex(of: "-") else { return raw + ".0" }
    return raw[..<dash] + ".0" + raw[dash...]
}

runLibFuzzer(fuzz)
