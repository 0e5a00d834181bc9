import Foundation
import PatchCheck
import PatchCore

/// The script check a patch passed (or was published past), as stored with it (`patch_checks`)
/// and shown by `list`, the console and the audit event of the release (issue 45).
public struct PatchCheckRecord: Sendable, Equatable {
    public enum Outcome: String, Sendable {
        case passed, warnings, failed
        /// The check could not run and `--skip-check` published the patch anyway.
        case unchecked
    }

    public var outcome: Outcome
    public var nativeChecked: Bool
    public var manifestSha256: String?
    /// What was found (nil: the check did not run).
    public var report: CheckReport?
    /// `--skip-check REASON`, when it was given.
    public var skipReason: String?
    /// Why the check could not run (`unchecked`).
    public var unavailable: String?
    public var checkedAt: String

    /// At most this many findings are kept with a patch; the count says how many there were.
    static let maxStoredFindings = 200

    init(report: CheckReport, skipReason: String?, now: Date) {
        switch report.outcome {
        case .passed: outcome = .passed
        case .warnings: outcome = .warnings
        case .failed: outcome = .failed
        }
        nativeChecked = report.nativeChecked
        manifestSha256 = report.manifestSha256
        var kept = report
        kept.findings = Array(report.findings.prefix(Self.maxStoredFindings))
        self.report = kept
        self.skipReason = skipReason
        checkedAt = TUFTime.format(now)
    }

    init(unavailable: String, skipReason: String, now: Date) {
        outcome = .unchecked
        nativeChecked = false
        self.unavailable = unavailable
        self.skipReason = skipReason
        checkedAt = TUFTime.format(now)
    }

    init(outcome: Outcome, nativeChecked: Bool, manifestSha256: String?, report: CheckReport?, skipReason: String?, unavailable: String?, checkedAt: String) {
        self.outcome = outcome
        self.nativeChecked = nativeChecked
        self.manifestSha256 = manifestSha256
        self.report = report
        self.skipReason = skipReason
        self.unavailable = unavailable
        self.checkedAt = checkedAt
    }

    /// What `list` shows in its CHECK column.
    public var label: String {
        switch outcome {
        case .passed: return nativeChecked ? "passed" : "passed (no manifest)"
        case .warnings:
            let count = report?.warnings.count ?? 0
            return "\(count) warning\(count == 1 ? "" : "s")"
        case .failed:
            let count = report?.errors.count ?? 0
            return "skipped: \(count) error\(count == 1 ? "" : "s")"
        case .unchecked: return "unchecked"
        }
    }

    public var json: JSON {
        var object: [String: JSON] = [
            "outcome": .string(outcome.rawValue), "native": .string(nativeChecked ? "checked" : "skipped"), "checkedAt": .string(checkedAt),
            "errors": .int(Int64(report?.errors.count ?? 0)), "warnings": .int(Int64(report?.warnings.count ?? 0)),
            "findings": .array(report?.findings.map(\.json) ?? []),
        ]
        if let manifestSha256 { object["manifestSha256"] = .string(manifestSha256) }
        if let skipReason { object["skipReason"] = .string(skipReason) }
        if let unavailable { object["unavailable"] = .string(unavailable) }
        return .object(object)
    }

    /// A listing's `check` read back (`patchctl list` over `--server`).
    public init?(json: JSON) {
        guard let outcome = json["outcome"]?.stringValue.flatMap(Outcome.init(rawValue:)), let checkedAt = json["checkedAt"]?.stringValue else { return nil }
        let findings = json["findings"]?.arrayValue?.compactMap(CheckFinding.init(json:)) ?? []
        let native = json["native"]?.stringValue == "checked"
        self.init(outcome: outcome, nativeChecked: native, manifestSha256: json["manifestSha256"]?.stringValue,
                  report: outcome == .unchecked ? nil : CheckReport(findings: findings, nativeChecked: native, manifestSha256: json["manifestSha256"]?.stringValue),
                  skipReason: json["skipReason"]?.stringValue, unavailable: json["unavailable"]?.stringValue, checkedAt: checkedAt)
    }

    /// What the release's audit event records: the outcome, and with `--skip-check` the reason
    /// and what was published past.
    var auditJSON: JSON {
        var object: [String: JSON] = [
            "outcome": .string(outcome.rawValue), "native": .string(nativeChecked ? "checked" : "skipped"),
            "errors": .int(Int64(report?.errors.count ?? 0)), "warnings": .int(Int64(report?.warnings.count ?? 0)),
        ]
        if let manifestSha256 { object["manifestSha256"] = .string(manifestSha256) }
        if let skipReason {
            object["skipReason"] = .string(skipReason)
            object["findings"] = .array(report?.findings.filter { $0.severity != .note }.map(\.json) ?? [])
        }
        if let unavailable { object["unavailable"] = .string(unavailable) }
        return .object(object)
    }
}

