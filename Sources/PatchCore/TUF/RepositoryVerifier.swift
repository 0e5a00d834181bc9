import Foundation

/// The outcome for one target.
public struct TargetCheck: Sendable {
    public let path: String
    /// The targets role that lists it: `targets`, or a delegated role.
    public let role: String
    public let patch: Int?
    public let rollout: Int?
    public let length: Int
    public let encrypted: Bool
    /// Whether the plaintext was decrypted and checked against the signed digests.
    public let plaintextChecked: Bool
    public let problem: String?
    /// The app version its path names.
    public var appVersion: String? = nil
    /// The verified plaintext, when the caller asked to keep it (`verify --check` checks it).
    public var script: [UInt8]? = nil

    public var ok: Bool { problem == nil }
}

public struct VerificationReport: Sendable {
    public let rootVersion: Int64
    public let timestampVersion: Int64
    public let snapshotVersion: Int64
    public let targetsVersion: Int64
    /// The delegated roles the targets search loaded, by name, and their versions.
    public let delegatedVersions: [String: Int64]
    public let timestampExpires: Date
    public let targets: [TargetCheck]

    public var ok: Bool { targets.allSatisfy(\.ok) }
}

public enum VerificationError: Error, Equatable, CustomStringConvertible {
    /// The repository was read and is not trustworthy.
    case rejected(String)
    /// The repository could not be read.
    case couldNotRun(String)

    public var description: String {
        switch self {
        case .rejected(let m): return "verification failed: \(m)"
        case .couldNotRun(let m): return "could not verify: \(m)"
        }
    }
}

/// Walks a repository as a TUF client would, from a trusted root, and checks every listed
/// target. This is CI's signature check, and it is the device's workflow: the same `Updater`
/// with no cache, so a rule or a cap fixed there holds here too.
public enum RepositoryVerifier {
    /// `keepScripts`: each target's verified plaintext stays in the report (`TargetCheck.script`).
    public static func verify(fetcher: any RepositoryFetcher, trustedRoot: [UInt8], app: String? = nil,
                              contentKey: [UInt8]? = nil, keepScripts: Bool = false, now: Date = Date()) async throws(VerificationError) -> VerificationReport {
        do { _ = try TrustedMetadata(trustedRoot: trustedRoot, referenceTime: now) } catch {
            throw .couldNotRun("the trusted root does not verify: \(error)")
        }
        let updater = Updater(fetcher: fetcher, pinnedRoot: trustedRoot)
        var trusted: TrustedMetadata
        do { trusted = try await updater.refresh(now: now) } catch { throw verificationError(error) }
        let listing: TargetListing
        do { listing = try await updater.listTargets(in: &trusted) } catch { throw verificationError(error) }
        // refresh() returns only what checkComplete() passed: every role is there.
        guard let timestamp = trusted.timestamp, let snapshot = trusted.snapshot, let targets = trusted.targets else {
            throw .rejected("incomplete metadata")
        }
        var checks: [TargetCheck] = []
        for target in listing.found {
            checks.append(try await check(target, updater: updater, app: app, contentKey: contentKey, keepScript: keepScripts))
        }
        // A role signing a path it is not trusted for is a repository that does not verify,
        // though no client would install what it lists.
        for stray in listing.unreachable {
            checks.append(TargetCheck(path: stray.path, role: stray.role, patch: nil, rollout: nil, length: stray.file.length, encrypted: false,
                                      plaintextChecked: false, problem: "listed by delegated role \(stray.role.debugSanitized), which the targets search does not reach for this path (outside its paths, or after a terminating or earlier role)"))
        }
        return VerificationReport(rootVersion: trusted.root.body.version, timestampVersion: timestamp.body.version,
                                  snapshotVersion: snapshot.body.version, targetsVersion: targets.body.version,
                                  delegatedVersions: trusted.delegatedTargets.mapValues(\.body.version),
                                  timestampExpires: timestamp.body.expires, targets: checks)
    }

    /// What the repository served is `.rejected`; a repository that could not be read is `.couldNotRun`.
    static func verificationError(_ error: UpdateError) -> VerificationError {
        switch error {
        case .verification(let error): return .rejected(error.description)
        case .tooLarge: return .rejected(error.description)
        case .status(404, let file, _, _), .status(403, let file, _, _): return .rejected("\(file.name) is missing")
        case .status, .fetch, .throttled, .storage: return .couldNotRun(error.description)
        }
    }

    /// Checks one target under every hash it is served as, then hotpatch's signed `custom`
    /// fields, and, given the content key, the decrypted plaintext.
    static func check(_ target: FoundTarget, updater: Updater, app: String?, contentKey: [UInt8]?, keepScript: Bool = false) async throws(VerificationError) -> TargetCheck {
        let (path, file) = (target.path, target.file)
        let info = PatchTargetInfo(path: path, file: file)
        func result(_ problem: String?, plaintextChecked: Bool = false, script: [UInt8]? = nil) -> TargetCheck {
            var check = TargetCheck(path: path, role: target.role, patch: info?.patch, rollout: info?.rollout, length: file.length,
                                    encrypted: info?.encryption != nil, plaintextChecked: plaintextChecked, problem: problem)
            check.appVersion = info?.appVersion
            check.script = keepScript ? script : nil
            return check
        }
        guard let info else { return result("target entry is not a hotpatch patch (path or custom fields malformed)") }
        var served: [UInt8] = []
        for hash in file.hashes.values.sorted() {
            do { served = try await updater.downloadTarget(file, path: path, servedAs: info.servedPath(hash: hash)).body } catch {
                switch verificationError(error) {
                case .rejected(let problem): return result(problem)
                case .couldNotRun(let message): throw .couldNotRun(message)
                }
            }
        }
        var plaintext = served
        if info.encryption != nil {
            guard let contentKey, let app else { return result(nil) }
            guard BundleCipher.keyID(contentKey) == info.encryption?.keyID else { return result("encrypted with a different content key than the one given") }
            do { plaintext = try BundleCipher.open(served, key: contentKey, app: app, appVersion: info.appVersion, patch: info.patch) } catch {
                return result(error.description)
            }
        }
        let digests = BundleDigests(of: plaintext)
        guard digests == info.plaintext else { return result("plaintext does not match the signed length/sha256/md5", plaintextChecked: true) }
        return result(nil, plaintextChecked: true, script: plaintext)
    }
}
