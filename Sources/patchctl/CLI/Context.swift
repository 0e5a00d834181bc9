import Foundation
import Locking
import HotpatchCLI
import PatchCore
import PatchRegistry

/// What every local command shares: where the registry and keys live, and who is acting.
struct Context {
    let dataDirectory: URL
    /// `--database` / `$HOTPATCH_DATABASE`: a PostgreSQL registry instead of `--data`.
    let databaseURL: String?
    /// Both --data and --database on the command line: refused when the registry is opened.
    let bothRegistries: Bool
    /// `--database` as given on the command line (not from the environment).
    private let databaseArgument: String?
    let keysDirectory: URL
    let actor: Actor
    let environment: [String: String]
    /// The command's words (`keys rotate`), for messages.
    let command: String
    /// The app the command names (`--app`, else hotpatch.json's), for messages.
    private let app: AppName?

    static let globalOptions: [Option] = [
        .value("--data", "DIR", "registry directory (default ./data, or $HOTPATCH_DATA); only apps create makes a new one"),
        .value("--database", "URL", "a PostgreSQL registry (postgres://…, or $HOTPATCH_DATABASE) instead of --data"),
        .value("--keys", "DIR", "key directory (default ./keys, or $HOTPATCH_KEYS)"),
    ]

    /// Refuses a `$HOTPATCH_ACTOR` that `ReadableText` refuses: every change this command
    /// makes would be recorded under it.
    init(arguments: Arguments, environment: [String: String] = ProcessInfo.processInfo.environment) throws(CLIError) {
        self.environment = environment
        command = arguments.spec.words.joined(separator: " ")
        app = arguments.spec.options.contains { $0.name == "--app" } ? try? AppDefault.given(arguments) : nil
        // The option, the environment, then the project file's (relative to it), then ./data.
        let project = try? ProjectFile.current.get()
        dataDirectory = arguments.value("--data").map { URL(fileURLWithPath: $0, isDirectory: true) }
            ?? environment["HOTPATCH_DATA"].map { URL(fileURLWithPath: $0, isDirectory: true) }
            ?? project?.resolved(project?.data) ?? URL(fileURLWithPath: "data", isDirectory: true)
        // An explicit --data wins over an exported $HOTPATCH_DATABASE.
        databaseURL = arguments.value("--database") ?? (arguments.value("--data") == nil ? environment["HOTPATCH_DATABASE"] : nil)
        bothRegistries = arguments.value("--database") != nil && arguments.value("--data") != nil
        databaseArgument = arguments.value("--database")
        keysDirectory = arguments.value("--keys").map { URL(fileURLWithPath: $0, isDirectory: true) }
            ?? environment["HOTPATCH_KEYS"].map { URL(fileURLWithPath: $0, isDirectory: true) }
            ?? project?.resolved(project?.keys) ?? URL(fileURLWithPath: "keys", isDirectory: true)
        do { actor = try Actor.current(environment: environment) } catch { throw .failed(error.message) }
    }

    /// Opens the registry. Only `apps create` passes `create: true` (and `db copy` for its
    /// target); every other command refuses a directory with no registry, an empty
    /// registry.sqlite or a database without the schema ("no registry at PATH", exit 2) and
    /// leaves it as it was, so a mistyped `--data` cannot turn into an empty registry that
    /// passes every check.
    ///
    /// A command that reaches here acts on the local registry: the commands that can act on a
    /// server have asked `Remote.from` first. When a server is configured anyway
    /// (`$HOTPATCH_SERVER`, or the project file's `server`), it says so on stderr rather than
    /// quietly using `./data`: these commands have no remote form, and refusing would stop an
    /// operator who works on the server's own registry with `HOTPATCH_SERVER` exported.
    func openRegistry(create: Bool = false) throws(CLIError) -> Registry {
        if let server = configuredServer {
            Output.error("note: `patchctl \(command)` acts on the registry at \((try? database.description) ?? dataDirectory.path), not on \(server.debugSanitized) (it has no remote form)")
        }
        let database = try self.database
        if let url = databaseURL, url == databaseArgument, RegistryDatabase.hasPassword(url) {
            Output.error("warning: the password in --database is visible to other users of this machine (ps, /proc/PID/cmdline); use ~/.pgpass, PGPASSFILE or $HOTPATCH_DATABASE")
        }
        do {
            let registry = try Registry(database: database, keysDirectory: keysDirectory, create: create)
            Context.remember(registry)
            return registry
        } catch {
            // Opening without `create` refuses only a place with no registry as `.notFound`;
            // what to do about it depends on where the command runs (AppSuggestion).
            guard case .notFound = error, !create else { throw error.cliError }
            switch database {
            case .sqlite(let directory):
                // `: > registry.sqlite` is worth saying: the file is there, and still no registry.
                let file = directory.appendingPathComponent("registry.sqlite").path
                let empty = (try? FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) == 0 ? " (its registry.sqlite is empty)" : ""
                throw .failed(AppSuggestion.nothingAt(directory.path + empty, noRegistry: true, app: app))
            case .postgres:
                throw .failed(AppSuggestion.nothingAt("\(database) (the database or schema has no registry tables)", noRegistry: true, creating: "--database …", app: app))
            }
        }
    }

