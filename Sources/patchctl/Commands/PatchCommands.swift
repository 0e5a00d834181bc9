import Foundation
import PatchCore
import PatchRegistry

struct PublishCommand: Command {
    static let spec = CommandSpec("publish", summary: "Publish a bundle as the next patch of an app version (hash, encrypt, sign, audit)",
                                  positionals: ["FILE"],
                                  options: [.value("--app", "NAME", "the app"),
                                            .value("--app-version", "V", "the app version the patch is for, e.g. 2.3"),
                                            .value("--rollout", "PCT", "percentage of devices that get it (default 100)"),
                                            .flag("--json", "print JSON")] + Context.globalOptions)

    static func run(_ arguments: Arguments) throws(CLIError) {
        let name = try arguments.appName()
        let version = try arguments.appVersion()
        let rollout = try arguments.int("--rollout", in: 0...100) ?? 100
        let bundle = try Output.readFile(arguments.positionals[0], what: "bundle", limit: Registry.maxBundleSize)
        let context = Context(arguments: arguments)
        let registry = try context.openRegistry()
        let published: PublishedPatch
        do { published = try registry.publish(app: name, appVersion: version, bundle: bundle, rollout: rollout, actor: context.actor) } catch {
            throw error.cliError
        }
        let patch = published.patch
        if arguments.flag("--json") {
            var json = patch.json.objectValue!
            json["targetsVersion"] = .int(published.targetsVersion)
            Output.json(.object(json))
            return
        }
        Output.line("published \(name) \(version) patch \(patch.number) (rollout \(patch.rollout)%\(patch.encrypted ? ", encrypted" : ""))")
        Output.line("sha256 \(patch.plaintext.sha256)")
        Output.line("md5    \(patch.plaintext.md5)")
        Output.line("target \(patch.targetPath) in targets version \(published.targetsVersion)")
    }
}

struct RevokeCommand: Command {
    static let spec = CommandSpec("revoke", summary: "Revoke a patch, or every active patch of an app version when --patch is omitted",
                                  options: [.value("--app", "NAME", "the app"),
                                            .value("--app-version", "V", "the app version"),
                                            .value("--patch", "N", "the patch number (default: all active patches of the version)"),
                                            .flag("--json", "print JSON")] + Context.globalOptions)

    static func run(_ arguments: Arguments) throws(CLIError) {
        let name = try arguments.appName()
        let version = try arguments.appVersion()
        let number = try arguments.int("--patch", in: 1...Int(Int32.max))
        let context = Context(arguments: arguments)
        let registry = try context.openRegistry()
        let revoked: [PatchRecord]
        do { revoked = try registry.revoke(app: name, appVersion: version, number: number, actor: context.actor) } catch { throw error.cliError }
        if arguments.flag("--json") {
            Output.json(.array(revoked.map(\.json)))
            return
        }
        for patch in revoked { Output.line("revoked \(name) \(version) patch \(patch.number)") }
    }
}

struct RolloutCommand: Command {
    static let spec = CommandSpec("rollout", summary: "Change the rollout percentage of an active patch",
                                  options: [.value("--app", "NAME", "the app"),
                                            .value("--app-version", "V", "the app version"),
                                            .value("--patch", "N", "the patch number"),
                                            .value("--percent", "PCT", "new rollout percentage, 0-100"),
                                            .flag("--json", "print JSON")] + Context.globalOptions)

    static func run(_ arguments: Arguments) throws(CLIError) {
        let name = try arguments.appName()
        let version = try arguments.appVersion()
        guard let number = try arguments.int("--patch", in: 1...Int(Int32.max)) else { throw .usage("--patch is required") }
        guard let percent = try arguments.int("--percent", in: 0...100) else { throw .usage("--percent is required") }
        let context = Context(arguments: arguments)
        let registry = try context.openRegistry()
        let patch: PatchRecord
        do { patch = try registry.setRollout(app: name, appVersion: version, number: number, percent: percent, actor: context.actor) } catch {
            throw error.cliError
        }
        if arguments.flag("--json") { Output.json(patch.json); return }
        Output.line("\(name) \(version) patch \(number) now rolls out to \(patch.rollout)% of devices")
    }
}

struct ListCommand: Command {
    static let spec = CommandSpec("list", summary: "List patches (the audit listing of what is live): digests, size, rollout, who and when",
                                  options: [.value("--app", "NAME", "only this app"),
                                            .flag("--active", "only active patches"),
                                            .flag("--json", "print JSON")] + Context.globalOptions)

    static func run(_ arguments: Arguments) throws(CLIError) {
        let name = try arguments.optionalAppName()
        let registry = try Context(arguments: arguments).openRegistry()
        let patches: [PatchRecord]
        do {
            if let name { _ = try registry.app(name) }
            patches = try registry.patches(app: name, appVersion: nil, activeOnly: arguments.flag("--active"))
        } catch { throw error.cliError }
        if arguments.flag("--json") {
            Output.json(.array(patches.map(\.json)))
            return
        }
        guard !patches.isEmpty else {
            Output.line(arguments.flag("--active") ? "no active patches" : "no patches")
            return
        }
        Output.line(table(["APP", "VERSION", "PATCH", "ROLLOUT", "STATE", "SIZE", "SHA256", "MD5", "PUBLISHED", "BY"], patches.map { p in
            [p.app.rawValue, p.appVersion.rawValue, String(p.number), "\(p.rollout)%", p.state.rawValue + (p.encrypted ? "+enc" : ""),
             String(p.plaintext.length), p.plaintext.sha256, p.plaintext.md5, p.publishedAt, p.publishedBy]
        }))
    }
}

struct AuditCommand: Command {
    static let spec = CommandSpec("audit", summary: "Show the audit log of every change; --verify checks its hash chain",
                                  options: [.value("--app", "NAME", "only this app's events"),
                                            .flag("--verify", "verify the hash chain (exit 1 if broken)"),
                                            .flag("--json", "print JSON")] + Context.globalOptions)

    static func run(_ arguments: Arguments) throws(CLIError) {
        let name = try arguments.optionalAppName()
        let registry = try Context(arguments: arguments).openRegistry()
        let events: [AuditEvent]
        var verification: AuditVerification?
        do {
            if let name { _ = try registry.app(name) }
            events = try registry.auditEvents(app: name)
            if arguments.flag("--verify") { verification = try registry.verifyAudit() }
        } catch { throw error.cliError }
        if arguments.flag("--json") {
            var out: [String: JSON] = ["events": .array(events.map(\.json))]
            switch verification {
            case .intact(let count, let head)?: out["chain"] = ["intact": true, "events": .int(Int64(count)), "head": .string(head)]
            case .broken(let seq, let reason)?: out["chain"] = ["intact": false, "seq": .int(seq), "reason": .string(reason)]
            case nil: break
            }
            Output.json(.object(out))
        } else {
            Output.line(table(["SEQ", "AT", "APP", "ACTOR", "ACTION", "DETAILS"], events.map { e in
                [String(e.seq), e.at, e.app, e.actor, e.action, e.details.canonicalString]
            }))
            switch verification {
            case .intact(let count, let head)?: Output.line("audit chain intact: \(count) events, head \(head)")
            case .broken(let seq, let reason)?: Output.line("audit chain BROKEN at event \(seq): \(reason)")
            case nil: break
            }
        }
        if case .broken(let seq, let reason)? = verification {
            throw .verificationFailed("audit chain broken at event \(seq): \(reason)")
        }
    }
}
