import Foundation
internal import CLibFuzzer

/// Hands the process to libFuzzer with `testOneInput` as the target. Each harness's
/// main.swift ends with this call: SwiftPM links an executable's `main` to its top-level
/// code, so libFuzzer's driver is started from there rather than from its own main.
public func runLibFuzzer(_ testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> Never {
    var argc = CommandLine.argc
    var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
    exit(LLVMFuzzerRunDriver(&argc, &argv, testOneInput))
}

/// What every harness does with libFuzzer's bytes: copy them once, cut them into records,
/// and stop the process loudly when an invariant breaks.
public struct FuzzInput {
    public let bytes: [UInt8]

    public init(_ data: UnsafePointer<UInt8>?, _ size: Int) {
        bytes = size > 0 ? Array(UnsafeBufferPointer(start: data, count: size)) : []
    }

    /// The input cut at 0xFF. Valid UTF-8 never contains that byte, so a seed that is text
    /// (JSON, a URL, a version) stays readable, and the fuzzer can still put any other byte
    /// inside a record.
    public var records: [[UInt8]] {
        bytes.split(separator: 0xFF, omittingEmptySubsequences: false).map(Array.init)
    }

    /// Record `index` as text the way a server or a file reader would see it: invalid UTF-8
    /// replaced, never refused.
    public func text(_ index: Int) -> String {
        let all = records
        return index < all.count ? String(decoding: all[index], as: UTF8.self) : ""
    }
}

/// An invariant of the code under test. A broken one traps, which libFuzzer records as a
/// crash and saves the input for (fuzz/run.sh copies it to fuzz/crashes/).
public func invariant(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String,
                      file: StaticString = #fileID, line: UInt = #line) {
    if !condition() { fatalError("invariant broken: \(message())", file: file, line: line) }
}

/// With HOTPATCH_FUZZ_TRACE set, a harness says what became of an input (run it on one
/// file: `FuzzTUF fuzz/corpus/FuzzTUF/signed-walk`), to check that a new seed reaches the
/// code it was written for.
public func trace(_ message: @autoclosure () -> String) {
    if Tracing.enabled { FileHandle.standardError.write(Data((message() + "\n").utf8)) }
}

private enum Tracing {
    static let enabled = ProcessInfo.processInfo.environment["HOTPATCH_FUZZ_TRACE"] != nil
}

extension Array where Element == UInt8 {
    /// Printable in a crash message: short, and escaped.
    public var debugDescriptionForFuzzing: String {
        let text = String(decoding: prefix(200), as: UTF8.self)
        return String(reflecting: text) + (count > 200 ? "… (\(count) bytes)" : "")
    }
}
