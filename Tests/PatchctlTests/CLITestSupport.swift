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
        try start(arguments, environment: extra, local: local).wait()
    }

    /// Starts `patchctl` without waiting for it, for tests that run processes side by side.
    /// Output goes to files, so a process never blocks on a full pipe.
    func start(_ arguments: [String], environment extra: [String: String] = [:], local: Bool = true) throws -> Running {
        let process = Process()
        process.executableURL = Workspace.binary
        process.arguments = arguments + (local ? ["--data", path("data"), "--keys", path("keys")] : [])
        process.currentDirectoryURL = directory
        var environment = ProcessInfo.processInfo.environment
        environment["HOTPATCH_ACTOR"] = "ci@test"
        for (key, value) in extra { environment[key] = value }
        process.environment = environment
        let id = UUID().uuidString
        let out = directory.appendingPathComponent(".out-\(id)"), err = directory.appendingPathComponent(".err-\(id)")
        FileManager.default.createFile(atPath: out.path, contents: nil)
        FileManager.default.createFile(atPath: err.path, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = try FileHandle(forWritingTo: err)
        try process.run()
        return Running(process: process, stdout: out, stderr: err)
    }

    /// A started `patchctl`.
    final class Running {
        let process: Process
        let stdout: URL
        let stderr: URL

        init(process: Process, stdout: URL, stderr: URL) {
            self.process = process
            self.stdout = stdout
            self.stderr = stderr
        }

        var isRunning: Bool { process.isRunning }

        func wait() -> Result {
            process.waitUntilExit()
            let signal = process.terminationReason == .uncaughtSignal ? process.terminationStatus : nil
            let read = { (url: URL) in String(decoding: (try? Data(contentsOf: url)) ?? Data(), as: UTF8.self) }
            return Result(status: process.terminationStatus, stdout: read(stdout), stderr: read(stderr), killedBySignal: signal)
        }
    }

    /// Waits until `condition` holds or `seconds` pass; true when it held.
    @discardableResult
    static func poll(seconds: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            usleep(10_000)
        }
        return condition()
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