    /// The registry this process opened, so that an unknown app refused deep inside a
    /// command can be answered with the apps it does hold ("did you mean `demo`?"). Held
    /// weakly: a registry kept alive to the end of the process would never close, and SQLite
    /// would leave its -wal and -shm behind (the error is mapped while the command still
    /// holds the registry).
    private static let opened = OpenedRegistry()

    /// The weak reference, set and read on the command's thread; `@unchecked` because a
    /// Registry is not Sendable and this is process-wide state only patchctl's one command reads.
    private final class OpenedRegistry: @unchecked Sendable {
        weak var registry: Registry?
    }

    static func remember(_ registry: Registry) { opened.registry = registry }
    static var openedRegistry: Registry? { opened.registry }

    /// The registry this command acts on: `--database` when given, else `--data`.
    var database: RegistryDatabase {
        get throws(CLIError) {
            if bothRegistries { throw .usage("--data and --database name two registries: give one") }
            do { return try RegistryDatabase.resolve(database: databaseURL, dataDirectory: dataDirectory) } catch { throw error.cliError }
        }
    }

    /// The registry, for messages: its path or database.
    var place: String { "the registry at \((try? database.description) ?? dataDirectory.path)" }

    /// The server a remote command would use when no `--server` is given.
    var configuredServer: String? {
        environment["HOTPATCH_SERVER"] ?? (try? ProjectFile.current.get())??.server
    }
}

/// `--app` when given; else the project file's app; else, for a local registry holding
/// exactly one app, that app.
enum AppDefault {
    /// `--app`, else hotpatch.json's app; nil when neither names one (then a Backend asks its
    /// registry or server for the only app there is: `Backend.app`).
    static func given(_ arguments: Arguments, option: String = "--app") throws(CLIError) -> AppName? {
        if arguments.value(option) != nil { return try arguments.appName(option) }
        return try ProjectFile.current.get()?.app
    }

    /// For a command with no registry or server to ask (`fetch`).
    static func resolve(_ arguments: Arguments, option: String = "--app") throws(CLIError) -> AppName {
        guard let app = try given(arguments, option: option) else {
            throw .usage("\(option) is required (or run `patchctl init --app NAME` with --server URL or --data DIR --keys DIR in the app's repository to write \(ProjectFile.fileName))")
        }
        return app
    }
}

/// The channel a command publishes to when `--channel` is omitted: hotpatch.json's, else production.
enum ChannelDefault {
    static func resolve(_ arguments: Arguments, option: String = "--channel") throws(CLIError) -> ChannelName {
        if let channel = try arguments.channel(option) { return channel }
        return try ProjectFile.current.get()?.channel ?? .production
    }
}

extension RegistryError {
    var cliError: CLIError {
        switch self {
        case .pending(let change): return .pending(PendingText.line(change.json), json: change.json)
        case .invalidCall(let message): return .usage(message)
        case .unconfirmed(let message): return .usage(message + "; give --yes to go ahead")
        case .notFound(let message):
            if let name = AppSuggestion.unknownAppName(in: message), let registry = Context.openedRegistry {
                return AppSuggestion.unknownApp(name, known: try? registry.apps().map(\.name.rawValue), place: "the registry at \(registry.database)")
            }
            return .failed(description)
        default: return .failed(description)
        }
    }
}

/// Output helpers: one place decides how text and JSON are written.
enum Output {
    static func line(_ text: String = "") { print(text) }

    static func json(_ value: JSON) {
        printedJSON.withLock { $0 = true }
        // Control characters escaped (a PEM's newlines), so every JSON parser reads it.
        print(String(decoding: value.wireBytes, as: UTF8.self))
    }

    /// Whether the command printed its JSON result; if so, a failure adds no error object.
    static let printedJSON = Locked(false)

    static func error(_ text: String) {
        FileHandle.standardError.write(Data(("patchctl: " + text + "\n").utf8))
    }

    /// Reads a whole file given on the command line, with a clear error.
    static func readFile(_ path: String, what: String, limit: Int) throws(CLIError) -> [UInt8] {
        var info = stat()
        guard stat(path, &info) == 0 else { throw .failed("cannot read \(what) \(path.pathSanitized): \(String(cString: strerror(errno)))") }
        guard info.st_mode & S_IFMT == S_IFREG else { throw .failed("\(what) \(path.pathSanitized) is not a regular file") }
        guard Int(info.st_size) <= limit else { throw .failed("\(what) \(path.pathSanitized) is \(info.st_size) bytes; the limit is \(limit) bytes") }
        guard let data = FileManager.default.contents(atPath: path) else { throw .failed("cannot read \(what) \(path.pathSanitized)") }
        return Array(data)
    }
}

/// Renders rows as aligned columns for people.
func table(_ header: [String], _ rows: [[String]]) -> String {
    let all = [header] + rows
    var widths = [Int](repeating: 0, count: header.count)
    for row in all { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) } }
    return all.map { row in
        row.enumerated().map { i, cell in i == row.count - 1 ? cell : cell.padding(toLength: widths[i], withPad: " ", startingAt: 0) }
            .joined(separator: "  ")
    }.joined(separator: "\n")
}
