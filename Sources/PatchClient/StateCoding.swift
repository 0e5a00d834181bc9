import Foundation
import Locking
import PatchCore

/// state.json's bytes. Written by hand: Foundation's `JSONEncoder` cost about 0.18 M
/// instructions a save, and an install saves twice (issue 23). Read with `JSONDecoder` (the
/// numbers are floating point, which the project's strict `JSON` type refuses), but a file
/// decoded before in this process is answered by its exact bytes: a sync reads state.json
/// twice, and a file that differs in any byte is decoded afresh.
enum StateCoding {
    /// The JSON object `JSONEncoder` with `.sortedKeys` wrote (keys in the same order, nil
    /// members left out), so either reads the other's files.
    static func encode(_ state: ClientState) throws(PatchClientError) -> [UInt8] {
        var out = JSONWriter()
        out.open()
        if let good = state.good { out.key("good"); out.patch(good) }
        if let installed = state.installed { out.key("installed"); out.patch(installed) }
        if let installing = state.installing { out.key("installing"); out.patch(installing) }
        if let lastCheck = state.lastCheck { out.key("lastCheck"); out.number(lastCheck) }
        if let failure = state.lastError {
            out.key("lastError")
            out.open()
            out.key("at"); out.number(failure.at)
            out.key("code"); out.string(failure.code)
            out.key("message"); out.string(failure.message)
            out.close()
        }
        if let launch = state.launch {
            out.key("launch")
            out.open()
            out.key("foreground"); out.number(launch.foreground)
            if let since = launch.foregroundSince { out.key("foregroundSince"); out.number(since) }
            out.key("number"); out.int(launch.number)
            out.key("sha256"); out.string(launch.sha256)
            out.close()
        }
        if let retryAfter = state.retryAfter { out.key("retryAfter"); out.number(retryAfter) }
        if let scoped = state.retryAfterDeviceScoped { out.key("retryAfterDeviceScoped"); out.bytes.append(contentsOf: (scoped ? "true" : "false").utf8) }
        out.key("rolledBackThrough"); out.int(state.rolledBackThrough)
        out.close()
        // JSON has no infinity or NaN; JSONEncoder refused them too.
        guard out.finite else { throw .storage("cannot encode state: a time is not a finite number") }
        return out.bytes
    }

    static func decode(_ bytes: [UInt8]) -> ClientState? {
        let key = ExactBytes(bytes)
        if let known = memo.withLock({ $0.entries[key] }) { return known }
        guard let state = try? JSONDecoder().decode(ClientState.self, from: Data(bytes)) else { return nil }
        memo.withLock { $0.insert(state, key) }
        return state
    }

    /// One for the process: every client's state files go through it.
    private static let memo = Locked(StateMemo())
}

/// The last few state.json files decoded, by their exact bytes (an `ExactBytes` key compares
/// every byte); only successful decodes, emptied when full.
private struct StateMemo {
    static let capacity = 8
    static let maxBytes = 16 << 10
    var entries: [ExactBytes: ClientState] = [:]

    mutating func insert(_ state: ClientState, _ key: ExactBytes) {
        guard key.bytes.count <= Self.maxBytes else { return }
        if entries.count >= Self.capacity { entries.removeAll(keepingCapacity: true) }
        entries[key] = state
    }
}

/// The few JSON pieces state.json is made of, appended to one buffer.
private struct JSONWriter {
    var bytes: [UInt8] = []
    var finite = true
    private var first = true

    init() { bytes.reserveCapacity(512) }

    mutating func open() {
        bytes.append(UInt8(ascii: "{"))
        first = true
    }

    mutating func close() {
        bytes.append(UInt8(ascii: "}"))
        first = false
    }

    mutating func key(_ name: String) {
        if !first { bytes.append(UInt8(ascii: ",")) }
        first = false
        string(name)
        bytes.append(UInt8(ascii: ":"))
    }

    mutating func patch(_ patch: ClientState.Patch) {
        open()
        key("confirmed"); bytes.append(contentsOf: (patch.confirmed ? "true" : "false").utf8)
        key("launches"); int(patch.launches)
        key("number"); int(patch.number)
        if let receipt = patch.receipt { key("receipt"); string(receipt) }
        key("sha256"); string(patch.sha256)
        close()
    }

    mutating func int(_ value: Int) { bytes.append(contentsOf: String(value).utf8) }

    /// Swift's shortest round-tripping form ("1764694800.25", "1e-05"), which is JSON.
    mutating func number(_ value: Double) {
        if !value.isFinite { finite = false }
        bytes.append(contentsOf: value.description.utf8)
    }

    private static let hex = Array("0123456789abcdef".utf8)

    /// `"` and `\` escaped, control characters as `\u00XX`, the rest as UTF-8.
    mutating func string(_ value: String) {
        bytes.append(UInt8(ascii: "\""))
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                bytes.append(UInt8(ascii: "\\"))
                bytes.append(byte)
            case 0..<0x20:
                bytes.append(contentsOf: #"\u00"#.utf8)
                bytes.append(Self.hex[Int(byte >> 4)])
                bytes.append(Self.hex[Int(byte & 0x0F)])
            default:
                bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