/// An app version's stored native manifest.
public struct StoredManifest: Sendable {
    public let appVersion: AppVersion
    public let bytes: [UInt8]
    public let sha256: String
    public let uploadedAt: String
    public let uploadedBy: String
}

extension Registry {
    /// Stores the native manifest of an app version (`patchctl apps manifest`), replacing the
    /// one it had, in one transaction with its `app.manifest` audit event; the one it has
    /// already changes nothing (`changed` false). Refused, nothing changed, when it is not a
    /// manifest or says it is for another version.
    public func setManifest(app name: AppName, appVersion: AppVersion, bytes: [UInt8], actor: Actor, now: Date = Date()) throws(RegistryError) -> JSON {
        let manifest: NativeManifest
        do { manifest = try NativeManifest(bytes: bytes) } catch { throw .invalidInput(error.description) }
        if let stated = manifest.appVersion, stated != appVersion.rawValue {
            throw .invalidInput("the manifest says it is for app version \(stated), not \(appVersion); nothing was stored")
        }
        let sha256 = Digest.sha256Hex(bytes)
        return try write { () throws -> JSON in
            _ = try self.app(name)
            let replaced = try db.query("SELECT sha256 FROM native_manifests WHERE app = ? AND app_version = ?",
                                        [.text(name.rawValue), .text(appVersion.rawValue)]) { $0.text(0) }.first
            var summary: [String: JSON] = [
                "app": .string(name.rawValue), "appVersion": .string(appVersion.rawValue), "sha256": .string(sha256),
                "classes": .int(Int64(manifest.classes.count)), "protocols": .int(Int64(manifest.protocols.count)),
                "knownClasses": .int(Int64(manifest.knownClasses.count)), "changed": .bool(replaced != sha256),
            ]
            // The same manifest again (a build phase run twice, `make run` again): nothing to record.
            guard replaced != sha256 else { return .object(summary) }
            try db.run("""
                INSERT INTO native_manifests(app, app_version, sha256, manifest, uploaded_at, uploaded_by) VALUES (?,?,?,?,?,?)
                ON CONFLICT(app, app_version) DO UPDATE SET sha256 = excluded.sha256, manifest = excluded.manifest,
                    uploaded_at = excluded.uploaded_at, uploaded_by = excluded.uploaded_by
                """, [.text(name.rawValue), .text(appVersion.rawValue), .text(sha256), .blob(bytes), .text(TUFTime.format(now)), .text(actor.name)])
            if let replaced { summary["replaced"] = .string(replaced) }
            var details = summary
            details["app"] = nil
            details["changed"] = nil
            _ = try AuditLog.append(db, app: name.rawValue, actor: actor, action: "app.manifest", details: .object(details), at: now)
            return .object(summary)
        }
    }

    /// The native manifest stored for an app version, or nil.
    public func manifest(app name: AppName, appVersion: AppVersion) throws(RegistryError) -> StoredManifest? {
        try read { () throws(StorageError) in
            try db.query("SELECT manifest, sha256, uploaded_at, uploaded_by FROM native_manifests WHERE app = ? AND app_version = ?",
                         [.text(name.rawValue), .text(appVersion.rawValue)]) {
                StoredManifest(appVersion: appVersion, bytes: $0.blob(0), sha256: $0.text(1), uploadedAt: $0.text(2), uploadedBy: $0.text(3))
            }.first
        }
    }

    /// The check alone (`patchctl check`, `POST /v1/apps/{app}/check`): what publishing
    /// `script` to `appVersion` would find, against its manifest when it has one. Changes nothing.
    public func checkScript(_ script: [UInt8], app name: AppName, appVersion: AppVersion?) throws(RegistryError) -> CheckReport {
        _ = try app(name)
        try Registry.checkBundleShape(script)
        let manifests = try appVersion.map { version throws(RegistryError) in try parsedManifests(app: name, versions: [version]) } ?? [(nil, nil)]
        do { return try scriptChecker.check(script, manifests: manifests)[0] } catch { throw .checkUnavailable(error.description) }
    }

    /// What a bundle must be before anything else looks at it: a publish and a check say the same.
    static func checkBundleShape(_ bundle: [UInt8]) throws(RegistryError) {
        guard !bundle.isEmpty else { throw .invalidInput("the bundle is empty") }
        guard bundle.count <= Registry.maxBundleSize else {
            throw .invalidInput("the bundle is \(bundle.count) bytes; the limit is \(Registry.maxBundleSize) bytes")
        }
        guard String(validating: bundle, as: UTF8.self) != nil else {
            throw .invalidInput("the bundle is not UTF-8 text; a JSPatch main.js is JavaScript source")
        }
    }

