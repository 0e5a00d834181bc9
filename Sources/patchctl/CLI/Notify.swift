import Foundation
import HotpatchCLI
import Locking
import PatchCore
import PatchPush
import PatchRegistry

/// `--notify` and `patchctl notify`: one round of background pushes (PatchPush.PushRound) to
/// the devices of a version and channel, progress on stderr, the figures on stdout and in a
/// `push.notify` audit event, locally or by the server that holds the app's APNs key.
enum Notify {
    static let option = Option.flag("--notify", "then wake the devices of that version and channel through APNs (needs `patchctl apps apns`)")

    /// Refuses `--notify` before anything changes when no round could be sent (an app without
    /// an APNs key): the change would be made and no device woken. Locally the registry is
    /// read; a server is asked for its dry run (`notifyDevices?dryRun=true`).
    static func check(_ arguments: Arguments, backend: any Backend, app: AppName, version: AppVersion?, channel: ChannelName?) throws(CLIError) {
        guard arguments.flag("--notify") else { return }
        do { _ = try backend.pushAudience(app: app, version: version, channel: channel) } catch {
            throw .failed("--notify: \(error.message); nothing was changed")
        }
    }

    /// The round, when `--notify` was given and the change was not a dry run.
    static func ifAsked(_ arguments: Arguments, backend: any Backend, app: AppName, version: AppVersion?, channel: ChannelName?,
                        reason: String) throws(CLIError) -> PushSummary? {
        guard arguments.flag("--notify"), !arguments.flag("--dry-run") else { return nil }
        return try backend.notify(app: app, version: version, channel: channel, reason: reason)
    }

    static func run(registry: Registry, app: AppName, version: AppVersion?, channel: ChannelName?, reason: String, actor: Actor) throws(CLIError) -> PushSummary {
        let endpoint: APNsEndpoint
        do { endpoint = try APNsEndpoint.current() } catch { throw .failed(error.description) }
        let step = Locked(0)
        let summary: PushSummary
        do throws(PushError) {
            summary = try PushRound.run(store: registry.pushStore(actor: actor), app: app, appVersion: version, channel: channel, reason: reason,
                                     endpoint: endpoint) { done, total in
                // About ten progress lines a round, and the last one.
                let tenth = max(1, total / 10)
                let shown = step.withLock { shown -> Bool in
                    guard done == total || done / tenth > shown else { return false }
                    shown = done / tenth
                    return true
                }
                if shown { Output.error("push: \(done)/\(total)") }
            }
        } catch {
            throw .failed("push: \(error.description)")
        }
        for line in reasonLines(summary) { Output.error(line) }
        return summary
    }

    static func line(_ summary: PushSummary) -> String { "push: \(summary.text)" }

    /// One stderr line per reason tokens were not sent, most frequent first, with what to
    /// check when a configuration causes it.
    static func reasonLines(_ summary: PushSummary) -> [String] {
        summary.reasons.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.map { reason, count in
            "push: \(count) not sent: \(reason)" + (APNsAnswer.hint(reason).map { " (\($0))" } ?? "")
        }
    }

    /// Called last, once the command's output is printed: a round that reached no device of
    /// the ones it had is a failure (exit 2), whatever the command changed before it.
    static func requireReached(_ summary: PushSummary?) throws(CLIError) {
        guard let summary, summary.reachedNone else { return }
        let reasons = summary.reasons.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
        throw .failed("push: no device was reached (\(reasons)); see the reasons above")
    }
}
