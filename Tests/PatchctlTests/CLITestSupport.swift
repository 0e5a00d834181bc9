import Foundation
import PatchCore

/// Runs the built `patchctl` binary in a temporary workspace, as a release engineer would.
final class Workspace {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static var binary: URL {
        if let path = ProcessInfo.processInfo.environment["PATCHCTL"] { return URL(fileURLWithPath: path) }
        return packageRoot.appendingPathComponent(".build/debug/patchctl")
    }

    struct Result {
        let status: Int32
        let stdout: String
        let stderr: String
        let killedBySignal: Int32?
    }

    let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("patchctl-test-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    @discardableResult
    func write(_ name: String, _ text: String) throws -> String {
        try Data(text.utf8).write(to: directory.appendingPathComponent(name))
        return path(name)
    }

    /// Runs `patchctl ARGS --data … --keys …` (the global options are added for commands that take them).
    @discardableResult
    func run(_ arguments: [String], environment extra: [String: String] = [:], local: Bool = true) throws -> Result {
        let process = Process()
        process.executableURL = Workspace.binary
        process.arguments = arguments + (local ? ["--data", path("data"), "--keys", path("keys")] : [])
        process.currentDirectoryURL = directory
        var environment = ProcessInfo.processInfo.environment
        environment["HOTPATCH_ACTOR"] = "ci@test"
        for (key, value) in extra { environment[key] = value }
        process.environment = environment
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let signal = process.terminationReason == .uncaughtSignal ? process.terminationStatus : nil
        return Result(status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
                      stderr: String(decoding: stderr, as: UTF8.self), killedBySignal: signal)
    }

    func json(_ arguments: [String]) throws -> JSON {
        let result = try run(arguments + ["--json"])
        guard result.status == 0 else { throw WorkspaceError(result: result) }
        return try JSONParser.parse(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
    }
}

struct WorkspaceError: Error, CustomStringConvertible {
    let result: Workspace.Result
    var description: String { "exit \(result.status): \(result.stderr)" }
}
