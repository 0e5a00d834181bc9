// patchcheck: the worker of the script check (docs/PROTOCOL.md, "Script check"). patchctl and
// patchd start one per check (PatchCheck's `ScriptChecker`), write the script to its stdin and
// read one JSON object from its stdout: the syntax error JavaScriptCore reports, or what the
// script's top level did when evaluated against the recording JSPatch runtime (`Recorder`).
//
// The script is the publisher's, so it runs here, in a process of its own, under limits set
// before a byte of it is read: CPU seconds (SIGXCPU, then SIGKILL), address space beyond what
// the engine reserved at start, no files written (RLIMIT_FSIZE 0), no core dumps; the parent
// adds a wall-clock deadline. The context has no I/O at all: JavaScriptCore's C API gives a
// global object with the language's built-ins only, and the recorder adds none.
//
// No Foundation: the worker starts for every check, and the less it loads the sooner it runs.
#if canImport(Glibc)
import Glibc
#endif
import CJavaScriptCore

struct Limits {
    var cpuSeconds = 2
    var memoryMiB = 256
    var maxBytes = 4 << 20
}

func fail(_ message: String, code: Int32 = 2) -> Never {
    let line = "patchcheck: \(message)\n"
    _ = line.withCString { write(2, $0, strlen($0)) }
    _exit(code)
}

func parseLimits(_ arguments: [String]) -> Limits {
    var limits = Limits()
    var index = 1
    while index < arguments.count {
        let name = arguments[index]
        guard index + 1 < arguments.count, let value = Int(arguments[index + 1]), value > 0 else {
            fail("usage: patchcheck [--cpu-seconds N] [--memory-mib N] [--max-bytes N] < main.js", code: 64)
        }
        switch name {
        case "--cpu-seconds": limits.cpuSeconds = value
        case "--memory-mib": limits.memoryMiB = value
        case "--max-bytes": limits.maxBytes = value
        default: fail("unknown option \(name)", code: 64)
        }
        index += 2
    }
    return limits
}

/// All of stdin, refused past `limit` bytes.
func readInput(limit: Int) -> [UInt8] {
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 64 << 10)
    while true {
        let count = chunk.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
        if count < 0 {
            if errno == EINTR { continue }
            fail("cannot read the script: errno \(errno)")
        }
        if count == 0 { return bytes }
        bytes += chunk[0..<count]
        if bytes.count > limit { fail("the script is over \(limit) bytes") }
    }
}

/// The process's address space now, from /proc/self/status (`VmSize`), in bytes.
func addressSpace() -> Int? {
    let fd = open("/proc/self/status", O_RDONLY)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var buffer = [UInt8](repeating: 0, count: 8192)
    let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
    guard count > 0 else { return nil }
    let text = String(decoding: buffer[0..<count], as: UTF8.self)
    for line in text.split(separator: "\n") where line.hasPrefix("VmSize:") {
        let digits = line.dropFirst("VmSize:".count).filter(\.isNumber)
        return Int(digits).map { $0 * 1024 }
    }
    return nil
}

func setLimit(_ resource: Int32, _ value: Int) {
    var limit = rlimit(rlim_cur: rlim_t(value), rlim_max: rlim_t(value))
    if setrlimit(__rlimit_resource_t(UInt32(resource)), &limit) != 0 { fail("cannot set resource limit \(resource): errno \(errno)") }
}

/// The limits the script runs under, set once the engine is up: the address space JavaScriptCore
/// reserved at start (tens of GiB of it never touched) plus `memoryMiB`, so the script's own
/// allocations are what the limit bounds. RLIMIT_CPU's soft limit sends SIGXCPU, the hard one a
/// second later SIGKILL, for a script that catches nothing anyway.
func applyLimits(_ limits: Limits) {
    guard let reserved = addressSpace() else { fail("cannot read /proc/self/status to bound the script's memory") }
    setLimit(Int32(RLIMIT_AS.rawValue), reserved + limits.memoryMiB << 20)
    var cpu = rlimit(rlim_cur: rlim_t(limits.cpuSeconds), rlim_max: rlim_t(limits.cpuSeconds + 1))
    if setrlimit(__rlimit_resource_t(RLIMIT_CPU.rawValue), &cpu) != 0 { fail("cannot limit CPU time: errno \(errno)") }
    setLimit(Int32(RLIMIT_FSIZE.rawValue), 0)
    setLimit(Int32(RLIMIT_CORE.rawValue), 0)
}

