import Foundation
import PatchCore
import PatchRegistry

/// What every local command shares: where the registry and keys live, and who is acting.
struct Context {
    let dataDirectory: URL
    let keysDirectory: URL
    let actor: Actor
    let environment: [String: String]

    static let globalOptions: [Option] = [
        .value("--data", "DIR", "registry directory (default ./data, or $HOTPATCH_DATA)"),
        .value("--keys", "DIR", "key directory (default ./keys, or $HOTPATCH_KEYS)"),
    ]

    init(arguments: Arguments, environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.environment = environment
        dataDirectory = URL(fileURLWithPath: arguments.value("--data") ?? environment["HOTPATCH_DATA"] ?? "data", isDirectory: true)
        keysDirectory = URL(fileURLWithPath: arguments.value("--keys") ?? environment["HOTPATCH_KEYS"] ?? "keys", isDirectory: true)
        actor = Actor.current(environment: environment)
    }

    func openRegistry() throws(CLIError) -> Registry {
        do { return try Registry(dataDirectory: dataDirectory, keysDirectory: keysDirectory) } catch { throw error.cliError }
    }
}

extension RegistryError {
    var cliError: CLIError { .failed(description) }
}

/// Output helpers: one place decides how text and JSON are written.
enum Output {
    static func line(_ text: String = "") { print(text) }

    static func json(_ value: JSON) {
        printedJSON.set(true)
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
        guard stat(path, &info) == 0 else { throw .failed("cannot read \(what) \(path.debugSanitized): \(String(cString: strerror(errno)))") }
        guard info.st_mode & S_IFMT == S_IFREG else { throw .failed("\(what) \(path.debugSanitized) is not a regular file") }
        guard Int(info.st_size) <= limit else { throw .failed("\(what) \(path.debugSanitized) is \(info.st_size) bytes; the limit is \(limit) bytes") }
        guard let data = FileManager.default.contents(atPath: path) else { throw .failed("cannot read \(what) \(path.debugSanitized)") }
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
