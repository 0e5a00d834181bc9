import Foundation

/// Runs the independent tools the JSPatch tests compare against (openssl, unzip, curl).
enum Tool {
    struct Result {
        let status: Int32
        let stdout: [UInt8]
        let stderr: String
        var text: String { String(decoding: stdout, as: UTF8.self) }
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static func run(_ arguments: [String], input: [UInt8]? = nil, environment: [String: String]? = nil) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        if let environment { process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new } }
        let stdout = Pipe(), stderr = Pipe(), stdin = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        process.standardInput = stdin
        try process.run()
        if let input { stdin.fileHandleForWriting.write(Data(input)) }
        try stdin.fileHandleForWriting.close()
        let out = stdout.fileHandleForReading.readDataToEndOfFile()
        let err = stderr.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(status: process.terminationStatus, stdout: Array(out), stderr: String(decoding: err, as: UTF8.self))
    }

    /// Runs a tool that must succeed and returns its standard output.
    @discardableResult
    static func check(_ arguments: [String], input: [UInt8]? = nil) throws -> [UInt8] {
        let result = try run(arguments, input: input)
        guard result.status == 0 else { throw Failure(description: "\(arguments.joined(separator: " ")) exited \(result.status): \(result.stderr)") }
        return result.stdout
    }
}

/// A temporary directory removed when the value is released.
final class TempDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("jspatch-test-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    @discardableResult
    func write(_ name: String, _ bytes: [UInt8]) throws -> String {
        let path = path(name)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    func read(_ name: String) throws -> [UInt8] { Array(try Data(contentsOf: URL(fileURLWithPath: path(name)))) }
}

/// What an independent reader sees in a JSPatch package: entry names in order (Info-ZIP's
/// `unzip -Z1`), each entry's bytes (`unzip -p`), and what the key recovers to under the public key.
struct UnpackedPackage {
    let entries: [String]
    let scriptZip: [UInt8]
    let key: [UInt8]
    let scriptEntries: [String]
    let mainJS: [UInt8]
    /// `openssl pkeyutl -verifyrecover -pubin -pkeyopt rsa_padding_mode:pkcs1` of `key`.
    let recovered: String

    init(_ package: [UInt8], publicKeyPEM: String, in directory: TempDirectory) throws {
        let name = "package-\(UUID().uuidString).zip"
        let path = try directory.write(name, package)
        entries = String(decoding: try Tool.check(["unzip", "-Z1", path]), as: UTF8.self).split(separator: "\n").map(String.init)
        scriptZip = try Tool.check(["unzip", "-p", path, "script.zip"])
        key = try Tool.check(["unzip", "-p", path, "key"])
        let scriptPath = try directory.write(name + ".script.zip", scriptZip)
        scriptEntries = String(decoding: try Tool.check(["unzip", "-Z1", scriptPath]), as: UTF8.self).split(separator: "\n").map(String.init)
        mainJS = try Tool.check(["unzip", "-p", scriptPath, "main.js"])
        let publicPath = try directory.write(name + ".pub.pem", Array(publicKeyPEM.utf8))
        recovered = String(decoding: try Tool.check(["openssl", "pkeyutl", "-verifyrecover", "-pubin", "-inkey", publicPath,
                                                     "-pkeyopt", "rsa_padding_mode:pkcs1"], input: key), as: UTF8.self)
    }
}