func microseconds() -> Int {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return now.tv_sec * 1_000_000 + now.tv_nsec / 1000
}

/// JSON string escaping, for the few strings the worker writes itself.
func quoted(_ text: String) -> String {
    // Most text needs no escape: one pass over its bytes, then it goes in as it is (a name
    // can be megabytes long).
    if !text.utf8.contains(where: { $0 < 0x20 || $0 == 0x22 || $0 == 0x5c }) { return "\"" + text + "\"" }
    var out = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        case _ where scalar.value < 0x20:
            let hex = String(scalar.value, radix: 16)
            out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        default: out.unicodeScalars.append(scalar)
        }
    }
    return out + "\""
}

/// At most `limit` characters of a text the worker reports (a name or message can be as long
/// as the script: a 300 KB identifier is valid JavaScript).
func clipped(_ text: String, _ limit: Int = 300) -> String {
    // utf8.count is O(1) for native strings; `count` would walk all of a long one.
    text.utf8.count > limit ? String(text.prefix(limit)) + "\u{2026}" : text
}

func located(_ error: ThrownError) -> String {
    var fields = ["\"message\":" + quoted(clipped(error.message))]
    if let line = error.line { fields.append("\"line\":\(line)") }
    if let column = error.column { fields.append("\"column\":\(column)") }
    return "{" + fields.joined(separator: ",") + "}"
}

/// The column of a syntax error, which JavaScriptCore's parser does not report (only the
/// line): the shortest prefix of the error's line that fails with the same message is the one
/// that ends with the offending token, since the parser stops at the first error and a prefix
/// cut before that token fails differently (an unexpected end). Bisected, so a long line costs
/// about twenty parses. When the message quotes the token ('b') the column is its first
/// character, else the character where the parser gave up. Nil when the prefixes do not behave
/// that way (an error that depends on what follows).
func syntaxColumn(_ engine: Engine, _ units: [UInt16], _ error: ThrownError, url: JSText) -> Int? {
    guard let line = error.line, line >= 1 else { return nil }
    var start = 0, current = 1, index = 0
    while current < line, index < units.count {
        if units[index] == 10 { current += 1; start = index + 1 }
        index += 1
    }
    guard current == line else { return nil }
    var end = start
    while end < units.count, units[end] != 10, units[end] != 13 { end += 1 }
    func fails(_ cut: Int) -> Bool {
        guard let other = engine.syntaxError(JSText(utf16: units[0..<cut]), url: url) else { return false }
        return other.message == error.message && other.line == line
    }
    guard fails(end) else { return nil }
    var low = start, high = end
    while low < high {
        let middle = (low + high) / 2
        if fails(middle) { high = middle } else { low = middle + 1 }
    }
    if let token = quotedToken(error.message) {
        let tokenUnits = Array(token.utf16)
        let from = high - tokenUnits.count
        if from >= start, Array(units[from..<high]) == tokenUnits { return from - start + 1 }
    }
    return max(1, high - start)
}

/// The token a message like "Unexpected token ';'" or "Unexpected identifier 'b'. …" quotes.
func quotedToken(_ message: String) -> String? {
    guard let open = message.firstIndex(of: "'") else { return nil }
    let rest = message[message.index(after: open)...]
    guard let close = rest.firstIndex(of: "'"), close > rest.startIndex else { return nil }
    return String(rest[..<close])
}

/// The name a JavaScriptCore ReferenceError says it could not find. The engine took it from an
/// identifier (any letters in JavaScript: `修复崩溃`), so only its bytes are looked at: a
/// space or control byte means the message is not what it seems. One pass: a name can be
/// megabytes long.
func missingName(_ error: ThrownError) -> String? {
    let prefix = "ReferenceError: Can't find variable: "
    guard error.message.hasPrefix(prefix) else { return nil }
    let name = error.message.utf8.dropFirst(prefix.utf8.count)
    guard !name.isEmpty, !name.contains(where: { $0 <= 0x20 || $0 == 0x7f }) else { return nil }
    return String(name)
}

