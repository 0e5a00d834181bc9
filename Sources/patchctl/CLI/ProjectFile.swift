import Foundation
import HotpatchCLI
import PatchCore

/// `hotpatch.json` in an app's repository, written by `patchctl init` and found by walking up
/// from the current directory, so that `patchctl publish --app-version 2.3` needs nothing else:
///
///     {"app":"demo","channel":"staging","patchesDirectory":"patches","server":"https://patches.example.com"}
///
/// `app` is the default `--app`, `patchesDirectory` (relative to the file's directory) holds
/// bundles as `{patchesDirectory}/{app}/{appVersion}/main.js`, the optional `channel` is the
/// default `--channel` of publish (else `production`), the optional `server` is the
/// default `--server` (after `--server` and `$HOTPATCH_SERVER`), and the optional `data` and
/// `keys` (relative to the file's directory) are the default `--data` and `--keys` (after the
/// options and `$HOTPATCH_DATA`, `$HOTPATCH_KEYS`): a command run from any subdirectory of the
/// app's repository finds the registry the way it finds the app.
struct ProjectFile: Sendable {
    static let fileName = "hotpatch.json"
    static let maxSize = 64 << 10

    let app: AppName
    let patchesDirectory: String
    let server: String?
    /// The channel `publish` uses when `--channel` is omitted.
    let channel: ChannelName?
    /// The registry and key directories as written (relative to the file's directory).
    var data: String? = nil
    var keys: String? = nil
    /// Where the file is; `patchesDirectory` is relative to its directory.
    let location: URL

    var directory: URL { location.deletingLastPathComponent() }

    /// `data` or `keys` resolved against the file's directory.
    func resolved(_ path: String?) -> URL? {
        path.map { URL(fileURLWithPath: $0, isDirectory: true, relativeTo: directory).standardizedFileURL }
    }

    /// The bundle `publish` takes when FILE is omitted.
    func defaultBundle(appVersion: AppVersion) -> URL {
        URL(fileURLWithPath: patchesDirectory, isDirectory: true, relativeTo: directory).standardizedFileURL
            .appendingPathComponent(app.rawValue, isDirectory: true)
            .appendingPathComponent(appVersion.rawValue, isDirectory: true)
            .appendingPathComponent("main.js")
    }

    var json: JSON {
        var out: [String: JSON] = ["app": .string(app.rawValue), "patchesDirectory": .string(patchesDirectory)]
        if let server { out["server"] = .string(server) }
        if let channel { out["channel"] = .string(channel.rawValue) }
        if let data { out["data"] = .string(data) }
        if let keys { out["keys"] = .string(keys) }
        return .object(out)
    }

    /// The nearest `hotpatch.json` in `start` or a directory above it, or nil.
    static func find(from start: URL = URL(fileURLWithPath: FileManager.default.currentDirectoryPath, isDirectory: true)) throws(CLIError) -> ProjectFile? {
        var directory = start.standardizedFileURL
        while true {
            let candidate = directory.appendingPathComponent(fileName)
            if FileManager.default.fileExists(atPath: candidate.path) { return try load(candidate) }
            let parent = directory.deletingLastPathComponent().standardizedFileURL
            if parent.path == directory.path { return nil }
            directory = parent
        }
    }

    static func load(_ url: URL) throws(CLIError) -> ProjectFile {
        let bytes = try Output.readFile(url.path, what: "project file", limit: maxSize)
        let file = url.path  // whole: the user's own directories, and the file to fix
        guard let json = try? JSONParser.parse(bytes), json.objectValue != nil else { throw .failed("\(file) is not a JSON object") }
        guard let appName = json["app"]?.stringValue else { throw .failed("\(file) has no \"app\" string") }
        let app: AppName
        do { app = try AppName(appName) } catch { throw .failed("\(file): \(error.message)") }
        let patches = json["patchesDirectory"].map { $0.stringValue } ?? "patches"
        guard let patches, !patches.isEmpty else { throw .failed("\(file): \"patchesDirectory\" must be a non-empty string") }
        var server: String?
        if let value = json["server"], !value.isNull {
            guard let text = value.stringValue else { throw .failed("\(file): \"server\" must be a string") }
            do { _ = try Remote.url(text) } catch { throw .failed("\(file): \"server\" must be an http:// or https:// URL, got \(text.debugSanitized)") }
            server = text
        }
        var channel: ChannelName?
        if let value = json["channel"], !value.isNull {
            guard let text = value.stringValue else { throw .failed("\(file): \"channel\" must be a string") }
            do { channel = try ChannelName(text) } catch { throw .failed("\(file): \(error.message)") }
        }
        var directories: [String: String] = [:]
        for key in ["data", "keys"] {
            guard let value = json[key], !value.isNull else { continue }
            guard let text = value.stringValue, !text.isEmpty else { throw .failed("\(file): \"\(key)\" must be a non-empty string (a directory)") }
            directories[key] = text
        }
        var project = ProjectFile(app: app, patchesDirectory: patches, server: server, channel: channel, location: url.standardizedFileURL)
        project.data = directories["data"]
        project.keys = directories["keys"]
        return project
    }

    /// The project file of the current directory, read once per process.
    static let current: Result<ProjectFile?, CLIError> = {
        do throws(CLIError) { return .success(try find()) } catch { return .failure(error) }
    }()
}

private extension JSON {
    var isNull: Bool { if case .null = self { return true } else { return false } }
}
