import Foundation
import HotpatchCLI
import PatchCore

/// What patchctl says about an app name the registry or server does not hold, and about a
/// place with no registry or no apps. One rule runs through it: a hint never tells someone to
/// make keys or an app from inside an app's repository. There, a missing registry or app is a
/// registry looked for in the wrong place (the repository holds `hotpatch.json`, the registry
/// lives where patchd serves it), and following "create one" would put a second registry and
/// root key in the git tree. `apps create` is suggested only where the user is plainly setting
/// a registry up: outside any directory holding hotpatch.json or `.git`.
enum AppSuggestion {
    /// `unknown app "dmeo" at PLACE; did you mean `demo`?` — or the apps there are, or that
    /// there are none; never "create it". `known` nil: the apps could not be listed.
    /// `refusal`: what the message starts with (a server's `server refused (404): `).
    static func unknownApp(_ name: String, known: [String]?, place: String, refusal: String = "") -> CLIError {
        var text = refusal + "unknown app \"\(name.debugSanitized)\" at \(place)"
        if let known {
            if let nearest = Suggestion.closest(to: name, among: known) {
                text += "; did you mean `\(nearest)`?"
            } else if known.isEmpty {
                text += ", which holds no apps" + (Repository.enclosing() == nil ? "" : "; \(pointAtRegistry(app: name))")
            } else {
                text += ", which holds \(known.joined(separator: ", "))"
            }
        }
        return .failed(text)
    }

    /// The app name in a refusal of an unknown app: the registry's `RegistryError.notFound`
    /// and patchd's 404 both read `unknown app "NAME"` (the registry's error carries text
    /// only, and patchd answers with the same words), so one reading serves both.
    static func unknownAppName(in message: String) -> String? {
        let prefix = "unknown app \""
        guard message.hasPrefix(prefix) else { return nil }
        let rest = message.dropFirst(prefix.count)
        guard let end = rest.firstIndex(of: "\"") else { return nil }
        return String(rest[..<end])
    }

    /// What to do about `place` having no registry (`noRegistry: true`) or no apps.
    /// `creating`: what `apps create` would need to make it there (`--database …`).
    static func nothingAt(_ place: String, noRegistry: Bool, creating: String? = nil, app: AppName? = nil) -> String {
        let what = noRegistry ? "no registry at \(place)" : "\(place) holds no apps"
        guard let repository = Repository.enclosing() else {
            let create = "`patchctl apps create NAME\(creating.map { " " + $0 } ?? "")`"
            return what + (noRegistry ? ": create one with \(create), or point --data / $HOTPATCH_DATA at an existing one"
                                      : " yet (create one with \(create))")
        }
        return what + ": \(repository.path) is an app's repository, and the registry patchd serves is kept outside it; \(pointAtRegistry(app: app?.rawValue))"
    }

    /// How to name the registry from an app's repository.
    static func pointAtRegistry(app: String?) -> String {
        "point at it with --data DIR --keys DIR (or $HOTPATCH_DATA, $HOTPATCH_KEYS), or --server URL for a patchd; "
            + "`patchctl init --app \(app ?? "NAME") --data DIR --keys DIR` (or `--server URL`) writes it into \(ProjectFile.fileName) for every command here"
    }
}

/// The app's repository the command runs in, if any.
enum Repository {
    /// The nearest directory at or above the current one that holds `hotpatch.json` or `.git`.
    static func enclosing(from start: URL = URL(fileURLWithPath: FileManager.default.currentDirectoryPath, isDirectory: true)) -> URL? {
        var directory = start.standardizedFileURL
        while true {
            for marker in [ProjectFile.fileName, ".git"] where FileManager.default.fileExists(atPath: directory.appendingPathComponent(marker).path) {
                return directory
            }
            let parent = directory.deletingLastPathComponent().standardizedFileURL
            if parent.path == directory.path { return nil }
            directory = parent
        }
    }
}
