import Foundation
import HotpatchTestSupport
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

    /// The options naming the registry of the data directory `name` in the workspace, on the
    /// backend under test: `--data DIR` or `--database URL` (`TestBackend`).
    func registryArguments(_ name: String) throws -> [String] { try TestBackend.arguments(dataDirectory: path(name)) }

    /// Declares a channel of `app` in the workspace's registry (`patchctl channels create`'s
    /// effect), before commands that name it.
    func declareChannel(_ channel: String, app: String = "demo") throws {
        try TestBackend.declareChannel(channel, app: app, dataDirectory: URL(fileURLWithPath: path("data"), isDirectory: true),
                                       keysDirectory: URL(fileURLWithPath: path("keys"), isDirectory: true))
    }

    /// Runs `patchctl ARGS --data … --keys …` (the global options are added for commands that take them).
    @discardableResult
    func run(_ arguments: [String], environment extra: [String: String] = [:], local: Bool = true, umask: String? = nil) throws -> Result {
        try start(arguments, environment: extra, local: local, umask: umask).wait()
    }

    /// Starts `patchctl` without waiting for it, for tests that run processes side by side.
    /// Output goes to files, so a process never blocks on a full pipe.
    /// With `umask`, it runs under that umask (through /bin/sh), as an operator's shell would.
    func start(_ arguments: [String], environment extra: [String: String] = [:], local: Bool = true, umask: String? = nil) throws -> Running {
        let process = Process()
        let words = arguments + (local ? try registryArguments("data") + ["--keys", path("keys")] : [])
        if let umask {
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "umask \(umask) && exec \"$0\" \"$@\"", Workspace.binary.path] + words
        } else {
            process.executableURL = Workspace.binary
            process.arguments = words
        }
        process.currentDirectoryURL = directory
        var environment = ProcessInfo.processInfo.environment
        environment["HOTPATCH_ACTOR"] = "ci@test"
        for (key, value) in extra { environment[key] = value }
        process.environment = environment
        let id = UUID().uuidString
        let out = directory.appendingPathComponent(".out-\(id)"), err = directory.appendingPathComponent(".err-\(id)")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
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

    /// The permission bits of a file in the workspace, or nil when it does not exist.
    func mode(_ name: String) -> mode_t? {
        var info = stat()
        return stat(path(name), &info) == 0 ? info.st_mode & 0o777 : nil
    }

    /// Publishes a patch to APP, exports it and verifies it from its root v1 (with its content
    /// key when encrypted): the app's keys are all there and are the ones its root names.
    func expectWorking(_ app: String, encrypted: Bool) throws -> Bool {
        let published = try run(["publish", "--app", app, "--app-version", "1.0", try write("\(app).js", "works('\(app)')")])
        guard published.status == 0 else { throw WorkspaceError(result: published) }
        try write("\(app).root.json", try run(["apps", "root", app]).stdout)
        let out = path("export-\(app)-\(UUID().uuidString)")
        try run(["export", "--app", app, "--out", out])
        let verify = try run(["verify", "--repo", out, "--root", path("\(app).root.json"), "--app", app]
                             + (encrypted ? ["--key", path("keys/\(app)/content.key")] : []), local: false)
        guard verify.status == 0 else { throw WorkspaceError(result: verify) }
        return true
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
