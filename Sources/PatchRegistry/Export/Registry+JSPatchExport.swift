import Foundation
import PatchCore

/// What `export --format jspatch` wrote and removed.
public struct JSPatchExportSummary: Sendable {
    public let packages: Int
    public let latestFiles: Int
    public let removed: Int
}

extension Registry {
    /// Writes the app's JSPatch Loader packages for static hosting, `DIR` being the app's
    /// `rootUrl`: `DIR/{appVersion}/v{N}.zip` for every listed patch, and `DIR/{appVersion}/latest`
    /// (`{"patch":N}`, as the server answers a device without an ID) for every version with a
    /// patch at 100 %. A static host cannot apply partial rollouts, so `latest` names only full
    /// ones. So that a revocation reaches a static host too, the `v{N}.zip` of every revoked patch
    /// and the `latest` of every version left with no full patch are deleted from `DIR`; nothing
    /// else is touched. Files are written atomically, packages before `latest`.
    @discardableResult
    public func exportJSPatch(app name: AppName, to directory: URL) throws(RegistryError) -> JSPatchExportSummary {
        // One read transaction: the packages and the revoked patches come from one state.
        try consistentRead { () throws -> JSPatchExportSummary in try writeJSPatchExport(app: name, to: directory) }
    }

    private func writeJSPatchExport(app name: AppName, to directory: URL) throws(RegistryError) -> JSPatchExportSummary {
        guard let packages = try jspatchPackages(app: name) else {
            throw .invalidInput("app \"\(name)\" has no JSPatch key; give it one with `patchctl apps jspatch \(name)`")
        }
        for package in packages {
            try AtomicFile.write(package.bytes, to: versionDirectory(directory, package.appVersion).appendingPathComponent(package.fileName))
        }
        let all = try patches(app: name, appVersion: nil, activeOnly: false)
        var latestFiles = 0
        var removed = 0
        for version in Set(all.map(\.appVersion)).sorted() {
            let latest = versionDirectory(directory, version).appendingPathComponent("latest")
            if let full = packages.last(where: { $0.appVersion == version && $0.rollout >= 100 }) {
                try AtomicFile.write(JSON.object(["patch": .int(Int64(full.number))]).canonicalBytes + [0x0A], to: latest)
                latestFiles += 1
            } else if try remove(latest) {
                removed += 1
            }
        }
        for patch in all where patch.state == .revoked {
            if try remove(versionDirectory(directory, patch.appVersion).appendingPathComponent("v\(patch.number).zip")) { removed += 1 }
        }
        return JSPatchExportSummary(packages: packages.count, latestFiles: latestFiles, removed: removed)
    }

    private func versionDirectory(_ directory: URL, _ version: AppVersion) -> URL {
        directory.appendingPathComponent(version.rawValue, isDirectory: true)
    }

    /// Removes a file if it is there; true when it was.
    private func remove(_ url: URL) throws(RegistryError) -> Bool {
        guard FileManager.default.fileExists(atPath: url.path) else { return false }
        do { try FileManager.default.removeItem(at: url) } catch { throw .io("cannot remove \(url.path): \(error.localizedDescription)") }
        return true
    }
}
