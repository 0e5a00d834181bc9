import HotpatchCLI
import PatchCore

/// The accessors for hotpatch's own identifiers: a malformed one is a usage error that says why.
extension Arguments {
    func appName(_ name: String = "--app") throws(CLIError) -> AppName {
        do { return try AppName(try required(name)) } catch let error as ValidationError { throw .usage(error.message) } catch let error as CLIError { throw error } catch { throw .usage("\(error)") }
    }

    func optionalAppName(_ name: String = "--app") throws(CLIError) -> AppName? {
        guard values[name] != nil else { return nil }
        return try appName(name)
    }

    func appVersion(_ name: String = "--app-version") throws(CLIError) -> AppVersion {
        let text = try required(name)
        do { return try AppVersion(text) } catch { throw .usage(error.message) }
    }

    /// A channel option's value, nil when it is not given.
    func channel(_ name: String = "--channel") throws(CLIError) -> ChannelName? {
        guard let text = values[name] else { return nil }
        do { return try ChannelName(text) } catch { throw .usage(error.message) }
    }
}
