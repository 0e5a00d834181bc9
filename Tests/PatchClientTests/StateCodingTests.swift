import Foundation
import PatchCore
import Testing
@testable import PatchClient

/// state.json as `StateCoding` writes and reads it (issue 23): written by hand, read by
/// `JSONDecoder` with a memo by exact bytes. Files written before it (by `JSONEncoder`) read
/// the same, and every file it writes reads back as the state it was given.
@Suite("state.json coding")
struct StateCodingTests {
    static let states: [ClientState] = {
        let patch = ClientState.Patch(number: 3, sha256: String(repeating: "ab", count: 32), confirmed: true, launches: 2, receipt: "r.1-x_Y")
        var full = ClientState()
        full.lastCheck = 1_764_694_800.123_456_7
        full.retryAfter = 1e-05
        full.retryAfterDeviceScoped = false
        full.installed = patch
        full.good = ClientState.Patch(number: 2, sha256: "00", confirmed: false, launches: 0, receipt: nil)
        full.installing = patch
        full.rolledBackThrough = 7
        full.launch = ClientState.Launch(number: 3, sha256: "cd", foreground: 0, foregroundSince: 1.5e20)
        full.lastError = ClientState.Failure(at: -1, code: "network", message: "quote \" backslash \\ slash / newline \n tab \t nul \u{0} bell \u{7} é 日本 🙂")
        var some = ClientState()
        some.retryAfterDeviceScoped = true
        some.launch = ClientState.Launch(number: 1, sha256: "", foreground: 12.25, foregroundSince: nil)
        return [ClientState(), full, some]
    }()

    @Test("every state reads back as written, by JSONDecoder as by the memo, and the bytes are what JSONEncoder would give for the same state up to number form")
    func roundTrip() throws {
        for state in Self.states {
            let bytes = try StateCoding.encode(state)
            #expect(try JSONDecoder().decode(ClientState.self, from: Data(bytes)) == state)
            #expect(StateCoding.decode(bytes) == state)
            #expect(StateCoding.decode(bytes) == state, "the remembered answer")
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            let foundation = try encoder.encode(state)
            #expect(StateCoding.decode(Array(foundation)) == state, "a file JSONEncoder wrote")
            // Same members in the same order: the two files parse to the same object.
            let ours = try JSONSerialization.jsonObject(with: Data(bytes)) as? NSDictionary
            let theirs = try JSONSerialization.jsonObject(with: foundation) as? NSDictionary
            #expect(ours == theirs)
        }
    }

    @Test("a byte changed is decoded afresh; bytes that do not decode are refused every time")
    func memoByExactBytes() throws {
        var state = ClientState()
        state.rolledBackThrough = 4
        let bytes = try StateCoding.encode(state)
        #expect(StateCoding.decode(bytes)?.rolledBackThrough == 4)
        let changed = Array(String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: "\"rolledBackThrough\":4", with: "\"rolledBackThrough\":5").utf8)
        #expect(changed != bytes)
        #expect(StateCoding.decode(changed)?.rolledBackThrough == 5)
        #expect(StateCoding.decode(bytes)?.rolledBackThrough == 4)
        let broken = Array(bytes.dropLast())
        #expect(StateCoding.decode(broken) == nil)
        #expect(StateCoding.decode(broken) == nil)
    }

    @Test("a time that is not a finite number is refused, as JSONEncoder refused it")
    func nonFiniteRefused() {
        var state = ClientState()
        state.lastCheck = .infinity
        #expect(throws: PatchClientError.self) { try StateCoding.encode(state) }
        state.lastCheck = nil
        state.launch = ClientState.Launch(number: 1, sha256: "", foreground: .nan, foregroundSince: nil)
        #expect(throws: PatchClientError.self) { try StateCoding.encode(state) }
    }

    @Test("saveState is durable and atomic by path: no temporary file is left, the file reads back, last-check is removed")
    func saveByPath() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("state-coding-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.path + "/2.3/state.json"
        try CacheFiles.saveCheck(42, besideState: path)
        #expect(CacheFiles.loadState(atPath: path).lastCheck == nil, "no state.json: the check time alone is no state")
        var state = ClientState()
        state.lastCheck = 7
        try CacheFiles.saveState(state, toPath: path)
        #expect(!FileManager.default.fileExists(atPath: CacheFiles.checkPath(besideState: path)))
        #expect(CacheFiles.loadState(atPath: path) == state)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path + "/2.3") == ["state.json"])
        try CacheFiles.saveCheck(9.5, besideState: path)
        #expect(CacheFiles.loadState(atPath: path).lastCheck == 9.5)
    }
}
