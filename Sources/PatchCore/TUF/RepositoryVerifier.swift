import Foundation

/// Where a repository's files come from: an exported directory, or a server.
public protocol RepositorySource {
    /// The bytes of `metadata/{name}`, nil when it does not exist; throws when it cannot be read.
    func metadata(_ name: String, maxLength: Int) throws(SourceError) -> [UInt8]?
    /// The bytes of `targets/{path}`, nil when it does not exist.
    func target(_ path: String, maxLength: Int) throws(SourceError) -> [UInt8]?
}

/// The source could not be read at all (as opposed to serving something that fails to verify).
public struct SourceError: Error, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// A static repository on disk, as `patchctl export` writes it.
public struct DirectorySource: RepositorySource {
    public let directory: URL

    public init(directory: URL) { self.directory = directory }

    public func metadata(_ name: String, maxLength: Int) throws(SourceError) -> [UInt8]? {
        try read(directory.appendingPathComponent("metadata").appendingPathComponent(name), maxLength: maxLength)
    }

    public func target(_ path: String, maxLength: Int) throws(SourceError) -> [UInt8]? {
        try read(directory.appendingPathComponent("targets").appendingPathComponent(path), maxLength: maxLength)
    }

    private func read(_ url: URL, maxLength: Int) throws(SourceError) -> [UInt8]? {
        guard let handle = FileHandle(forReadingAtPath: url.path) else {
            if FileManager.default.fileExists(atPath: url.path) { throw SourceError("cannot read \(url.path)") }
            return nil
        }
        defer { try? handle.close() }
        // Read one byte past the cap so an oversized file is reported, not silently cut.
        let data = (try? handle.read(upToCount: maxLength + 1)) ?? Data()
        return Array(data)
    }
}

/// The outcome for one target.
public struct TargetCheck: Sendable {
    public let path: String
    public let patch: Int?
    public let rollout: Int?
    public let length: Int
    public let encrypted: Bool
    /// Whether the plaintext was decrypted and checked against the signed digests.
    public let plaintextChecked: Bool
    public let problem: String?

    public var ok: Bool { problem == nil }
}

public struct VerificationReport: Sendable {
    public let rootVersion: Int64
    public let timestampVersion: Int64
    public let snapshotVersion: Int64
    public let targetsVersion: Int64
    public let timestampExpires: Date
    public let targets: [TargetCheck]

    public var ok: Bool { targets.allSatisfy(\.ok) }
}

public enum VerificationError: Error, CustomStringConvertible {
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
/// target. This is CI's signature check and the same workflow a device runs.
public enum RepositoryVerifier {
    public static func verify(source: some RepositorySource, trustedRoot: [UInt8], app: String? = nil,
                              contentKey: [UInt8]? = nil, now: Date = Date()) throws(VerificationError) -> VerificationReport {
        var trusted: TrustedMetadata
        do { trusted = try TrustedMetadata(trustedRoot: trustedRoot, referenceTime: now) } catch {
            throw .couldNotRun("the trusted root does not verify: \(error)")
        }
        do {
            // Spec 5.3: walk N+1.root.json until the first missing version.
            while let bytes = try fetch(source.metadata("\(trusted.root.body.version + 1).root.json", maxLength: TrustedMetadata.maxRootLength)) {
                try trusted.updateRoot(bytes)
            }
            guard let timestamp = try fetch(source.metadata("timestamp.json", maxLength: TrustedMetadata.maxTimestampLength)) else {
                throw VerificationError.rejected("timestamp.json is missing")
            }
            try trusted.updateTimestamp(timestamp)
            let snapshotName = "\(trusted.timestamp!.body.snapshot.version).snapshot.json"
            guard let snapshot = try fetch(source.metadata(snapshotName, maxLength: trusted.snapshotLengthLimit)) else {
                throw VerificationError.rejected("\(snapshotName) is missing")
            }
            try trusted.updateSnapshot(snapshot)
            let targetsName = "\(trusted.snapshot!.body.meta["targets.json"]!.version).targets.json"
            guard let targets = try fetch(source.metadata(targetsName, maxLength: trusted.targetsLengthLimit)) else {
                throw VerificationError.rejected("\(targetsName) is missing")
            }
            try trusted.updateTargets(targets)
        } catch let error as TUFError {
            throw .rejected(error.description)
        } catch let error as VerificationError {
            throw error
        } catch {
            throw .couldNotRun("\(error)")
        }

        var checks: [TargetCheck] = []
        for (path, file) in trusted.targets!.body.targets.sorted(by: { $0.key < $1.key }) {
            checks.append(try check(path: path, file: file, source: source, app: app, contentKey: contentKey))
        }
        return VerificationReport(rootVersion: trusted.root.body.version, timestampVersion: trusted.timestamp!.body.version,
                                  snapshotVersion: trusted.snapshot!.body.version, targetsVersion: trusted.targets!.body.version,
                                  timestampExpires: trusted.timestamp!.body.expires, targets: checks)
    }