/// A context with the recording runtime in it, names the script used without defining them
/// standing in as globals: its report function.
func prepare(_ engine: Engine, unknown: [String]) -> JSObjectRef {
    let names = "[" + unknown.map(quoted).joined(separator: ",") + "]"
    guard case .success = engine.evaluate(JSText("this.__hotpatchUnknownGlobals = \(names);"), url: JSText(Recorder.url)),
          case .success(let reporter?) = engine.evaluate(JSText(Recorder.source), url: JSText(Recorder.url)),
          let report = JSValueToObject(engine.context, reporter, nil), JSObjectIsFunction(engine.context, report) else {
        fail("the recording runtime did not evaluate to its report function")
    }
    JSValueProtect(engine.context, report)
    return report
}

/// At most this many names the script uses without defining are stood in for, one more
/// evaluation each; past it the ReferenceError is what the top level throws.
let maxUnknownGlobals = 32
/// And at most this many bytes of such names in all (each is defined again in every context):
/// as much as a script may hold, since one identifier may be all of it.
let maxUnknownBytes = 16 << 20

let limits = parseLimits(CommandLine.arguments)
// What iOS gives an app's JSContext: no JIT (W^X). Read by the engine when it starts.
setenv("JSC_useJIT", "false", 1)
let group = EngineGroup()
var engine = Engine(in: group)
var report = prepare(engine, unknown: [])
applyLimits(limits)
// The engine is up and the limits are set before the script arrives: a worker can be started
// ahead of its check and wait here (`ScriptChecker`'s spare), which costs it no CPU time.
let input = readInput(limit: limits.maxBytes)
// Its caller went away before giving it a script (a spare that was never used): nothing to do.
if input.isEmpty { _exit(0) }

let units = Array(String(decoding: input, as: UTF8.self).utf16)
let source = JSText(utf16: units[...])
let url = JSText("main.js")
var output = "{\"format\":\"hotpatch-check-worker/1\""
let parseStart = microseconds()
if var syntax = engine.syntaxError(source, url: url) {
    let parsed = microseconds() - parseStart
    syntax.column = syntax.column ?? syntaxColumn(engine, units, syntax, url: url)
    output += ",\"syntaxError\":" + located(syntax) + ",\"timing\":{\"syntaxMicros\":\(parsed)}}"
} else {
    let parsed = microseconds() - parseStart
    let evaluationStart = microseconds()
    // A name the script uses that neither JavaScript nor the recording runtime defines (an
    // extension's function on the device, or a slip): noted where it was first used, then the
    // script is run again from the start in a fresh context with a stand-in for it, so what
    // follows is recorded too. The rules decide what such a name means.
    var unknown: [(name: String, error: ThrownError)] = []
    var unknownBytes = 0
    var thrown: ThrownError?
    while true {
        if case .failure(let error) = engine.evaluate(source, url: url) {
            if let name = missingName(error), unknown.count < maxUnknownGlobals, unknownBytes + name.utf8.count <= maxUnknownBytes,
               !unknown.contains(where: { $0.name == name }) {
                unknown.append((name, error))
                unknownBytes += name.utf8.count
                engine = Engine(in: group)
                report = prepare(engine, unknown: unknown.map(\.name))
                continue
            }
            thrown = error
        }
        break
    }
    let evaluated = microseconds() - evaluationStart
    if let thrown { output += ",\"exception\":" + located(thrown) }
    if !unknown.isEmpty {
        output += ",\"unknownGlobals\":[" + unknown.map { entry in
            var object = located(entry.error)
            object.insert(contentsOf: "\"name\":" + quoted(clipped(entry.name)) + ",", at: object.index(after: object.startIndex))
            return object
        }.joined(separator: ",") + "]"
    }
    switch engine.call(report) {
    case .success(let recording): output += ",\"recording\":" + recording
    case .failure(let thrown): output += ",\"reportError\":" + located(thrown)
    }
    output += ",\"timing\":{\"syntaxMicros\":\(parsed),\"evaluationMicros\":\(evaluated)}}"
}
output += "\n"
var bytes = Array(output.utf8)
var written = 0
while written < bytes.count {
    let count = bytes[written...].withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
    if count < 0, errno == EINTR { continue }
    if count <= 0 { _exit(2) }
    written += count
}
// _exit: the engine's atexit teardown (tens of milliseconds) is of no use to a process that is done.
_exit(0)
