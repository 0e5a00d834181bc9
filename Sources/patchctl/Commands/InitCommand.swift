import Foundation
import HotpatchCLI
import PatchCore
import PatchRegistry

/// `patchctl init`: writes `hotpatch.json` in the current directory (the app's repository), so
/// that later commands there and below need neither `--app`, FILE nor where the registry is.
/// It changes no registry, but it reads the one it is pointed at: a hotpatch.json that
/// publishes nowhere would make the next command's "no registry here" hint the first thing a
/// release engineer follows, and that hint once made a second registry and root key in the
/// repository. So the registry is named, `--server URL` (a patchd) or `--data DIR --keys DIR`
/// (the registry patchd serves, outside the repository), and a local one must exist and hold
/// the app. `$HOTPATCH_DATA`/`$HOTPATCH_DATABASE` and `$HOTPATCH_KEYS` count too: every
/// command finds the registry from them the same way, so nothing is written for them.
struct InitCommand: Command {
    static let spec = CommandSpec("init", summary: "Write hotpatch.json (the app, where its registry is, the patches directory) in the current directory, the app's repository",
                                  options: [.value("--app", "NAME", "the app").required,
                                            .value("--server", "URL", "the patchd that holds the app: remote commands use it by default"),
                                            .value("--data", "DIR", "the registry directory patchd serves, with --keys (kept in hotpatch.json as given: absolute, or relative to this directory)"),
                                            .value("--keys", "DIR", "the registry's key directory, with --data (keep it outside the repository)"),
                                            .value("--patches", "DIR", "directory holding {app}/{appVersion}/main.js, relative to this one (default patches)"),
                                            .value("--channel", "NAME", "the channel publish uses by default (default production)"),
                                            .flag("--force", "replace an existing hotpatch.json"),
                                            .flag("--json", "print JSON")])

    static func run(_ arguments: Arguments) throws(CLIError) {
        try run(arguments, environment: ProcessInfo.processInfo.environment)
    }

    static func run(_ arguments: Arguments, environment: [String: String]) throws(CLIError) {
        let app = try arguments.appName()
        let patches = arguments.value("--patches") ?? "patches"
        guard !patches.isEmpty else { throw .usage("--patches must not be empty") }
        let server = arguments.value("--server")
        if let server { _ = try Remote.url(server) }
        for option in ["--data", "--keys"] where arguments.value(option)?.isEmpty == true { throw .usage("\(option) must not be empty") }
        let data = arguments.value("--data"), keys = arguments.value("--keys")
        if (data == nil) != (keys == nil) {
            throw .usage("--data and --keys go together: the registry patchd serves and its key directory (\(data == nil ? "--data" : "--keys") is missing)")
        }
        let registry = try registryPlace(data: data, keys: keys, environment: environment)
        guard registry != nil || server != nil else {
            throw .usage("say where the app's registry is: --server URL (a patchd; the token from --token-file FILE or $HOTPATCH_TOKEN) or --data DIR --keys DIR (the registry patchd serves, outside this repository)")
        }
        let channel = try arguments.channel()
        let location = URL(fileURLWithPath: FileManager.default.currentDirectoryPath, isDirectory: true)
            .appendingPathComponent(ProjectFile.fileName).standardizedFileURL
        if FileManager.default.fileExists(atPath: location.path), !arguments.flag("--force") {
            throw .failed("\(location.path) already exists; give --force to replace it")
        }
        if let registry { try check(app, in: registry) }

        var project = ProjectFile(app: app, patchesDirectory: patches, server: server, channel: channel, location: location)
        // As given: relative to the current directory is relative to hotpatch.json, which is
        // written here, and ProjectFile resolves it against the file's directory.
        project.data = data
        project.keys = keys
        do { try DurableFile.replace(location, with: Array((project.json.canonicalString + "\n").utf8)) } catch {
            throw .failed("cannot write \(location.path): \(error)")
        }
        if arguments.flag("--json") { Output.json(project.json); return }
        var place = server.map { "server \($0)" } ?? ""
        if let registry { place += (place.isEmpty ? "" : ", ") + "registry \(registry.description)" }
        Output.line("wrote \(location.path): app \(app), \(place), patches in \(patches)/\(app)/{appVersion}/main.js")
        Output.line("next: patchctl publish --app-version V   (publishes \(patches)/\(app)/V/main.js, from here or any subdirectory)")
    }

    /// A local registry named on the command line or by the environment.
    struct RegistryPlace: CustomStringConvertible {
        let database: RegistryDatabase
        let keys: URL
        /// From `$HOTPATCH_…`, not written to hotpatch.json.
        let fromEnvironment: Bool
        var description: String { "\(database), keys \(keys.path)\(fromEnvironment ? " (from the environment; not written to \(ProjectFile.fileName))" : "")" }
    }

    private static func registryPlace(data: String?, keys: String?, environment: [String: String]) throws(CLIError) -> RegistryPlace? {
        if let data, let keys {
            return RegistryPlace(database: .sqlite(dataDirectory: URL(fileURLWithPath: data, isDirectory: true).standardizedFileURL),
                                 keys: URL(fileURLWithPath: keys, isDirectory: true).standardizedFileURL, fromEnvironment: false)
        }
        guard let keys = environment["HOTPATCH_KEYS"], environment["HOTPATCH_DATA"] != nil || environment["HOTPATCH_DATABASE"] != nil else { return nil }
        let database: RegistryDatabase
        do {
            database = try RegistryDatabase.resolve(database: environment["HOTPATCH_DATABASE"],
                                                    dataDirectory: URL(fileURLWithPath: environment["HOTPATCH_DATA"] ?? "data", isDirectory: true))
        } catch { throw error.cliError }
        return RegistryPlace(database: database, keys: URL(fileURLWithPath: keys, isDirectory: true).standardizedFileURL, fromEnvironment: true)
    }

    /// The registry exists and holds `app`, and its key directory has the app's keys: what
    /// `publish` from this repository will need. Opened without `create`, so a wrong path is
    /// left as it was.
    private static func check(_ app: AppName, in place: RegistryPlace) throws(CLIError) {
        let registry: Registry
        do { registry = try Registry(database: place.database, keysDirectory: place.keys, create: false) } catch {
            guard case .notFound = error else { throw error.cliError }
            // Here the user is naming the registry, so the fix is the path; `apps create` is
            // named only outside an app's repository (AppSuggestion's rule).
            let make = Repository.enclosing() == nil ? " (or make one there first: `patchctl apps create \(app) --data DIR --keys DIR`)" : ""
            throw .failed("no registry at \(place.database): give the --data and --keys of the registry patchd serves\(make)")
        }
        Context.remember(registry)
        do { _ = try registry.app(app) } catch { throw error.cliError }
        var isDirectory: ObjCBool = false
        let appKeys = place.keys.appendingPathComponent(app.rawValue, isDirectory: true)
        guard FileManager.default.fileExists(atPath: appKeys.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw .failed("\(place.keys.path) has no keys of \(app) (\(appKeys.path) is missing): give the --keys directory of the registry at \(place.database)")
        }
    }
}