    /// The gate every release of a script passes (publish, promote, rollback), before its
    /// write transaction, so a script that runs for seconds holds no lock: the script runs
    /// once, and is read against each version's manifest. An error finding refuses the release
    /// (`checkFailed`) unless `skip` gives a reason; a check that cannot run refuses it too
    /// (`checkUnavailable`) unless `skip` does. The records go into the write with the patches.
    func checkBeforeRelease(_ script: [UInt8], app name: AppName, versions: [AppVersion], skip: String?, now: Date) throws(RegistryError) -> [AppVersion: PatchCheckRecord] {
        let skip = try Registry.skipReason(skip)
        let manifests = try parsedManifests(app: name, versions: versions)
        let reports: [CheckReport]
        do { reports = try scriptChecker.check(script, manifests: manifests) } catch {
            guard let skip else { throw .checkUnavailable(error.description) }
            return Dictionary(uniqueKeysWithValues: versions.map { ($0, PatchCheckRecord(unavailable: error.description, skipReason: skip, now: now)) })
        }
        var records: [AppVersion: PatchCheckRecord] = [:]
        for (version, report) in zip(versions, reports) {
            if report.outcome == .failed, skip == nil { throw .checkFailed(report, appVersion: version) }
            records[version] = PatchCheckRecord(report: report, skipReason: skip, now: now)
        }
        return records
    }

    /// `--skip-check REASON`: a reason someone can read later, held to release notes' rule.
    static func skipReason(_ reason: String?) throws(RegistryError) -> String? {
        guard let reason else { return nil }
        guard !reason.trimmingCharacters(in: .whitespaces).isEmpty else { throw .invalidInput("--skip-check needs a reason (it is audited)") }
        do { try ReadableText.check(reason, field: "skip-check reason", maxLength: maxReleaseNotes) } catch { throw .invalidInput(error.message) }
        return reason
    }

    private func parsedManifests(app name: AppName, versions: [AppVersion]) throws(RegistryError) -> [(manifest: NativeManifest?, sha256: String?)] {
        var parsed: [(manifest: NativeManifest?, sha256: String?)] = []
        for version in versions {
            guard let stored = try manifest(app: name, appVersion: version) else { parsed.append((nil, nil)); continue }
            // Stored only after it parsed: a row that no longer does is damage.
            do { parsed.append((try NativeManifest(bytes: stored.bytes), stored.sha256)) } catch {
                throw .internalError("the stored manifest of \(name) \(version) does not read: \(error)")
            }
        }
        return parsed
    }

    /// The check's row of a new patch, inside the release's write transaction.
    func insertCheck(_ record: PatchCheckRecord, app name: AppName, appVersion: AppVersion, number: Int) throws {
        try db.runInTransaction("""
            INSERT INTO patch_checks(app, app_version, number, outcome, native, manifest_sha256, report, skip_reason, checked_at)
            VALUES (?,?,?,?,?,?,?,?,?)
            """, [.text(name.rawValue), .text(appVersion.rawValue), .int(Int64(number)), .text(record.outcome.rawValue),
                  .text(record.nativeChecked ? "checked" : "skipped"), record.manifestSha256.map { .text($0) } ?? .null,
                  .text(String(decoding: (record.unavailable.map { ["unavailable": .string($0)] } ?? record.report?.json ?? [:]).canonicalBytes, as: UTF8.self)),
                  record.skipReason.map { .text($0) } ?? .null, .text(record.checkedAt)])
    }

    /// The checks of an app's patches, by app version and patch number.
    public func patchChecks(app name: AppName) throws(RegistryError) -> [String: PatchCheckRecord] {
        let rows: [(String, PatchCheckRecord)] = try read { () throws(StorageError) in
            try db.query("""
                SELECT app_version, number, outcome, native, manifest_sha256, report, skip_reason, checked_at FROM patch_checks WHERE app = ?
                """, [.text(name.rawValue)]) { s in
                let stored = try? JSONParser.parse(Array(s.text(5).utf8))
                let record = PatchCheckRecord(outcome: PatchCheckRecord.Outcome(rawValue: s.text(2)) ?? .unchecked, nativeChecked: s.text(3) == "checked",
                                              manifestSha256: s.optionalText(4), report: stored.flatMap(CheckReport.init(json:)),
                                              skipReason: s.optionalText(6), unavailable: stored?["unavailable"]?.stringValue, checkedAt: s.text(7))
                return ("\(s.text(0))/\(s.int(1))", record)
            }
        }
        return Dictionary(rows, uniquingKeysWith: { a, _ in a })
    }

    /// Patches as `list`, `GET /v1/apps/{app}/patches` and the console show them: each with
    /// the check it passed (`check`; absent for a patch from before the check).
    public func listing(_ patches: [PatchRecord]) throws(RegistryError) -> [JSON] {
        var checks: [AppName: [String: PatchCheckRecord]] = [:]
        for app in Set(patches.map(\.app)) { checks[app] = try patchChecks(app: app) }
        return patches.map { patch in
            var patch = patch
            patch.check = checks[patch.app]?["\(patch.appVersion.rawValue)/\(patch.number)"]
            return patch.json
        }
    }
}