    private static func fetch(_ result: @autoclosure () throws(SourceError) -> [UInt8]?) throws(VerificationError) -> [UInt8]? {
        do { return try result() } catch { throw .couldNotRun(error.message) }
    }

    /// Checks one target under every hash it is served as, then hotpatch's signed `custom`
    /// fields, and, given the content key, the decrypted plaintext.
    static func check(path: String, file: TargetFile, source: some RepositorySource, app: String?, contentKey: [UInt8]?) throws(VerificationError) -> TargetCheck {
        let info = PatchTargetInfo(path: path, file: file)
        func result(_ problem: String?, plaintextChecked: Bool = false) -> TargetCheck {
            TargetCheck(path: path, patch: info?.patch, rollout: info?.rollout, length: file.length,
                        encrypted: info?.encryption != nil, plaintextChecked: plaintextChecked, problem: problem)
        }
        guard let info else { return result("target entry is not a hotpatch patch (path or custom fields malformed)") }
        var served: [UInt8] = []
        for hash in file.hashes.values.sorted() {
            let name = info.servedPath(hash: hash)
            guard let bytes = try fetch(source.target(name, maxLength: file.length)) else { return result("\(name) is missing") }
            do { try file.verify(bytes, path: path) } catch { return result(error.description) }
            served = bytes
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
        return result(nil, plaintextChecked: true)
    }
}

/// hotpatch's reading of one target entry: path `{appVersion}/{patch}/main.js` and the
/// signed `custom` object (patch, rollout, published, plaintext, encryption).
public struct PatchTargetInfo: Sendable, Equatable {
    public struct Encryption: Sendable, Equatable {
        public let algorithm: String
        public let keyID: String
    }

    public let path: String
    public let appVersion: String
    public let patch: Int
    public let rollout: Int
    public let published: String
    public let plaintext: BundleDigests
    public let encryption: Encryption?

    public init?(path: String, file: TargetFile) {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[2] == "main.js", let version = try? AppVersion(String(parts[0])),
            let custom = file.custom, let patch = custom["patch"]?.intValue, String(patch) == parts[1], patch >= 1,
            let rollout = custom["rollout"]?.intValue, (0...100).contains(rollout),
            let published = custom["published"]?.stringValue,
            let plain = custom["plaintext"], let length = plain["length"]?.intValue, length >= 0,
            let sha256 = plain["sha256"]?.stringValue, let md5 = plain["md5"]?.stringValue else { return nil }
        if let encryption = custom["encryption"] {
            guard let alg = encryption["alg"]?.stringValue, alg == BundleCipher.algorithm,
                let keyID = encryption["keyid"]?.stringValue else { return nil }
            self.encryption = Encryption(algorithm: alg, keyID: keyID)
        } else {
            self.encryption = nil
        }
        self.path = path
        self.appVersion = version.rawValue
        self.patch = Int(patch)
        self.rollout = Int(rollout)
        self.published = published
        self.plaintext = BundleDigests(length: Int(length), sha256: sha256, md5: md5)
    }

    /// `{appVersion}/{patch}/{hash}.main.js`: where the bytes are served under one hash.
    public func servedPath(hash: String) -> String { "\(appVersion)/\(patch)/\(hash).main.js" }
}
