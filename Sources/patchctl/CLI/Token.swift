import Foundation
import HotpatchCLI
import PatchCore

/// Where the bearer token for `--server` comes from. A command line is readable by every
/// user of the machine (`ps`, `/proc/PID/cmdline`), so the token is taken from a file
/// (`--token-file`) or from `HOTPATCH_TOKEN` (a process's environment is readable only by its
/// owner); `--token` still works, with a warning.
enum Token {
    /// A token is one line of printable ASCII ("hp_" and 64 hex digits today); anything far
    /// longer is not a token file.
    static let maxFileSize = 4096

    /// The token and where it came from (`--token-file FILE`, `$HOTPATCH_TOKEN`), for a 401's message.
    static func resolve(_ arguments: Arguments, environment: [String: String]) throws(CLIError) -> (token: String, source: String)? {
        let inline = arguments.value("--token")
        let file = arguments.value("--token-file")
        if inline != nil, file != nil { throw .usage("give --token-file or --token, not both") }
        if let file { return (try read(file), "--token-file \(file.pathSanitized)") }
        if let inline {
            Output.error("warning: --token is visible to other users of this machine (ps, /proc/PID/cmdline); use --token-file FILE or $HOTPATCH_TOKEN")
            return (try check(inline, from: "--token"), "--token")
        }
        return try environment["HOTPATCH_TOKEN"].map { token throws(CLIError) in (try check(token, from: "$HOTPATCH_TOKEN"), "$HOTPATCH_TOKEN") }
    }

    /// The file's one line, trailing newline and spaces dropped. Not refused when group or
    /// others can read it, since container runtimes mount secrets 0644 or 0444 by default
    /// (the container is the boundary there); warned about, as that is a leak on a shared host.
    static func read(_ path: String) throws(CLIError) -> String {
        guard !path.isEmpty else { throw .usage("--token-file needs a file name") }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .failed("cannot read the token file \(path.pathSanitized): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var info = stat()
        if fstat(fd, &info) == 0 {
            if info.st_mode & S_IFMT == S_IFDIR { throw .failed("the token file \(path.pathSanitized) is a directory") }
            if info.st_mode & S_IFMT == S_IFREG, info.st_mode & 0o077 != 0 {
                Output.error("warning: the token file \(path.pathSanitized) is readable by group or others (mode \(String(info.st_mode & 0o777, radix: 8))); run chmod 600 on it")
            }
        }
        // Read to the end (a pipe such as <(pass show …) comes in pieces), at most one byte past the limit.
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1024)
        while bytes.count <= maxFileSize {
            let n = buffer.withUnsafeMutableBytes { Foundation.read(fd, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            guard n >= 0 else { throw .failed("cannot read the token file \(path.pathSanitized): \(String(cString: strerror(errno)))") }
            if n == 0 { break }
            bytes += buffer[0..<n]
        }
        guard bytes.count <= maxFileSize else { throw .failed("the token file \(path.pathSanitized) is over \(maxFileSize) bytes: not a token") }
        return try check(String(decoding: bytes, as: UTF8.self), from: "the token file \(path.pathSanitized)")
    }

    /// One line of visible ASCII: what an Authorization header can carry unchanged.
    private static func check(_ raw: String, from source: String) throws(CLIError) -> String {
        let token = String(raw.reversed().drop { $0 == "\n" || $0 == "\r" || $0 == " " || $0 == "\t" }.reversed())
        guard !token.isEmpty else { throw .failed("\(source) is empty: it should hold the token `patchctl tokens create` printed") }
        guard token.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }) else {
            throw .failed("\(source) does not hold a token: a token is one line of printable ASCII with no spaces")
        }
        return token
    }
}
