import Foundation
import HotpatchCLI
import PatchCore

/// `patchctl init`: writes `hotpatch.json` in the current directory (the app's repository), so
/// that later commands there and below need neither `--app` nor FILE. It touches no registry:
/// the app itself is made by `apps create` (locally) or exists on the server.
struct InitCommand: Command {
    static let spec = CommandSpec("init", summary: "Write hotpatch.json (app, patches directory, optional server) in the current directory, the app's repository",
                                  options: [.value("--app", "NAME", "the app (required)"),
                                            .value("--patches", "DIR", "directory holding {app}/{appVersion}/main.js, relative to this one (default patches)"),
                                            .value("--server", "URL", "the patchd server remote commands use by default"),
                                            .value("--channel", "NAME", "the channel publish uses by default (default production)"),
                                            .value("--data", "DIR", "the registry directory commands here and below use by default, relative to this one"),
                                            .value("--keys", "DIR", "the key directory commands here and below use by default, relative to this one (keep it outside the repository)"),
                                            .flag("--force", "replace an existing hotpatch.json"),
                                            .flag("--json", "print JSON")])

    static func run(_ arguments: Arguments) throws(CLIError) {
        let app = try arguments.appName()
        let patches = arguments.value("--patches") ?? "patches"
        guard !patches.isEmpty else { throw .usage("--patches must not be empty") }
        let server = arguments.value("--server")
        if let server { _ = try Remote.url(server) }
        let location = URL(fileURLWithPath: FileManager.default.currentDirectoryPath, isDirectory: true)
            .appendingPathComponent(ProjectFile.fileName).standardizedFileURL
        if FileManager.default.fileExists(atPath: location.path), !arguments.flag("--force") {
            throw .failed("\(location.path) already exists; give --force to replace it")
        }
        var project = ProjectFile(app: app, patchesDirectory: patches, server: server, channel: try arguments.channel(), location: location)
        for option in ["--data", "--keys"] where arguments.value(option)?.isEmpty == true { throw .usage("\(option) must not be empty") }
        project.data = arguments.value("--data")
        project.keys = arguments.value("--keys")
        do { try DurableFile.replace(location, with: Array((project.json.canonicalString + "\n").utf8)) } catch {
            throw .failed("cannot write \(location.path): \(error)")
        }
        if arguments.flag("--json") { Output.json(project.json); return }
        Output.line("wrote \(location.path): app \(app), patches in \(patches)/\(app)/{appVersion}/main.js\(server.map { ", server \($0)" } ?? "")")
        Output.line("next: patchctl publish --app-version V   (publishes \(patches)/\(app)/V/main.js)")
    }
}
