import Foundation
import HotpatchCLI
import PatchCore
import PatchRegistry

/// `patchctl diff N M` (or `N FILE`): what changes between two patches of an app version, or
/// between a patch and a file about to be published, as a unified diff of the scripts
/// (decrypted for encrypted apps; over --server, a plaintext app's). The diff itself is diff(1)'s `-u`.
struct DiffCommand: Command {
    static let spec = CommandSpec("diff", summary: "Unified diff of two patches' scripts (N M), or of a patch and a file (N FILE); decrypts encrypted apps",
                                  positionals: ["N", "M|FILE"],
                                  options: [.value("--app", "NAME", "the app (default: hotpatch.json's, or the registry's only app)"),
                                            .value("--app-version", "V", "the app version"),
                                            .flag("--json", "print JSON: identical, diff")] + Context.globalOptions + Remote.options)

    static func run(_ arguments: Arguments) throws(CLIError) {
        let version = try arguments.appVersion()
        let backend = try Backends.open(arguments)
        let name = try backend.app(arguments)
        try backend.requireApp(name)
        func script(_ word: String, fileAllowed: Bool) throws(CLIError) -> (label: String, bytes: [UInt8]) {
            if let number = Int(word) {
                return ("\(name) \(version) patch \(number)", try backend.script(app: name, version: version, patch: number))
            }
            guard fileAllowed else { throw .usage("N must be a patch number, got \(word.debugSanitized)") }
            return (word, try Output.readFile(word, what: "file", limit: Registry.maxBundleSize))
        }
        let old = try script(arguments.positionals[0], fileAllowed: false)
        let new = try script(arguments.positionals[1], fileAllowed: true)
        let text = try unifiedDiff(old, new)
        if arguments.flag("--json") { Output.json(["identical": .bool(text.isEmpty), "diff": .string(text)]); return }
        FileHandle.standardOutput.write(Data(text.utf8))
    }

    /// diff -u over two private temporary files; "" when they are the same.
    static func unifiedDiff(_ old: (label: String, bytes: [UInt8]), _ new: (label: String, bytes: [UInt8])) throws(CLIError) -> String {
        let manager = FileManager.default
        let directory = manager.temporaryDirectory.appendingPathComponent("patchctl-diff-\(UUID().uuidString)", isDirectory: true)
        do {
            // The scripts of an encrypted app are secret: a directory only this user can enter.
            try manager.createDirectory(at: directory, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        } catch { throw .failed("cannot create \(directory.path): \(error.localizedDescription)") }
        defer { try? manager.removeItem(at: directory) }
        let a = directory.appendingPathComponent("a"), b = directory.appendingPathComponent("b")
        guard manager.createFile(atPath: a.path, contents: Data(old.bytes)), manager.createFile(atPath: b.path, contents: Data(new.bytes)) else {
            throw .failed("cannot write the scripts to compare into \(directory.path)")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/diff")
        process.arguments = ["-u", "--label", old.label, "--label", new.label, a.path, b.path]
        let output = Pipe()
        process.standardOutput = output
        do { try process.run() } catch { throw .failed("cannot run diff(1) (/usr/bin/diff, from diffutils): \(error.localizedDescription)") }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        // diff exits 0 when the files are the same, 1 when they differ, 2 when it failed.
        guard process.terminationStatus <= 1 else { throw .failed("diff(1) failed (exit \(process.terminationStatus))") }
        return String(decoding: data, as: UTF8.self)
    }
}
