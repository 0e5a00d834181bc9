import HotpatchCLI
import PatchCore
import PatchRegistry

/// The accessors for hotpatch's own identifiers: a malformed one is a usage error that says why.
extension Arguments {
    func appName(_ name: String = "--app") throws(CLIError) -> AppName {
        do { return try AppName(try required(name)) } catch let error as ValidationError { throw .usage(error.message) } catch let error as CLIError { throw error } catch { throw .usage("\(error)") }
    }

    /// `--app`'s value; nil when it is not given. A listing (status, list, audit) names its
    /// every-app flag as `everyApp`: then, as for every other command, hotpatch.json's app is
    /// the default when `--app` is not given, and nil (every app) takes the flag, so a listing
    /// run in one app's repository shows that app rather than every app of the registry.
    func optionalAppName(_ name: String = "--app", everyApp: String? = nil) throws(CLIError) -> AppName? {
        if let everyApp, flag(everyApp) {
            guard values[name] == nil else { throw .usage("give \(name) NAME or \(everyApp), not both") }
            return nil
        }
        guard values[name] != nil else { return everyApp == nil ? nil : try ProjectFile.current.get()?.app }
        return try appName(name)
    }

    func appVersion(_ name: String = "--app-version") throws(CLIError) -> AppVersion {
        let text = try required(name)
        do { return try AppVersion(text) } catch { throw .usage(error.message) }
    }

    /// `--app-version` of publish: one version, a list or a range (`VersionSelector`).
    func versionSelector(_ name: String = "--app-version") throws(CLIError) -> VersionSelector {
        let text = try required(name)
        do { return try VersionSelector(text) } catch { throw .usage(error.message) }
    }

    /// A channel option's value, nil when it is not given.
    func channel(_ name: String = "--channel") throws(CLIError) -> ChannelName? {
        guard let text = values[name] else { return nil }
        do { return try ChannelName(text) } catch { throw .usage(error.message) }
    }
}
